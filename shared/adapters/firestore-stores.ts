import { DocumentData, DocumentReference, FieldPath, FieldValue, Firestore, Timestamp } from '@google-cloud/firestore';
import { DeliveryLogQuery, inLog, logPage } from '../domain/delivery-log';
import { DeliveryRecord, DeliveryStatus } from '../domain/delivery';
import { DAY_MS, DEFAULT_RETENTION_DAYS, deliveryExpiry } from '../domain/delivery-retention';
import { Destination } from '../domain/destination';
import { isSealed, SecretBox, SecretBoxError, sealedKeyId } from '../domain/secret-box';
import { HeraldEvent } from '../domain/event';
import { IntakeBatch } from '../domain/intake';
import { DeliveryPage, DeliveryStore, DestinationChanges, DestinationStore, IntakeStore } from '../ports';
import { deleteIfExists, GRPC, grpcCode, readDecideWrite } from './firestore-write';

/** Counts every document read and write, so the benchmark reports what Herald costs. */
export class OperationCounter {
  reads = 0;
  writes = 0;
  deletes = 0;
  reset(): void {
    this.reads = 0;
    this.writes = 0;
    this.deletes = 0;
  }
}

export const COLLECTIONS = {
  destinations: 'destinations',
  deliveries: 'deliveries',
  rates: 'rates',
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
  rateWindow: { collection: COLLECTIONS.rates, equality: ['destinationId'], orderBy: 'bucketStart' },
  // The head of a destination's delivery log, kept with its counters: the newest buckets first.
  logHead: { collection: COLLECTIONS.rates, equality: ['destinationId'], orderBy: 'bucketStart', direction: 'desc' },
  // GET /admin/replays: newest first (one field: Firestore's automatic index serves it).
  recentReplays: { collection: COLLECTIONS.replays, equality: [], orderBy: 'createdAt', direction: 'desc' },
  // GET /admin/accounts/{id}/replays: one account's, newest first.
  accountReplays: { collection: COLLECTIONS.replays, equality: ['request.account'], orderBy: 'createdAt', direction: 'desc' },
  // POST /admin/replays refuses to start a replay while another runs.
  runningReplays: { collection: COLLECTIONS.replays, equality: ['status'], orderBy: 'createdAt' },
  // The reconciler: intake batches past their grace, oldest first (one field: the automatic index).
  dueIntake: { collection: COLLECTIONS.intake, equality: [], orderBy: 'acceptedAt' },
  // The reconciler: DEAD records whose dead letter is still owed (one field: the automatic index).
  owedDeadLetters: { collection: COLLECTIONS.deliveries, equality: [], orderBy: 'deadLetterDueAt' },
  // Each instance's destination directory: registry changes since it last looked (one field: the automatic index).
  destinationChanges: { collection: COLLECTIONS.destinationChanges, equality: [], orderBy: 'at' },
  // GET /admin/event-types: the account's event types and their samples, by type.
  accountEventTypes: { collection: COLLECTIONS.eventTypes, equality: ['account'], orderBy: 'type' },
  // The scheduled purge: deleted accounts whose data may not all be gone yet, oldest first.
  // (It deletes the rest by document-id ranges, `<account>_…`, which need no index.)
  pendingPurges: { collection: COLLECTIONS.accountTombstones, equality: ['purge'], orderBy: 'deletedAt' },
  // GET /admin/accounts/{id}/portal-links and …/portal-sessions: the account's newest, live ones among them.
  accountPortalLinks: { collection: COLLECTIONS.portalLinks, equality: ['account'], orderBy: 'createdAt', direction: 'desc' },
  accountPortalSessions: { collection: COLLECTIONS.portalSessions, equality: ['account'], orderBy: 'createdAt', direction: 'desc' },
} as const satisfies Record<string, { collection: string; equality: readonly string[]; orderBy: string; direction?: 'asc' | 'desc' }>;

/**
 * Timestamp fields after which Firestore's TTL policy deletes a document, as data: the
 * stores write them, and the Pulumi program declares one TTL policy for each.
 */
export const FIRESTORE_TTL_FIELDS = {
  rates: { collection: COLLECTIONS.rates, field: 'expireAt' },
  destinationChanges: { collection: COLLECTIONS.destinationChanges, field: 'expireAt' },
  // A portal link or session is deleted once it has expired; an account's mark once every session it ended has.
  portalLinks: { collection: COLLECTIONS.portalLinks, field: 'expireAt' },
  portalSessions: { collection: COLLECTIONS.portalSessions, field: 'expireAt' },
  portalMarks: { collection: COLLECTIONS.portalMarks, field: 'expireAt' },
  // A settled delivery, its retention after it settled (domain/delivery-retention.ts); never one that holds work.
  deliveries: { collection: COLLECTIONS.deliveries, field: 'expireAt' },
} as const satisfies Record<string, { collection: string; field: string }>;

/** How long the destination change log keeps an entry (TTL); a directory idle longer reloads whole. */
export const CHANGE_KEEP_MS = 24 * 3600_000;
/** How far back each look at the change log reaches before the last one's read time. */
const CHANGE_OVERLAP_MS = 5_000;

export class FirestoreDestinationStore implements DestinationStore {
  /**
   * `box`: the signing secrets (`secret`, every `previousSecrets[].secret`) are sealed with it
   * in every document written, and opened in every document read; the rest of Herald sees
   * plaintext. Without one (the emulator only: runtime.ts refuses real Firestore without
   * HERALD_SECRETS_KEY) they are written as they are.
   */
  constructor(
    private readonly db: Firestore,
    private readonly ops = new OperationCounter(),
    private readonly box?: SecretBox,
  ) {}

  private get col() {
    return this.db.collection(COLLECTIONS.destinations);
  }

  /** The document for a destination: its secrets sealed, bound to its id (a sealed value copied to another destination does not open). */
  private toDoc(destination: Destination): Destination {
    const box = this.box;
    if (!box) return destination;
    const seal = (secret: string) => box.seal(secret, secretContext(destination.id));
    const doc: Destination = { ...destination, secret: seal(destination.secret) };
    if (destination.previousSecrets) doc.previousSecrets = destination.previousSecrets.map((p) => ({ ...p, secret: seal(p.secret) }));
    return doc;
  }

  /**
   * A destination from its document, its secrets opened. A plaintext secret is one written
   * before Herald encrypted them (older deployments): taken as it is, and sealed on the
   * destination's next write.
   */
  private fromDoc(data: DocumentData): Destination {
    const doc = data as Destination;
    const open = (stored: string) => {
      if (!isSealed(stored)) return stored;
      try {
        if (!this.box) {
          throw new SecretBoxError(`its secret is encrypted (key id ${sealedKeyId(stored) ?? 'unknown'}) and HERALD_SECRETS_KEY is not set: set it to the key this data was written with`);
        }
        return this.box.open(stored, secretContext(doc.id));
      } catch (e) {
        throw e instanceof SecretBoxError ? new SecretBoxError(`destination ${doc.id}: ${e.message}`) : e;
      }
    };
    const destination: Destination = { ...doc, secret: open(doc.secret) };
    if (doc.previousSecrets) destination.previousSecrets = doc.previousSecrets.map((p) => ({ ...p, secret: open(p.secret) }));
    return destination;
  }

  async get(id: string): Promise<Destination | undefined> {
    const snap = await this.col.doc(id).get();
    this.ops.reads++;
    return snap.exists ? this.fromDoc(snap.data()!) : undefined;
  }

  async list(): Promise<Destination[]> {
    const snap = await this.col.orderBy('id').get();
    this.ops.reads += Math.max(1, snap.size);
    return snap.docs.map((d) => this.fromDoc(d.data()));
  }

  /**
   * What changed since `since` (a read time this method returned): the change log written
   * with every destination write, read with one query, then the changed documents. A
   * listener would cost nothing between changes on GCP, but the emulator answers every
   * write to a listened collection with a RESET and the whole collection again (measured:
   * 20 writes, 20 resets), which made 10,000 registrations O(D²) for every instance.
   */
  async changesSince(since: Date | undefined): Promise<DestinationChanges> {
    if (since === undefined) {
      const snap = await this.col.get();
      this.ops.reads += Math.max(1, snap.size);
      return { initial: true, upserted: snap.docs.map((d) => this.fromDoc(d.data())), removed: [], readTime: snap.readTime.toDate() };
    }
    // A little overlap: a change read twice is applied twice, to the same result.
    const after = Timestamp.fromMillis(since.getTime() - CHANGE_OVERLAP_MS);
    const snap = await this.changes.where(FIRESTORE_QUERIES.destinationChanges.orderBy, '>', after).select('destinationId').get();
    this.ops.reads += Math.max(1, snap.size);
    const ids = [...new Set(snap.docs.map((d) => (d.data() as { destinationId: string }).destinationId))];
    const docs = ids.length > 0 ? await this.db.getAll(...ids.map((id) => this.col.doc(id))) : [];
    this.ops.reads += docs.length;
    return {
      initial: false,
      upserted: docs.filter((d) => d.exists).map((d) => this.fromDoc(d.data()!)),
      removed: docs.filter((d) => !d.exists).map((d) => d.id),
      readTime: snap.readTime.toDate(),
    };
  }

  private get changes() {
    return this.db.collection(COLLECTIONS.destinationChanges);
  }

  /** The change log entry written with every destination write, in its batch or transaction. */
  private changeEntry(destinationId: string): [DocumentReference, DocumentData] {
    return [this.changes.doc(), { destinationId, at: FieldValue.serverTimestamp(), [FIRESTORE_TTL_FIELDS.destinationChanges.field]: new Date(Date.now() + CHANGE_KEEP_MS) }];
  }

  async put(destination: Destination): Promise<{ created: boolean }> {
    const ref = this.col.doc(destination.id);
    const doc = this.toDoc(destination);
    for (const created of [true, false]) {
      const batch = this.db.batch();
      if (created) batch.create(ref, doc);
      else batch.set(ref, doc);
      batch.set(...this.changeEntry(destination.id));
      try {
        await batch.commit();
        this.ops.writes += 2;
        return { created };
      } catch (e) {
        if (!created || grpcCode(e) !== GRPC.ALREADY_EXISTS) throw e;
      }
    }
    throw new Error('unreachable');
  }

  /** With its change log entry in one commit; of many at once, exactly one deletes (firestore-write.ts). */
  async delete(id: string): Promise<boolean> {
    const existed = await deleteIfExists(this.db, this.col.doc(id), (batch) => batch.set(...this.changeEntry(id)));
    if (existed) {
      // Billed as a delete (the destination) and a write (its change log entry).
      this.ops.deletes += 1;
      this.ops.writes += 1;
    }
    return existed;
  }

  /** Optimistically, with its change log entry in the same commit (firestore-write.ts): no transaction's lock. */
  async update(id: string, decide: (current: Destination | undefined) => Destination | undefined): Promise<Destination | undefined> {
    const { written, reads, writes } = await readDecideWrite(this.db, this.col.doc(id), decide, {
      decode: (data) => this.fromDoc(data),
      encode: (destination) => this.toDoc(destination),
      alongside: (batch) => batch.set(...this.changeEntry(id)),
    });
    this.ops.reads += reads;
    this.ops.writes += writes * 2;
    return written;
  }
}

/** What a destination's sealed secrets are bound to (GCM additional data). */
function secretContext(destinationId: string): string {
  return `herald:destination:${destinationId}:secret`;
}

type StoredDelivery = Omit<DeliveryRecord, 'event'> & { event?: { attributes: Record<string, string>; data: Buffer }; expireAt?: Date };

/** How long settled records are kept (HERALD_DELIVERY_RETENTION_DAYS); `now`: the clock their expiry counts from. */
export interface DeliveryRetention {
  retentionMs: number;
  now: () => Date;
}

export class FirestoreDeliveryStore implements DeliveryStore {
  constructor(
    private readonly db: Firestore,
    private readonly ops = new OperationCounter(),
    private readonly retention: DeliveryRetention = { retentionMs: DEFAULT_RETENTION_DAYS * DAY_MS, now: () => new Date() },
  ) {}

  private get col() {
    return this.db.collection(COLLECTIONS.deliveries);
  }

  /** The document for a record, with the expiry Firestore's TTL policy deletes it by; `kept`: the stored one. */
  private stored(record: DeliveryRecord, kept?: Date): StoredDelivery {
    const doc = toDoc(record);
    const expireAt = deliveryExpiry(record, this.retention.retentionMs, this.retention.now(), kept);
    return expireAt === undefined ? doc : { ...doc, [FIRESTORE_TTL_FIELDS.deliveries.field]: expireAt };
  }

  async get(id: string): Promise<DeliveryRecord | undefined> {
    const snap = await this.col.doc(id).get();
    this.ops.reads++;
    return snap.exists ? fromDoc(snap.data() as DocumentData) : undefined;
  }

  async put(record: DeliveryRecord): Promise<void> {
    await this.col.doc(record.id).set(this.stored(record));
    this.ops.writes++;
  }

  async create(record: DeliveryRecord): Promise<boolean> {
    try {
      await this.col.doc(record.id).create(this.stored(record));
    } catch (e) {
      if (grpcCode(e) === GRPC.ALREADY_EXISTS) return false;
      throw e;
    }
    this.ops.writes++;
    return true;
  }

  async update(id: string, decide: (current: DeliveryRecord | undefined) => DeliveryRecord | undefined): Promise<DeliveryRecord | undefined> {
    const ref = this.col.doc(id);
    let reads = 0;
    const written = await this.db.runTransaction(async (tx) => {
      const snap = await tx.get(ref);
      reads++;
      const next = decide(snap.exists ? fromDoc(snap.data() as DocumentData) : undefined);
      const kept: unknown = snap.get(FIRESTORE_TTL_FIELDS.deliveries.field);
      if (next !== undefined) tx.set(ref, this.stored(next, kept instanceof Timestamp ? kept.toDate() : undefined));
      return next;
    });
    this.ops.reads += reads;
    // One tx.set: one billed write.
    if (written !== undefined) this.ops.writes += 1;
    return written;
  }

  async due(now: Date, claimExpiredBefore: Date, limit: number): Promise<string[]> {
    const q = FIRESTORE_QUERIES;
    const [pending, expired] = await Promise.all([
      this.col.where(q.duePending.equality[0], '==', 'PENDING').where(q.duePending.orderBy, '<=', now.toISOString()).orderBy(q.duePending.orderBy).limit(limit).select().get(),
      this.col.where(q.expiredClaims.equality[0], '==', 'IN_FLIGHT').where(q.expiredClaims.orderBy, '<=', claimExpiredBefore.toISOString()).orderBy(q.expiredClaims.orderBy).limit(limit).select().get(),
    ]);
    // Firestore bills a query that matches nothing as one read.
    this.ops.reads += Math.max(1, pending.size) + Math.max(1, expired.size);
    return [...expired.docs, ...pending.docs].map((d) => d.id).slice(0, limit);
  }

  async nextAvailableAt(): Promise<Date | undefined> {
    const q = FIRESTORE_QUERIES.duePending;
    const snap = await this.col.where(q.equality[0], '==', 'PENDING').orderBy(q.orderBy).limit(1).select(q.orderBy).get();
    this.ops.reads += 1;
    const at = snap.docs[0]?.get(q.orderBy) as string | undefined;
    return at === undefined ? undefined : new Date(at);
  }

  async rateDeferred(destinationId: string, limit: number): Promise<string[]> {
    const [destination, status, marker] = FIRESTORE_QUERIES.rateDeferred.equality;
    const snap = await this.col
      .where(destination, '==', destinationId)
      .where(status, '==', 'PENDING')
      .where(marker, '==', true)
      .orderBy(FIRESTORE_QUERIES.rateDeferred.orderBy)
      .limit(limit)
      .select()
      .get();
    this.ops.reads += Math.max(1, snap.size);
    return snap.docs.map((d) => d.id);
  }

  async list(destinationId: string, query: { status?: DeliveryStatus; limit: number; cursor?: string }): Promise<DeliveryPage> {
    let q = this.col.where('destinationId', '==', destinationId);
    if (query.status !== undefined) q = q.where('status', '==', query.status);
    q = q.orderBy('id');
    if (query.cursor !== undefined) q = q.startAfter(query.cursor);
    // One extra tells whether another page exists without a second query.
    const snap = await q.limit(query.limit + 1).get();
    this.ops.reads += Math.max(1, snap.size);
    const docs = snap.docs.slice(0, query.limit);
    const deliveries = docs.map((d) => fromDoc(d.data()));
    const last = deliveries[deliveries.length - 1];
    return snap.size > query.limit && last ? { deliveries, nextCursor: last.id } : { deliveries };
  }

  async log(destinationId: string, query: DeliveryLogQuery): Promise<DeliveryPage> {
    let q = this.col.where('destinationId', '==', destinationId);
    // An event id names one or two records: the other filters are applied to them here, not by an index each.
    if (query.eventId !== undefined) q = q.where('eventId', '==', query.eventId);
    else {
      if (query.status !== undefined) q = q.where('status', '==', query.status);
      if (query.eventType !== undefined) q = q.where('eventType', '==', query.eventType);
    }
    if (query.from !== undefined) q = q.where('publishedAt', '>=', query.from);
    if (query.to !== undefined) q = q.where('publishedAt', '<', query.to);
    q = q.orderBy('publishedAt', 'desc').orderBy(FieldPath.documentId(), 'desc');
    if (query.cursor !== undefined) q = q.startAfter(query.cursor.publishedAt, query.cursor.id);
    // The page's rows without the event's bytes and the attempts' detail (GET …/deliveries/{id} has them).
    const snap = await q.select(...LOG_FIELDS).limit(query.limit + 1).get();
    this.ops.reads += Math.max(1, snap.size);
    const rows = snap.docs.map((d) => fromDoc(d.data())).filter((r) => inLog(r, { ...query, cursor: undefined }));
    return logPage(rows, query.limit);
  }

  async countFromIntake(intake: string, destinationIds: readonly string[]): Promise<number> {
    let total = 0;
    for (const ids of chunks(destinationIds, IN_LIMIT)) {
      const snap = await this.col.where('intake', '==', intake).where('destinationId', 'in', ids).count().get();
      const count = snap.data().count;
      // An aggregation is billed one read per 1,000 index entries it counts (at least one).
      this.ops.reads += Math.max(1, Math.ceil(count / 1000));
      total += count;
    }
    return total;
  }

  async countFromIntakes(first: string, last: string): Promise<number> {
    const snap = await this.col.where('intake', '>=', first).where('intake', '<=', last).count().get();
    const count = snap.data().count;
    this.ops.reads += Math.max(1, Math.ceil(count / 1000));
    return count;
  }

  async existing(ids: readonly string[]): Promise<Set<string>> {
    const found = new Set<string>();
    for (const part of chunks(ids, GET_ALL_CHUNK)) {
      const snaps = await this.db.getAll(...part.map((id) => this.col.doc(id)), { fieldMask: ['status'] });
      this.ops.reads += part.length;
      for (const snap of snaps) if (snap.exists) found.add(snap.id);
    }
    return found;
  }

  async logRows(ids: readonly string[]): Promise<DeliveryRecord[]> {
    const rows: DeliveryRecord[] = [];
    for (const part of chunks(ids, GET_ALL_CHUNK)) {
      const snaps = await this.db.getAll(...part.map((id) => this.col.doc(id)), { fieldMask: [...LOG_FIELDS] });
      this.ops.reads += part.length;
      for (const snap of snaps) if (snap.exists) rows.push(fromDoc(snap.data()!));
    }
    return rows;
  }

  async countByStatus(destinationIds: readonly string[], status: DeliveryStatus): Promise<number> {
    // The equality fields of byDestinationAndStatus: its composite index serves the count.
    const [destination, statusField] = FIRESTORE_QUERIES.byDestinationAndStatus.equality;
    const counts = await Promise.all(chunks(destinationIds, IN_LIMIT).map((ids) => this.col.where(destination, 'in', ids).where(statusField, '==', status).count().get()));
    const total = counts.reduce((sum, snap) => sum + snap.data().count, 0);
    this.ops.reads += counts.reduce((sum, snap) => sum + Math.max(1, Math.ceil(snap.data().count / 1000)), 0);
    return total;
  }

    async deadLettersOwed(before: Date, limit: number): Promise<string[]> {
    const field = FIRESTORE_QUERIES.owedDeadLetters.orderBy;
    const snap = await this.col.where(field, '<=', before.toISOString()).orderBy(field).limit(limit).select().get();
    this.ops.reads += Math.max(1, snap.size);
    return snap.docs.map((d) => d.id);
  }
}

type StoredBatch = Omit<IntakeBatch, 'events'> & { events: { attributes: Record<string, string>; data: Buffer }[] };

/** The intake journal (domain/intake.ts): one document per batch, deleted once reconciled. */
export class FirestoreIntakeStore implements IntakeStore {
  constructor(
    private readonly db: Firestore,
    private readonly ops = new OperationCounter(),
  ) {}

  private get col() {
    return this.db.collection(COLLECTIONS.intake);
  }

  async add(batch: IntakeBatch): Promise<void> {
    const doc: StoredBatch = { ...batch, events: batch.events.map((e) => ({ attributes: { ...e.attributes }, data: e.data })) };
    await this.col.doc(batch.id).set(doc);
    this.ops.writes++;
  }

  async due(before: Date, limit: number, after?: string): Promise<IntakeBatch[]> {
    const field = FIRESTORE_QUERIES.dueIntake.orderBy;
    let query = this.col.where(field, '<=', before.toISOString());
    if (after !== undefined) query = query.where(field, '>', after);
    const snap = await query.orderBy(field).limit(limit).get();
    this.ops.reads += Math.max(1, snap.size);
    return snap.docs.map((d) => {
      const stored = d.data() as StoredBatch;
      return { ...stored, events: stored.events.map((e) => ({ attributes: e.attributes, data: Buffer.from(e.data) }) as HeraldEvent) };
    });
  }

  async remove(ids: readonly string[]): Promise<void> {
    // A write batch takes at most 500 operations: one request each, however many batches.
    for (const part of chunks(ids, 500)) {
      const batch = this.db.batch();
      for (const id of part) batch.delete(this.col.doc(id));
      await batch.commit();
      this.ops.deletes += part.length;
    }
  }
}

/** Firestore's `in` takes at most 30 values. */
const IN_LIMIT = 30;
/** Documents asked for per getAll. */
const GET_ALL_CHUNK = 300;

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

function toDoc(record: DeliveryRecord): StoredDelivery {
  const { event, ...rest } = record;
  return event ? { ...rest, event: { attributes: { ...event.attributes }, data: event.data } } : rest;
}

/** A delivery record's fields as the log shows them: all but `event` and `attemptLog`. */
const LOG_FIELDS = [
  'id', 'destinationId', 'eventId', 'eventSource', 'eventType', 'status', 'attempts', 'throttled', 'reason', 'publishedAt', 'lastError', 'availableAt',
  'rateDeferred', 'claimedAt', 'firstAttemptAt', 'lastAttemptAt', 'deliveredAt', 'replays', 'intake', 'deadLetterDueAt', 'recoveredAt',
  'duplicates',
] as const satisfies readonly Exclude<keyof DeliveryRecord, 'event' | 'attemptLog'>[];
type UnlistedField = Exclude<Exclude<keyof DeliveryRecord, 'event' | 'attemptLog'>, (typeof LOG_FIELDS)[number]>;
// A field added to DeliveryRecord but not to LOG_FIELDS stops the build here: the log would drop it silently.
const LOG_FIELDS_COMPLETE: UnlistedField extends never ? true : never = true;
void LOG_FIELDS_COMPLETE;

/** A record from its document: without the TTL field, which is storage's, not the record's. */
function fromDoc(doc: DocumentData): DeliveryRecord {
  const { event, expireAt: _expireAt, ...rest } = doc as StoredDelivery;
  if (!event) return rest;
  return { ...rest, event: { attributes: event.attributes, data: Buffer.from(event.data) } as HeraldEvent };
}
