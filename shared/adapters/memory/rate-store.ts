import { RateBucket } from '../../domain/success-rate';
import { RateDelta, RateStore } from '../../ports';
import { mergeShards } from '../firestore-rates';

/** Success-rate counters in memory, for unit tests; it records every add so tests can see the write pattern. */
export class MemoryRateStore implements RateStore {
  private readonly rows = new Map<string, RateDelta & { shard: number }>();
  /** Every add: when, and which documents it wrote. */
  readonly writes: { at: number; docs: string[] }[] = [];

  async add(deltas: readonly RateDelta[], shard: number): Promise<void> {
    if (deltas.length === 0) return;
    const docs: string[] = [];
    for (const d of deltas) {
      const key = `${d.destinationId}~${d.bucketStart}~${shard}`;
      docs.push(key);
      const row = this.rows.get(key) ?? { destinationId: d.destinationId, bucketStart: d.bucketStart, shard, attempts: 0, successes: 0, failures: 0, lastErrors: [] };
      row.attempts += d.attempts;
      row.successes += d.successes;
      row.failures += d.failures;
      if (d.lastErrors.length) row.lastErrors = d.lastErrors;
      this.rows.set(key, row);
    }
    this.writes.push({ at: Date.now(), docs });
  }

  async activeSince(since: number): Promise<string[]> {
    return [...new Set([...this.rows.values()].filter((r) => r.bucketStart >= since).map((r) => r.destinationId))];
  }

  async window(destinationId: string, since: number): Promise<RateBucket[]> {
    return mergeShards([...this.rows.values()].filter((r) => r.destinationId === destinationId && r.bucketStart >= since));
  }
}
