import { DocumentData, DocumentReference, Firestore, Timestamp } from '@google-cloud/firestore';
import { DeliveryRecord } from '../../../domain/retry/delivery';
import { DAY_MS, DEFAULT_RETENTION_DAYS, deliveryExpiry } from '../../../domain/delivery/delivery-retention';
import { ownOver, standing } from '../../../domain/delivery/grouped-outcomes';
import { deliveryTally } from '../../../domain/intake/intake-tally';
import { AddedDelivered, DeliveredLinger } from '../../../ports/deliveries';
import { DeliveryRetention, FirestoreDeliveryGroups } from './delivery-groups';
import { chunks, GET_ALL_CHUNK, OperationCounter } from '../stores';
import { COLLECTIONS, FIRESTORE_TTL_FIELDS } from '../../../firestore-schema';
import { AS_TRANSACTION_RETRY, createIfAbsent, OptimisticDocuments, readManyDecideWrite } from '../write';
import { fromDoc, fromOwn, LOG_FIELDS, Own, SAME_ATTEMPT_FIELDS, StoredDelivery, TALLY_FIELD, toDoc } from './delivery-docs';
import { Metrics } from '../../../ports/telemetry';
import { isUnsure } from './unsure-writes';

/**
 * Delivery records one at a time, each as it stands over its own document and its group copies:
 * read, written, created, updated, and within another store's optimistic write. What the store
 * (FirestoreDeliveryStore, delivery-store.ts) queries and shows stands on these.
 */
export class FirestoreDeliveryRecords {
  protected readonly groups: FirestoreDeliveryGroups;

  /**
   * `grouping.alone`: how an outcome that commits alone is written — `document` (default: a
   * document of its own, create-if-absent, so a quiet Herald keeps exact duplicate detection and
   * its reconciler counts by aggregation) or `group` (a group of one; tests of the grouped views).
   */
  constructor(
    private readonly db: Firestore,
    protected readonly ops = new OperationCounter(),
    private readonly retention: DeliveryRetention = { retentionMs: DEFAULT_RETENTION_DAYS * DAY_MS, now: () => new Date() },
    grouping: { alone: 'document' | 'group'; metrics?: Pick<Metrics, 'record'> } = { alone: 'document' },
  ) {
    // A group gzips its members whole (adapters/firestore/deliveries/delivery-groups.ts): their attempt logs go in as they are.
    this.groups = new FirestoreDeliveryGroups(db, ops, retention, (record) => toDoc(record, false), (doc) => fromDoc(doc), COLLECTIONS.deliveryGroups, grouping.alone === 'document' ? (record) => this.create(record) : undefined, grouping.metrics);
  }

  protected get col() {
    return this.db.collection(COLLECTIONS.deliveries);
  }

  /** The document for a record, with the expiry Firestore's TTL policy deletes it by; `kept`: the stored one. */
  private stored(record: Own, kept?: Date): StoredDelivery {
    const doc: StoredDelivery = record.intake === undefined ? toDoc(record) : { ...toDoc(record), [TALLY_FIELD]: deliveryTally(record.id) };
    const expireAt = deliveryExpiry(record, this.retention.retentionMs, this.retention.now(), kept);
    return expireAt === undefined ? doc : { ...doc, [FIRESTORE_TTL_FIELDS.deliveries.field]: expireAt };
  }

  async get(id: string): Promise<DeliveryRecord | undefined> {
    const [snap, copies] = await Promise.all([this.col.doc(id).get(), this.groups.copies([id])]);
    this.ops.reads++;
    return standing(snap.exists ? fromOwn(snap.data()!) : undefined, copies.get(id) ?? []);
  }

  async put(record: DeliveryRecord): Promise<void> {
    await this.col.doc(record.id).set(this.stored(record));
    this.ops.writes++;
  }

  /**
   * `unlessGrouped`: a success of the delivery added on this instance and not yet committed (a
   * bundle member's waits for its bundle) is committed first, and refuses the record as a
   * committed group copy does: a failure of a second copy never stands beside it. Another
   * instance's success not yet committed is not seen (its group lands beside this record, and
   * the record stands).
   */
  async create(record: DeliveryRecord, options: { unlessGrouped?: boolean | 'here' } = {}): Promise<boolean> {
    if (options.unlessGrouped === 'here' && (await this.groups.recordedHere(record.id))) return false;
    if (options.unlessGrouped === true && ((await this.groups.recorded(record.id)) || (await this.groups.copies([record.id])).has(record.id))) return false;
    const stored = this.stored(record);
    const ref = this.col.doc(record.id);
    let created: boolean;
    try {
      created = await createIfAbsent(() => ref.create(stored));
    } catch (e) {
      // Unsure whether it landed (a reply lost): a try again would find it and take it for another's.
      if (!(await this.createdAfterAll(ref, record, e))) throw e;
      created = true;
    }
    if (created) this.ops.writes++;
    return created;
  }

  /**
   * After a create answered with an error that leaves it unsure whether it landed (its reply
   * lost: DEADLINE_EXCEEDED, UNAVAILABLE…), whether the document is there as this very record
   * wrote it (one read, on this path only). The same attempt: its status, attempts and times.
   */
  private async createdAfterAll(ref: DocumentReference, record: DeliveryRecord, e: unknown): Promise<boolean> {
    if (!isUnsure(e)) return false;
    let snap;
    try {
      snap = await ref.get();
    } catch {
      return false;
    }
    this.ops.reads++;
    if (!snap.exists) return false;
    const found = fromOwn(snap.data()!);
    return SAME_ATTEMPT_FIELDS.every((f) => found[f] === record[f]);
  }

  addDelivered(record: DeliveryRecord, options?: DeliveredLinger): Promise<AddedDelivered> {
    return this.groups.add(record, options);
  }

  expectDelivered(): () => void {
    return this.groups.expect();
  }

  /**
   * Its own document, read and written under the read's update time (readManyDecideWrite), read
   * again and decided again when another writer got in between. Not a transaction: one locks the
   * record it read, and a process killed inside one (a pump claiming a batch of retries) left
   * the records locked until the transaction expired, failing the next rounds' claims of them
   * with "Transaction lock timeout". A delivery that stands only in groups gets its own document
   * here, over them (`ownOver`): the group copies are read (once: groups never change) only then.
   */
  async update(id: string, decide: (current: DeliveryRecord | undefined) => DeliveryRecord | undefined): Promise<DeliveryRecord | undefined> {
    const ref = this.col.doc(id);
    let copies: DeliveryRecord[] | undefined;
    let copyReads = 0;
    const { result: written, reads } = await readManyDecideWrite(this.db, ref.path, async (io) => {
      const [data] = await io.getAll([ref]);
      if (data !== undefined) {
        const own = fromOwn(data);
        const next = decide(standing(own, []));
        const kept: unknown = data[FIRESTORE_TTL_FIELDS.deliveries.field];
        if (next !== undefined) io.put(ref, this.stored(own.groupCopies ? { ...next, groupCopies: own.groupCopies } : next, kept instanceof Timestamp ? kept.toDate() : undefined) as DocumentData);
        return next;
      }
      if (copies === undefined) {
        copies = (await this.groups.copies([id])).get(id) ?? [];
        copyReads++;
      }
      const next = decide(standing(undefined, copies));
      if (next !== undefined) io.put(ref, this.stored(ownOver(next, copies)) as DocumentData);
      return next;
    }, AS_TRANSACTION_RETRY);
    this.ops.reads += reads + copyReads;
    // One write: one billed write.
    if (written !== undefined) this.ops.writes += 1;
    return written;
  }

  /**
   * Reads and writes of records within another store's optimistic write over several documents
   * (an ordered key's: adapters/firestore/ordered-keys.ts; adapters/firestore/write.ts readManyDecideWrite,
   * which counts the operations). Own documents only: an ordered delivery is never grouped.
   */
  optimistic(io: OptimisticDocuments): OptimisticRecords {
    return {
      get: async (ids) => (await io.getAll(ids.map((id) => this.col.doc(id)))).map((data) => (data ? (fromOwn(data) as DeliveryRecord) : undefined)),
      put: (record) => io.put(this.col.doc(record.id), this.stored(record) as DocumentData),
    };
  }

  /** Own documents of `ids` that exist, as the log shows them (one read each). */
  protected async ownDocs(ids: readonly string[]): Promise<Map<string, Own>> {
    const found = new Map<string, Own>();
    if (ids.length === 0) return found;
    for (const part of chunks(ids, GET_ALL_CHUNK)) {
      const snaps = await this.db.getAll(...part.map((id) => this.col.doc(id)), { fieldMask: [...LOG_FIELDS, 'groupCopies'] });
      this.ops.reads += part.length;
      for (const snap of snaps) if (snap.exists) found.set(snap.id, fromOwn(snap.data()!));
    }
    return found;
  }

  async intakesOf(ids: readonly string[]): Promise<Map<string, string>> {
    const found = new Map<string, string>();
    const alone = new Set<string>();
    for (const part of chunks(ids, GET_ALL_CHUNK)) {
      const snaps = await this.db.getAll(...part.map((id) => this.col.doc(id)), { fieldMask: ['intake'] });
      this.ops.reads += part.length;
      for (const snap of snaps) {
        if (!snap.exists) continue;
        alone.add(snap.id);
        const intake = snap.get('intake') as unknown;
        if (typeof intake === 'string') found.set(snap.id, intake);
      }
    }
    // A record with a document of its own stands as that document says, whatever a group holds of it.
    const rest = ids.filter((id) => !alone.has(id));
    if (rest.length > 0) {
      for (const [id, members] of await this.groups.copies(rest)) {
        const intake = members.find((m) => m.intake !== undefined)?.intake;
        if (intake !== undefined) found.set(id, intake);
      }
    }
    return found;
  }

  async existing(ids: readonly string[]): Promise<Set<string>> {
    const found = new Set<string>();
    for (const part of chunks(ids, GET_ALL_CHUNK)) {
      const snaps = await this.db.getAll(...part.map((id) => this.col.doc(id)), { fieldMask: ['status'] });
      this.ops.reads += part.length;
      for (const snap of snaps) if (snap.exists) found.add(snap.id);
    }
    const rest = ids.filter((id) => !found.has(id));
    if (rest.length > 0) for (const id of (await this.groups.copies(rest)).keys()) found.add(id);
    return found;
  }
}

/** Records read and written within an optimistic write over several documents (FirestoreDeliveryStore.optimistic). */
export interface OptimisticRecords {
  get(ids: readonly string[]): Promise<(DeliveryRecord | undefined)[]>;
  /** Replaces the record if it is still as read; one not read is created (the commit fails if it exists). */
  put(record: DeliveryRecord): void;
}
