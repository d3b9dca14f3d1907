import { FieldPath } from '@google-cloud/firestore';
import { HeraldEvent } from '../../domain/events/event';
import { IntakeBatch } from '../../domain/intake/intake';
import { IntakeStore } from '../../ports/intake';
import { COLLECTIONS, FIRESTORE_QUERIES } from '../../firestore-schema';
import { chunks, FirestoreStore } from './stores';
import { ifPresent } from './write';

type StoredBatch = Omit<IntakeBatch, 'events'> & { events: { attributes: Record<string, string>; data: Buffer }[] };

/** The intake journal (domain/intake/intake.ts): one document per batch, deleted once reconciled. */
export class FirestoreIntakeStore extends FirestoreStore implements IntakeStore {
  private get col() {
    return this.db.collection(COLLECTIONS.intake);
  }

  async add(batch: IntakeBatch): Promise<void> {
    const doc: StoredBatch = { ...batch, events: batch.events.map((e) => ({ attributes: { ...e.attributes }, data: e.data })) };
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

  async progress(id: string, events: number): Promise<void> {
    // A batch removed meanwhile (another reconciler finished it) is not written back.
    if (await ifPresent(() => this.col.doc(id).update({ progress: events }))) this.ops.writes++;
  }
}
