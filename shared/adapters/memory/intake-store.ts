import { journaledUsage, JournaledUsage, ReconciledBatch } from '../../domain/intake/intake-usage';
import { IntakeBatch } from '../../domain/intake/intake';
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
    const copy = { ...batch, events: [...batch.events] };
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

  async due(before: Date, limit: number, after?: string): Promise<IntakeBatch[]> {
    return [...this.batches.values()]
      .filter((b) => b.acceptedAt <= before.toISOString() && (after === undefined || b.acceptedAt > after))
      .sort((a, b) => a.acceptedAt.localeCompare(b.acceptedAt))
      .slice(0, limit);
  }

  /** Usage the removed batches counted (domain/intake/intake-usage.ts), as the Firestore store adds it to `usage/<account>_<day>~intake`. */
  readonly counted: JournaledUsage[] = [];

  async remove(batches: readonly ReconciledBatch[]): Promise<void> {
    const removed = batches.filter((b) => this.batches.delete(b.id));
    this.counted.push(...journaledUsage(removed));
  }

  async progress(id: string, events: number): Promise<void> {
    const batch = this.batches.get(id);
    if (batch) this.batches.set(id, { ...batch, progress: events });
  }
}
