import { journaledUsage, JournaledUsage, ReconciledBatch } from '../../domain/intake/intake-usage';
import { IntakeBatch, intakeBatchTime } from '../../domain/intake/intake';
import { IntakeStore } from '../../ports/intake';

/**
 * The intake journal in memory, for unit tests. `failNext` makes the next add reject (nothing
 * written), `failing` every add while it is set; `loseNextReply`, land and then reject, as a write whose reply was lost; `failHolds`,
 * the read-back reject.
 */
export class MemoryIntakeStore implements IntakeStore {
  readonly batches = new Map<string, IntakeBatch>();
  /** Every add, in order (a batch's events as they were when written). */
  readonly writes: IntakeBatch[] = [];
  failNext: Error | undefined;
  failing: Error | undefined;
  loseNextReply: Error | undefined;
  failHolds: Error | undefined;

  async add(batch: IntakeBatch): Promise<void> {
    if (this.failing) throw this.failing;
    if (this.failNext) {
      const e = this.failNext;
      this.failNext = undefined;
      throw e;
    }
    const copy = { ...batch, events: [...batch.events], ...(batch.refs ? { refs: structuredClone(batch.refs) } : {}) };
    this.writes.push(copy);
    this.batches.set(batch.id, copy);
    if (this.loseNextReply) {
      const e = this.loseNextReply;
      this.loseNextReply = undefined;
      throw e;
    }
  }

  async holds(id: string): Promise<boolean> {
    if (this.failHolds) throw this.failHolds;
    return this.batches.has(id);
  }

  /** Ids of the batches removed (what Firestore keeps in `intake-removed`). */
  readonly removed = new Set<string>();
  /** Adopted records: delivery id → the batch that counted it. */
  readonly adopted = new Map<string, string>();

  async journaled(ids: readonly string[]): Promise<Set<string>> {
    // As Firestore's, which finds removed ids by their acceptance time: an id without one counts as journaled.
    return new Set(ids.filter((id) => this.batches.has(id) || this.removed.has(id) || intakeBatchTime(id) === undefined));
  }

  async adoptedBy(deliveryIds: readonly string[]): Promise<Map<string, string>> {
    return new Map(deliveryIds.flatMap((id) => { const by = this.adopted.get(id); return by === undefined ? [] : [[id, by] as const]; }));
  }

  /** Reads of `get`, by batch id. */
  readonly gets: string[] = [];

  async get(id: string): Promise<IntakeBatch | undefined> {
    this.gets.push(id);
    return this.batches.get(id);
  }

  async due(before: Date, limit: number, after?: string): Promise<IntakeBatch[]> {
    return [...this.batches.values()]
      .filter((b) => b.acceptedAt <= before.toISOString() && (after === undefined || b.acceptedAt > after))
      .sort((a, b) => a.acceptedAt.localeCompare(b.acceptedAt))
      .slice(0, limit);
  }

  /** Usage the removed batches counted (domain/intake/intake-usage.ts), as the Firestore store adds it to `usage/<account>_<day>~intake`. */
  readonly counted: JournaledUsage[] = [];

  /** As Firestore's: a batch gone already, or one with a record another batch adopted meanwhile, is neither removed nor counted. */
  async remove(batches: readonly ReconciledBatch[]): Promise<void> {
    const removed: ReconciledBatch[] = [];
    for (const b of batches) {
      if (!this.batches.has(b.id) || (b.adopted ?? []).some((id) => this.adopted.has(id))) continue;
      removed.push(b);
      this.batches.delete(b.id);
      this.removed.add(b.id);
      for (const id of b.adopted ?? []) this.adopted.set(id, b.id);
    }
    this.counted.push(...journaledUsage(removed));
  }

  async progress(id: string, events: number): Promise<void> {
    const batch = this.batches.get(id);
    if (batch) this.batches.set(id, { ...batch, progress: events });
  }
}
