import { addHistograms } from '../../domain/latency-histogram';
import { RateBucket } from '../../domain/success-rate';
import { bucketsOf, RecentBucket, RecentEntry } from '../../domain/recent-log';
import { RateDelta, RateStore } from '../../ports';
import { mergeShards } from '../firestore-rates';

/** Success-rate counters in memory, for unit tests; it records every add so tests can see the write pattern. */
export class MemoryRateStore implements RateStore {
  private readonly rows = new Map<string, Omit<RateDelta, 'recent' | 'settled'> & { shard: number; dead?: number; queued?: number }>();
  /** Each (bucket, shard, writer)'s log-head list, as the last write left it. */
  private readonly recent = new Map<string, { destinationId: string; start: number; entries: RecentEntry[] }>();
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
      if (d.latency && Object.keys(d.latency).length) row.latency = addHistograms(row.latency, d.latency);
      if (d.settled?.dead) row.dead = (row.dead ?? 0) + d.settled.dead;
      if (d.settled?.queued) row.queued = (row.queued ?? 0) + d.settled.queued;
      if (d.recent) this.recent.set(`${key}~${d.recent.writer}`, { destinationId: d.destinationId, start: d.bucketStart, entries: [...d.recent.entries] });
      this.rows.set(key, row);
    }
    this.writes.push({ at: Date.now(), docs });
  }

  async activeSince(since: number): Promise<string[]> {
    return [...new Set([...this.rows.values()].filter((r) => r.bucketStart >= since).map((r) => r.destinationId))];
  }

  async recentLog(destinationId: string, since: number, maxDocs: number): Promise<RecentBucket[]> {
    const lists = [...this.recent.values()].filter((r) => r.destinationId === destinationId && r.start >= since).sort((a, b) => b.start - a.start).slice(0, maxDocs);
    return bucketsOf(lists, lists.length === maxDocs);
  }

  async window(destinationId: string, since: number): Promise<RateBucket[]> {
    return mergeShards([...this.rows.values()].filter((r) => r.destinationId === destinationId && r.bucketStart >= since));
  }
}
