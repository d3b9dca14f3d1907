import { randomBytes } from 'node:crypto';
import { FieldPath, Firestore, Timestamp } from '@google-cloud/firestore';
import { DEFAULT_OPERATIONAL_PREFIX } from '../../domain/operational/operational-events';
import { HeraldEvent } from '../../domain/events/event';
import { IntakeBatch, intakeBatchTime } from '../../domain/intake/intake';
import { IntakeStore } from '../../ports/intake';
import { COLLECTIONS, FIRESTORE_QUERIES } from '../../firestore-schema';
import { chunks, FirestoreStore, GET_ALL_CHUNK, OperationCounter } from './stores';
import { journaledUsage, ReconciledBatch } from '../../domain/intake/intake-usage';
import { usageWrite } from './usage/usage-docs';
import { ifPresent } from './write';
import { GRPC, grpcCode } from '../../domain/retry/grpc-status';
import { DAY_MS } from '../../domain/delivery/delivery-retention';
import { bundleBody, readBundleBody } from '../../domain/intake/lane-bundle';

/** The writer name of the usage the journal counts (domain/intake/intake-usage.ts): `usage/<account>_<day>~intake`. */
export const INTAKE_USAGE_WRITER = 'intake';

/** A commit holds at most 500 writes: the batches' deletes, their usage documents, what keeps their ids and the records they adopted. */
const COMMIT_WRITES = 500;

/** Marks of adopted records per commit when a batch has more than its removal's commit holds. */
const MARKS_PER_COMMIT = 400;

/** Removed batch ids are kept by the ten minutes they were accepted in: a lookup reads that span's documents only. */
const REMOVED_BUCKET_MS = 600_000;

/** The ten minutes a batch id was accepted in (domain/intake/intake.ts intakeBatchId), or undefined for an id of another form. */
function removedBucket(id: string): number | undefined {
  const at = intakeBatchTime(id);
  return at === undefined ? undefined : Math.floor(at / REMOVED_BUCKET_MS);
}

/** Every write a commit removing `part` makes. */
function writesOf(part: readonly ReconciledBatch[], operationalEventPrefix: string): number {
  const buckets = new Set(part.map((b) => removedBucket(b.id) ?? -1));
  return part.length + journaledUsage(part, operationalEventPrefix).length + buckets.size + part.reduce((n, b) => n + (b.adopted?.length ?? 0), 0);
}

/** The batches in commits of at most COMMIT_WRITES writes (writesOf). */
function removalParts(batches: readonly ReconciledBatch[], operationalEventPrefix: string): ReconciledBatch[][] {
  const parts: ReconciledBatch[][] = [];
  let part: ReconciledBatch[] = [];
  let adopted = new Set<string>();
  for (const b of batches) {
    // Two creates of one mark in a commit fail it whatever the rest: such batches go in different commits, the second refused.
    if (part.length > 0 && (writesOf([...part, b], operationalEventPrefix) > COMMIT_WRITES || (b.adopted ?? []).some((id) => adopted.has(id)))) {
      parts.push(part);
      part = [];
      adopted = new Set();
    }
    part.push(b);
    for (const id of b.adopted ?? []) adopted.add(id);
  }
  if (part.length > 0) parts.push(part);
  return parts;
}

/**
 * A batch as stored: its events as one bytes field in the lane bundle's body format
 * (domain/intake/lane-bundle.ts), `count` of them. Firestore validates, encodes and (unless
 * exempt) indexes a document field by field: a hundred events as maps cost ingest ~2 ms of CPU
 * a request, one bytes field next to nothing. Batches written before `packed` hold `events`.
 */
type StoredBatch = Omit<IntakeBatch, 'events'> & ({ packed: Buffer; count: number } | { events: { attributes: Record<string, string>; data: Buffer }[] });

/** The events of a stored batch, either form; a body that does not read back is a defect of this module's writing: thrown. */
function eventsOf(stored: StoredBatch): HeraldEvent[] {
  if ('events' in stored) return stored.events.map((e) => ({ attributes: e.attributes, data: Buffer.from(e.data) }) as HeraldEvent);
  const read = readBundleBody(Buffer.from(stored.packed), stored.count);
  if (!read.ok) throw new Error(`intake batch ${stored.id} does not read back: ${read.issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`);
  return read.members as HeraldEvent[];
}

function batchOf(stored: StoredBatch): IntakeBatch {
  const { id, acceptedAt, progress, refs } = stored;
  return { id, acceptedAt, events: eventsOf(stored), ...(progress !== undefined ? { progress } : {}), ...(refs !== undefined ? { refs } : {}) };
}

/** The intake journal (domain/intake/intake.ts): one document per batch, deleted once reconciled. */
export class FirestoreIntakeStore extends FirestoreStore implements IntakeStore {
  constructor(
    db: Firestore,
    ops?: OperationCounter,
    /** The types usage counts as Herald's own operational events (HERALD_OPERATIONAL_EVENT_PREFIX). */
    private readonly operationalEventPrefix = DEFAULT_OPERATIONAL_PREFIX,
    /** How long the ids of removed batches and the marks of adopted records are kept: the deliveries' retention (HERALD_DELIVERY_RETENTION_DAYS) and a day. */
    private readonly keepMs = 31 * DAY_MS,
  ) {
    super(db, ops);
  }

  private get col() {
    return this.db.collection(COLLECTIONS.intake);
  }

  async add(batch: IntakeBatch): Promise<void> {
    const { events, ...rest } = batch;
    const doc: StoredBatch = { ...rest, packed: bundleBody(events), count: events.length };
    await this.col.doc(batch.id).set(doc);
    this.ops.writes++;
  }

  async holds(id: string): Promise<boolean> {
    // Only the id is wanted: an empty field mask (`select()`) reads the document without its events.
    const snap = await this.col.where(FieldPath.documentId(), '==', this.col.doc(id)).select().get();
    this.ops.reads++;
    return !snap.empty;
  }

  async journaled(ids: readonly string[]): Promise<Set<string>> {
    const found = new Set<string>();
    const unique = [...new Set(ids)];
    if (unique.length === 0) return found;
    for (const part of chunks(unique, GET_ALL_CHUNK)) {
      const snaps = await this.db.getAll(...part.map((id) => this.col.doc(id)), { fieldMask: [] });
      this.ops.reads += part.length;
      for (const snap of snaps) if (snap.exists) found.add(snap.id);
    }
    // Read after the journal: a batch removed between the two reads is in its commit's ids by then.
    const byBucket = new Map<number, string[]>();
    for (const id of unique.filter((id) => !found.has(id))) {
      const bucket = removedBucket(id);
      if (bucket === undefined) found.add(id);
      else byBucket.set(bucket, [...(byBucket.get(bucket) ?? []), id]);
    }
    const field = FIRESTORE_QUERIES.removedIntake.orderBy;
    await Promise.all(
      [...byBucket].map(async ([bucket, wanted]) => {
        const snap = await this.db.collection(COLLECTIONS.intakeRemoved).where(field, '==', bucket).get();
        this.ops.reads += Math.max(1, snap.size);
        const removed = new Set(snap.docs.flatMap((d) => (d.get('ids') as string[] | undefined) ?? []));
        for (const id of wanted) if (removed.has(id)) found.add(id);
      }),
    );
    return found;
  }

  async adoptedBy(deliveryIds: readonly string[]): Promise<Map<string, string>> {
    const found = new Map<string, string>();
    const unique = [...new Set(deliveryIds)];
    if (unique.length === 0) return found;
    for (const part of chunks(unique, GET_ALL_CHUNK)) {
      const snaps = await this.db.getAll(...part.map((id) => this.db.collection(COLLECTIONS.intakeAdopted).doc(id)));
      this.ops.reads += part.length;
      for (const snap of snaps) if (snap.exists) found.set(snap.id, String(snap.get('by')));
    }
    return found;
  }

  async due(before: Date, limit: number, after?: string): Promise<IntakeBatch[]> {
    const field = FIRESTORE_QUERIES.dueIntake.orderBy;
    let query = this.col.where(field, '<=', before.toISOString());
    if (after !== undefined) query = query.where(field, '>', after);
    const snap = await query.orderBy(field).limit(limit).get();
    this.ops.reads += Math.max(1, snap.size);
    return snap.docs.map((d) => batchOf(d.data() as StoredBatch));
  }

  async get(id: string): Promise<IntakeBatch | undefined> {
    const snap = await this.col.doc(id).get();
    this.ops.reads++;
    return snap.exists ? batchOf(snap.data() as StoredBatch) : undefined;
  }

  async remove(batches: readonly ReconciledBatch[]): Promise<void> {
    for (const part of removalParts(batches, this.operationalEventPrefix)) await this.removeCounted(part);
  }

  /**
   * Deletes the batches and adds their events to the usage documents `usage/<account>_<day>~intake`,
   * in one commit, with their ids (one document per ten minutes of acceptance: `journaled`) and a
   * mark on each record they adopted. Each delete requires its batch to be there, each mark to be
   * new: if another reconciler removed a batch first (or this commit landed before with its reply
   * lost), or adopted one of its records, the commit fails whole and the batches go one by one,
   * each counted only with its own delete. A batch whose record another adopted stays in the
   * journal: the next round counts it again, knowing that.
   */
  private async removeCounted(part: readonly ReconciledBatch[]): Promise<void> {
    if (part.length === 1 && writesOf(part, this.operationalEventPrefix) > COMMIT_WRITES) return this.removeMarkedFirst(part[0]!);
    const usage = journaledUsage(part, this.operationalEventPrefix);
    const batch = this.db.batch();
    const now = Date.now();
    const expireAt = Timestamp.fromMillis(now + this.keepMs);
    for (const b of part) batch.delete(this.col.doc(b.id), { exists: true });
    for (const u of usage) {
      const w = usageWrite(this.db, u, INTAKE_USAGE_WRITER, {});
      batch.set(w.ref, w.doc, { merge: true });
    }
    const byBucket = new Map<number, string[]>();
    for (const b of part) {
      const bucket = removedBucket(b.id);
      if (bucket !== undefined) byBucket.set(bucket, [...(byBucket.get(bucket) ?? []), b.id]);
    }
    const removed = this.db.collection(COLLECTIONS.intakeRemoved);
    for (const [bucket, ids] of byBucket) batch.create(removed.doc(`${bucket}~${randomBytes(6).toString('hex')}`), { bucket, ids, expireAt });
    const adopted = part.flatMap((b) => (b.adopted ?? []).map((id) => ({ id, by: b.id })));
    for (const a of adopted) batch.create(this.db.collection(COLLECTIONS.intakeAdopted).doc(a.id), { by: a.by, expireAt });
    const outcome = await commitOutcome(() => batch.commit());
    if (outcome === 'written') {
      this.ops.deletes += part.length;
      this.ops.writes += usage.length + byBucket.size + adopted.length;
      return;
    }
    if (part.length > 1) for (const b of part) await this.removeCounted([b]);
  }

  /**
   * A batch that adopted more records than a commit holds marks them first, a commit per 400,
   * then is removed and counted. Killed in between, it is still in the journal, its marks name
   * it: the next round finds them its own and counts them with it. A mark another batch made
   * first stops it there, for the next round to count it again.
   */
  private async removeMarkedFirst(b: ReconciledBatch): Promise<void> {
    const expireAt = Timestamp.fromMillis(Date.now() + this.keepMs);
    for (const ids of chunks(b.adopted ?? [], MARKS_PER_COMMIT)) {
      const marks = this.db.batch();
      for (const id of ids) marks.create(this.db.collection(COLLECTIONS.intakeAdopted).doc(id), { by: b.id, expireAt });
      if ((await commitOutcome(() => marks.commit())) === 'refused') return;
      this.ops.writes += ids.length;
    }
    await this.removeCounted([{ ...b, adopted: [] }]);
  }

  async progress(id: string, events: number): Promise<void> {
    // A batch removed meanwhile (another reconciler finished it) is not written back.
    if (await ifPresent(() => this.col.doc(id).update({ progress: events }))) this.ops.writes++;
  }
}

/** A removal's commit: written, or refused because a batch was gone (`NOT_FOUND`) or a record adopted already (`ALREADY_EXISTS`); anything else is thrown. */
async function commitOutcome(commit: () => Promise<unknown>): Promise<'written' | 'refused'> {
  try {
    await commit();
    return 'written';
  } catch (e) {
    const code = grpcCode(e);
    if (code === GRPC.NOT_FOUND || code === GRPC.ALREADY_EXISTS) return 'refused';
    throw e;
  }
}
