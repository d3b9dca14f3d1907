/**
 * Herald's Firestore schema, as plain data: the collections, every query the stores make,
 * the fields exempt from automatic indexing and the TTL fields. The stores
 * (shared/adapters/firestore-*.ts) build their queries and documents from it; the Pulumi
 * program (infra/index.ts) declares the composite indexes, field overrides and TTL policies
 * from the same lists. No imports: infra and the adapters both stand on it.
 */

export const COLLECTIONS = {
  destinations: 'destinations',
  deliveries: 'deliveries',
  /** First attempts that ended DELIVERED, committed many to a document (adapters/firestore-delivery-groups.ts). */
  deliveryGroups: 'delivery-groups',
  rates: 'rates',
  /** Counters of sparse destinations, many to a document (adapters/firestore-counters.ts). */
  sharedRates: 'rates-shared',
  rateControl: 'rate-control',
  replays: 'replays',
  intake: 'intake',
  locks: 'locks',
  destinationChanges: 'destination-changes',
  accounts: 'accounts',
  accountKeys: 'account-keys',
  accountTombstones: 'account-tombstones',
  publishQuotas: 'publish-quotas',
  eventTypes: 'event-types',
  portalLinks: 'portal-links',
  portalSessions: 'portal-sessions',
  portalMarks: 'portal-marks',
} as const;

/**
 * Every query Herald makes, as data: the store builds its queries from these,
 * and the Pulumi program derives the composite indexes from the same list.
 */
export const FIRESTORE_QUERIES = {
  duePending: { collection: COLLECTIONS.deliveries, equality: ['status'], orderBy: 'availableAt' },
  expiredClaims: { collection: COLLECTIONS.deliveries, equality: ['status'], orderBy: 'claimedAt' },
  // Rate control brings a destination's deferred deliveries forward when its turns go unused.
  rateDeferred: { collection: COLLECTIONS.deliveries, equality: ['destinationId', 'status', 'rateDeferred'], orderBy: 'availableAt' },
  byDestination: { collection: COLLECTIONS.deliveries, equality: ['destinationId'], orderBy: 'id' },
  byDestinationAndStatus: { collection: COLLECTIONS.deliveries, equality: ['destinationId', 'status'], orderBy: 'id' },
  // The delivery log (GET …/destinations/{id}/deliveries): newest published first, by any of its filters.
  log: { collection: COLLECTIONS.deliveries, equality: ['destinationId'], orderBy: 'publishedAt', direction: 'desc' },
  logByStatus: { collection: COLLECTIONS.deliveries, equality: ['destinationId', 'status'], orderBy: 'publishedAt', direction: 'desc' },
  logByType: { collection: COLLECTIONS.deliveries, equality: ['destinationId', 'eventType'], orderBy: 'publishedAt', direction: 'desc' },
  logByStatusAndType: { collection: COLLECTIONS.deliveries, equality: ['destinationId', 'status', 'eventType'], orderBy: 'publishedAt', direction: 'desc' },
  logByEventId: { collection: COLLECTIONS.deliveries, equality: ['destinationId', 'eventId'], orderBy: 'publishedAt', direction: 'desc' },
  // The delivery log's grouped members: a destination's groups, by their oldest member, newest first.
  groupLog: { collection: COLLECTIONS.deliveryGroups, contains: 'destinations', equality: [], orderBy: 'oldest', direction: 'desc' },
  rateWindow: { collection: COLLECTIONS.rates, equality: ['destinationId'], orderBy: 'bucketStart' },
  // The head of a destination's delivery log, kept with its counters: the newest buckets first.
  logHead: { collection: COLLECTIONS.rates, equality: ['destinationId'], orderBy: 'bucketStart', direction: 'desc' },
  // The same two in the shared counter documents, which list their destinations in an array.
  sharedRateWindow: { collection: COLLECTIONS.sharedRates, contains: 'destinations', equality: [], orderBy: 'bucketStart' },
  sharedLogHead: { collection: COLLECTIONS.sharedRates, contains: 'destinations', equality: [], orderBy: 'bucketStart', direction: 'desc' },
  // Every shared counter document since a time (the suspension check; one field: the automatic index).
  sharedRatesSince: { collection: COLLECTIONS.sharedRates, equality: [], orderBy: 'bucketStart' },
  // GET /admin/replays: newest first (one field: Firestore's automatic index serves it).
  recentReplays: { collection: COLLECTIONS.replays, equality: [], orderBy: 'createdAt', direction: 'desc' },
  // GET /admin/accounts/{id}/replays: one account's, newest first.
  accountReplays: { collection: COLLECTIONS.replays, equality: ['request.account'], orderBy: 'createdAt', direction: 'desc' },
  // POST /admin/replays refuses to start a replay while another runs.
  runningReplays: { collection: COLLECTIONS.replays, equality: ['status'], orderBy: 'createdAt' },
  // The reconciler: intake batches past their grace, oldest first (one field: the automatic index).
  dueIntake: { collection: COLLECTIONS.intake, equality: [], orderBy: 'acceptedAt' },
  // The reconciler's tally of a round's records (domain/intake-tally.ts): a range of intake ids,
  // summing each record's id hash; and one batch's, for some destinations. A sum aggregation
  // reads the summed field from the index its filters use.
  intakeTally: { collection: COLLECTIONS.deliveries, equality: ['intake'], orderBy: 'intakeTally' },
  intakeTallyByDestination: { collection: COLLECTIONS.deliveries, equality: ['intake', 'destinationId'], orderBy: 'intakeTally' },
  // The reconciler: DEAD records whose dead letter is still owed (one field: the automatic index).
  owedDeadLetters: { collection: COLLECTIONS.deliveries, equality: [], orderBy: 'deadLetterDueAt' },
  // Each instance's destination directory: registry changes since it last looked (one field: the automatic index).
  destinationChanges: { collection: COLLECTIONS.destinationChanges, equality: [], orderBy: 'at' },
  // The scheduled purge: deleted accounts whose data may not all be gone yet, oldest first.
  // (It deletes the rest by document-id ranges, `<account>_…`, which need no index.)
  pendingPurges: { collection: COLLECTIONS.accountTombstones, equality: ['purge'], orderBy: 'deletedAt' },
  // GET /admin/accounts/{id}/portal-links and …/portal-sessions: the account's newest, live ones among them.
  accountPortalLinks: { collection: COLLECTIONS.portalLinks, equality: ['account'], orderBy: 'createdAt', direction: 'desc' },
  accountPortalSessions: { collection: COLLECTIONS.portalSessions, equality: ['account'], orderBy: 'createdAt', direction: 'desc' },
} as const satisfies Record<string, { collection: string; contains?: string; equality: readonly string[]; orderBy: string; direction?: 'asc' | 'desc' }>;

/**
 * Fields no query selects by, as data: the Pulumi program exempts them from Firestore's
 * automatic indexing (a group's members are large maps in an array; indexing each would cost
 * storage and write latency for nothing).
 */
export const FIRESTORE_UNINDEXED_FIELDS = [{ collection: COLLECTIONS.deliveryGroups, field: 'members' }] as const;

/**
 * Timestamp fields after which Firestore's TTL policy deletes a document, as data: the
 * stores write them, and the Pulumi program declares one TTL policy for each.
 */
export const FIRESTORE_TTL_FIELDS = {
  rates: { collection: COLLECTIONS.rates, field: 'expireAt' },
  sharedRates: { collection: COLLECTIONS.sharedRates, field: 'expireAt' },
  destinationChanges: { collection: COLLECTIONS.destinationChanges, field: 'expireAt' },
  // A portal link or session is deleted once it has expired; an account's mark once every session it ended has.
  portalLinks: { collection: COLLECTIONS.portalLinks, field: 'expireAt' },
  portalSessions: { collection: COLLECTIONS.portalSessions, field: 'expireAt' },
  portalMarks: { collection: COLLECTIONS.portalMarks, field: 'expireAt' },
  // A settled delivery, its retention after it settled (domain/delivery-retention.ts); never one that holds work.
  deliveries: { collection: COLLECTIONS.deliveries, field: 'expireAt' },
  // A group when its last member's retention ends.
  deliveryGroups: { collection: COLLECTIONS.deliveryGroups, field: 'expireAt' },
} as const satisfies Record<string, { collection: string; field: string }>;
