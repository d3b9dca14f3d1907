import { FieldPath, Firestore } from '@google-cloud/firestore';
import { DEFAULT_OPERATIONAL_PREFIX } from '../../domain/operational/operational-events';
import { HeraldEvent } from '../../domain/events/event';
import { IntakeBatch } from '../../domain/intake/intake';
import { IntakeStore } from '../../ports/intake';
import { COLLECTIONS, FIRESTORE_QUERIES } from '../../firestore-schema';
import { FirestoreStore, OperationCounter } from './stores';
import { journaledUsage, ReconciledBatch } from '../../domain/intake/intake-usage';
import { usageWrite } from './usage/usage-docs';
import { ifPresent } from './write';
import { bundleBody, readBundleBody } from '../../domain/intake/lane-bundle';

/** The writer name of the usage the journal counts (domain/intake/intake-usage.ts): `usage/<account>_<day>~intake`. */
export const INTAKE_USAGE_WRITER = 'intake';

/** A commit holds at most 500 writes: the batches' deletes and their usage documents. */
const COMMIT_WRITES = 500;

/** The batches in commits of at most COMMIT_WRITES writes, each its deletes and one usage document per (account, day) of its events. */
function removalParts(batches: readonly ReconciledBatch[], operationalEventPrefix: string): ReconciledBatch[][] {
  const parts: ReconciledBatch[][] = [];
  let part: ReconciledBatch[] = [];
  for (const b of batches) {
    if (part.length > 0 && part.length + 1 + journaledUsage([...part, b], operationalEventPrefix).length > COMMIT_WRITES) {
      parts.push(part);
      part = [];
    }
    part.push(b);
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

/** The intake journal (domain/intake/intake.ts): one document per batch, deleted once reconciled. */
export class FirestoreIntakeStore extends FirestoreStore implements IntakeStore {
  constructor(
    db: Firestore,
    ops?: OperationCounter,
    /** The types usage counts as Herald's own operational events (HERALD_OPERATIONAL_EVENT_PREFIX). */
    private readonly operationalEventPrefix = DEFAULT_OPERATIONAL_PREFIX,
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

  async due(before: Date, limit: number, after?: string): Promise<IntakeBatch[]> {
    const field = FIRESTORE_QUERIES.dueIntake.orderBy;
    let query = this.col.where(field, '<=', before.toISOString());
    if (after !== undefined) query = query.where(field, '>', after);
    const snap = await query.orderBy(field).limit(limit).get();
    this.ops.reads += Math.max(1, snap.size);
    return snap.docs.map((d) => {
      const stored = d.data() as StoredBatch;
      const { id, acceptedAt, progress } = stored;
      return { id, acceptedAt, events: eventsOf(stored), ...(progress !== undefined ? { progress } : {}) };
    });
  }

  async remove(batches: readonly ReconciledBatch[]): Promise<void> {
    for (const part of removalParts(batches, this.operationalEventPrefix)) await this.removeCounted(part);
  }

  /**
   * Deletes the batches and adds their events to the usage documents `usage/<account>_<day>~intake`,
   * in one commit. Each delete requires its batch to be there: if another reconciler removed one
   * first (or this commit landed before with its reply lost), the commit fails whole and the
   * batches go one by one, each counted only with its own delete.
   */
  private async removeCounted(part: readonly ReconciledBatch[]): Promise<void> {
    const usage = journaledUsage(part, this.operationalEventPrefix);
    const batch = this.db.batch();
    for (const b of part) batch.delete(this.col.doc(b.id), { exists: true });
    for (const u of usage) {
      const w = usageWrite(this.db, u, INTAKE_USAGE_WRITER, {});
      batch.set(w.ref, w.doc, { merge: true });
    }
    if (await ifPresent(() => batch.commit())) {
      this.ops.deletes += part.length;
      this.ops.writes += usage.length;
      return;
    }
    if (part.length > 1) for (const b of part) await this.removeCounted([b]);
  }

  async progress(id: string, events: number): Promise<void> {
    // A batch removed meanwhile (another reconciler finished it) is not written back.
    if (await ifPresent(() => this.col.doc(id).update({ progress: events }))) this.ops.writes++;
  }
}
