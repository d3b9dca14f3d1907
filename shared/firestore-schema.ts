/**
 * Herald's Firestore schema, as plain data: the collections, every query the stores make,
 * the fields exempt from automatic indexing and the TTL fields. The stores
 * (shared/adapters/firestore-*.ts) build their queries and documents from it; the Pulumi
 * program (infra/index.ts) declares the composite indexes, field overrides and TTL policies
 * from the same lists. No imports: infra and the adapters both stand on it.
 */

export const COLLECTIONS = {
  destinations: 'destinations',
  /** `<account>`: how many destinations the account has (its quota check: one read, whatever the registry holds). */
  destinationCounts: 'destination-counts',
  deliveries: 'deliveries',
  /** First attempts that ended DELIVERED, committed many to a document (adapters/firestore/deliveries/delivery-groups.ts). */
  deliveryGroups: 'delivery-groups',
  rates: 'rates',
  /** Counters of sparse destinations, many to a document (adapters/firestore/counters.ts). */
  sharedRates: 'rates-shared',
  /** Each destination's counters folded (domain/stats/rate-rollup.ts), and the suspension check's cursor (`~check`). */
  rateRollups: 'rates-rollup',
  rateControl: 'rate-control',
  replays: 'replays',
  intake: 'intake',
  /** `<ten minutes of acceptance>~<random>`: the ids of batches a commit removed, counted (adapters/firestore/intake.ts). */
  intakeRemoved: 'intake-removed',
  /** `<delivery id>`: a record of a never-journaled intake, counted by the batch named (domain/intake/intake-ownership.ts). */
  intakeAdopted: 'intake-adopted',
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
  /** `<lane topic>`: when a sender last saw the lane behind (domain/intake/lane-backlog.ts). */
  laneMarks: 'lane-marks',
  /** `<destination>~<key hash>`: an ordered key's sequence (domain/modes/ordering.ts). */
  orderedKeys: 'ordered-keys',
  /** `<account>_<day>~<writer>`: one writer's usage counts of an account's UTC day (adapters/firestore/usage/usage-docs.ts). */
  usage: 'usage',
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
  // The replays running, and those queued for their turn (oldest first): one replay runs at a time.
  runningReplays: { collection: COLLECTIONS.replays, equality: ['status'], orderBy: 'createdAt' },
  // The reconciler: intake batches past their grace, oldest first (one field: the automatic index).
  dueIntake: { collection: COLLECTIONS.intake, equality: [], orderBy: 'acceptedAt' },
  // The reconciler's rare path: batches removed that were accepted in ten given minutes (one field: the automatic index).
  removedIntake: { collection: COLLECTIONS.intakeRemoved, equality: ['bucket'], orderBy: 'bucket' },
  // The reconciler's tally of a round's records (domain/intake/intake-tally.ts): a range of intake ids,
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
  // An ordered destination's held keys (one field, set only while held: the automatic index).
  blockedKeys: { collection: COLLECTIONS.orderedKeys, equality: ['blockedIn'], orderBy: 'blockedIn' },
  // Keys whose head has not moved for a while (one field, set only while places wait: the automatic index).
  stalledKeys: { collection: COLLECTIONS.orderedKeys, equality: [], orderBy: 'workSince' },
  // An ordered key's records waiting for a place again (one field, set only while they wait).
  orderAgain: { collection: COLLECTIONS.deliveries, equality: ['orderAgain'], orderBy: 'orderAgain' },
  // The default account's destinations, whose ids carry no account prefix (one field, on its documents only).
  defaultAccountDestinations: { collection: COLLECTIONS.destinations, equality: ['defaultAccount'], orderBy: 'defaultAccount' },
  // GET /admin/accounts/{id}/usage: one account's days; the console's usage page: every account's (one field: the automatic index).
  accountUsageDays: { collection: COLLECTIONS.usage, equality: ['account'], orderBy: 'day' },
  usageDays: { collection: COLLECTIONS.usage, equality: [], orderBy: 'day' },
} as const satisfies Record<string, { collection: string; contains?: string; equality: readonly string[]; orderBy: string; direction?: 'asc' | 'desc' }>;

/**
 * Fields no single-field index serves a query for, as data: the Pulumi program exempts them
 * from Firestore's automatic indexing. Every record and group is kept for the whole retention,
 * and an indexed scalar costs two index entries (ascending and descending) of ~130 bytes each,
 * the document's name included: on a delivered record that is most of what it stores. Some are
 * in no query at all; some only in queries with a composite index of their own (FIRESTORE_QUERIES:
 * the log's filters, the reconciler's tally), which does not need the field's own index. Kept
 * indexed: `destinationId` and `status`, which the account's counts filter by equality alone
 * (index merging), and every field a one-field query orders by (test/unit/firestore-schema.test.ts
 * checks both).
 */
export const FIRESTORE_UNINDEXED_FIELDS = [
  // A group's members are large maps in an array, and the fields they share one more map.
  { collection: COLLECTIONS.deliveryGroups, field: 'members' },
  { collection: COLLECTIONS.deliveryGroups, field: 'common' },
  // The members, gzip: bytes are indexed (their first 1,500) unless exempt.
  { collection: COLLECTIONS.deliveryGroups, field: 'packed' },
  // Read with the group, never selected by (erasure goes by document-id range).
  { collection: COLLECTIONS.deliveryGroups, field: 'account' },
  { collection: COLLECTIONS.deliveryGroups, field: 'newest' },
  { collection: COLLECTIONS.deliveryGroups, field: 'committedAt' },
  // The intake journal's events, one bytes field (indexed by their first 1,500 bytes unless exempt), and their number; `events`, as batches held them before.
  { collection: COLLECTIONS.intake, field: 'packed' },
  { collection: COLLECTIONS.intake, field: 'count' },
  { collection: COLLECTIONS.intake, field: 'events' },
  // The batched destinations that took events by reference, and their places: read with the batch.
  { collection: COLLECTIONS.intake, field: 'refs' },
  // Removed batch ids, looked up by their ten minutes (`bucket`); an adopted record's batch, read by document id.
  { collection: COLLECTIONS.intakeRemoved, field: 'ids' },
  { collection: COLLECTIONS.intakeAdopted, field: 'by' },
  // Delivery records: shown, never selected by.
  { collection: COLLECTIONS.deliveries, field: 'eventSource' },
  { collection: COLLECTIONS.deliveries, field: 'attempts' },
  { collection: COLLECTIONS.deliveries, field: 'throttled' },
  { collection: COLLECTIONS.deliveries, field: 'reason' },
  { collection: COLLECTIONS.deliveries, field: 'lastError' },
  { collection: COLLECTIONS.deliveries, field: 'replays' },
  { collection: COLLECTIONS.deliveries, field: 'batch' },
  { collection: COLLECTIONS.deliveries, field: 'order' },
  { collection: COLLECTIONS.deliveries, field: 'groupCopies' },
  // Delivery records: selected by only beside destinationId (or intake), through composite indexes.
  { collection: COLLECTIONS.deliveries, field: 'id' },
  { collection: COLLECTIONS.deliveries, field: 'eventId' },
  { collection: COLLECTIONS.deliveries, field: 'eventType' },
  { collection: COLLECTIONS.deliveries, field: 'intakeTally' },
] as const;

/** Whether Firestore keeps no single-field index entries for `field` of `collection` (or, a map's subfield, for the map), as Herald deploys it. */
export function isIndexExempt(collection: string, field: string): boolean {
  const exempt = [...FIRESTORE_UNINDEXED_FIELDS, ...FIRESTORE_INCREASING_FIELDS, ...Object.values(FIRESTORE_TTL_FIELDS)];
  return exempt.some((f) => f.collection === collection && (field === f.field || field.startsWith(`${f.field}.`)));
}

/**
 * Fields whose values only grow (times, time-ordered ids) in collections written fast, exempt
 * from Firestore's automatic single-field indexes: new values all land at the end of one index
 * range, which Firestore documents as a hotspot past about 500 writes a second per collection.
 * Each is used by no query that needs its single-field index (checked by analysis: the emulator
 * enforces no index). A composite index on one of them is unaffected, and spread by its leading
 * equality field. A map's exemption covers its subfields.
 *
 * Kept indexed although they grow, because a query filters or orders on them alone:
 * deliveries.deadLetterDueAt (owedDeadLetters; DEAD records only, few), intake.acceptedAt
 * (dueIntake; a batch holds up to 500 events), destination-changes.at (destinationChanges; the
 * registry's write rate), replays.createdAt (recentReplays), rates-shared.bucketStart
 * (sharedRatesSince) and rates.bucketStart (the suspension check's range over recent counters).
 */
export const FIRESTORE_INCREASING_FIELDS = [
  // Delivery records: one or more writes per event and destination, the busiest collection.
  // The log and the pump query these with destinationId or status first (composite indexes).
  { collection: COLLECTIONS.deliveries, field: 'publishedAt', why: 'when the event was published: the intake clock' },
  { collection: COLLECTIONS.deliveries, field: 'availableAt', why: 'when a PENDING record is due: now plus a backoff or a turn' },
  { collection: COLLECTIONS.deliveries, field: 'claimedAt', why: 'when the pump or deliver claimed the record: now' },
  { collection: COLLECTIONS.deliveries, field: 'firstAttemptAt', why: 'an attempt time' },
  { collection: COLLECTIONS.deliveries, field: 'lastAttemptAt', why: 'an attempt time' },
  { collection: COLLECTIONS.deliveries, field: 'deliveredAt', why: 'an attempt time' },
  { collection: COLLECTIONS.deliveries, field: 'recoveredAt', why: 'when the reconciler created the record' },
  { collection: COLLECTIONS.deliveries, field: 'duplicates', why: 'its lastAt: when a duplicate push came' },
  { collection: COLLECTIONS.deliveries, field: 'attemptLog', why: 'each attempt with its time' },
  { collection: COLLECTIONS.deliveries, field: 'event', why: 'the event, with its time attribute (and its body: large)' },
  // The reconciler's tallies range over intake ids with the tally field summed: the composite (intake, intakeTally).
  { collection: COLLECTIONS.deliveries, field: 'intake', why: 'intake batch ids start with the acceptance time (domain/intake/intake.ts intakeBatchId)' },
  // Queried with `destinations` array-contains first (groupLog: a composite index).
  { collection: COLLECTIONS.deliveryGroups, field: 'oldest', why: 'the publish time of the oldest member' },
  // Rate control: read and written by document id only, about a write a second per busy destination.
  { collection: COLLECTIONS.rateControl, field: 'state', why: 'judgedThrough and holdUntil: seconds' },
  { collection: COLLECTIONS.rateControl, field: 'seconds', why: 'keyed by epoch second: a new field each second' },
  { collection: COLLECTIONS.rateControl, field: 'holders', why: 'the lease times of each sender' },
  { collection: COLLECTIONS.rateControl, field: 'grids', why: 'the start time of each grid' },
  { collection: COLLECTIONS.rateControl, field: 'deferCursor', why: 'a time' },
  { collection: COLLECTIONS.rateControl, field: 'deferredReportedAt', why: 'a time' },
  { collection: COLLECTIONS.rateControl, field: 'advancedThrough', why: 'a time' },
  // Counter documents: each writer's last flush (adapters/firestore/counters.ts MARK_FIELD), read by document id only after a failed write.
  { collection: COLLECTIONS.rates, field: 'flushes', why: "each writer's flush number: a higher one each flush" },
  { collection: COLLECTIONS.sharedRates, field: 'flushes', why: "the writer's flush number: a higher one each flush" },
  // Counter rollups: read by document id only, a write per active destination per suspension check.
  { collection: COLLECTIONS.rateRollups, field: 'foldedThrough', why: 'the last minute folded' },
  { collection: COLLECTIONS.rateRollups, field: 'm', why: 'keyed by bucket start: new keys each minute' },
  { collection: COLLECTIONS.rateRollups, field: 'c', why: 'keyed by bucket start: new keys as minutes coarsen' },
  // Usage documents: read by account and day only.
  { collection: COLLECTIONS.usage, field: 'flushes', why: "each writer's flush number: a higher one each flush" },
] as const satisfies readonly { collection: string; field: string; why: string }[];

/**
 * Timestamp fields after which Firestore's TTL policy deletes a document, as data: the
 * stores write them, and the Pulumi program declares one TTL policy for each.
 */
export const FIRESTORE_TTL_FIELDS = {
  rates: { collection: COLLECTIONS.rates, field: 'expireAt' },
  sharedRates: { collection: COLLECTIONS.sharedRates, field: 'expireAt' },
  // A rollup a day after the last bucket folded into it: by then it holds nothing a read asks for.
  rateRollups: { collection: COLLECTIONS.rateRollups, field: 'expireAt' },
  destinationChanges: { collection: COLLECTIONS.destinationChanges, field: 'expireAt' },
  // A portal link or session is deleted once it has expired; an account's mark once every session it ended has.
  portalLinks: { collection: COLLECTIONS.portalLinks, field: 'expireAt' },
  portalSessions: { collection: COLLECTIONS.portalSessions, field: 'expireAt' },
  portalMarks: { collection: COLLECTIONS.portalMarks, field: 'expireAt' },
  // A settled delivery, its retention after it settled (domain/delivery/delivery-retention.ts); never one that holds work.
  deliveries: { collection: COLLECTIONS.deliveries, field: 'expireAt' },
  // A group when its last member's retention ends.
  deliveryGroups: { collection: COLLECTIONS.deliveryGroups, field: 'expireAt' },
  // An ordered key with nothing waiting, the deliveries' retention after its last change.
  orderedKeys: { collection: COLLECTIONS.orderedKeys, field: 'expireAt' },
  // What tells a removed batch from one never journaled, and who counted a record of one never journaled: as long as the records they concern.
  intakeRemoved: { collection: COLLECTIONS.intakeRemoved, field: 'expireAt' },
  intakeAdopted: { collection: COLLECTIONS.intakeAdopted, field: 'expireAt' },
  // Usage 400 days after its day: a year of bills and the month before it.
  usage: { collection: COLLECTIONS.usage, field: 'expireAt' },
} as const satisfies Record<string, { collection: string; field: string }>;
