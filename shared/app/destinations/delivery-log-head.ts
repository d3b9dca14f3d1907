import { RecentBucket, RecentEntry, bucketsOf, headOf, keepNewest, recentList } from '../../domain/delivery/recent-log';
import { headEntryId } from '../../domain/delivery/grouped-outcomes';
import { Clock } from '../../ports/clock';
import { CounterStore } from '../../ports/counters';
import { DestinationCounters } from './destination-counters';

/** How far back the log head is looked for: the counters' lifetime (adapters/firestore/counters.ts KEEP_MS). */
const LOG_HEAD_REACH_MS = 25 * 3600_000;
/** Counter documents read for the head: the newest few first, then more buckets' worth. */
const LOG_HEAD_DOCS = [4, 40] as const;

/**
 * The head of each destination's delivery log (domain/delivery/recent-log.ts): this writer's newest
 * records created per (destination, bucket), kept while the bucket is recent. The lists cost
 * no write of their own: each rides in the destination's counter document of its bucket
 * (DestinationCounters), written again whole with each flush, so the newest page of the log
 * reads a few counter documents and the records by id, never a query.
 */
export class DeliveryLogHead {
  private readonly lists = new Map<string, { destinationId: string; start: number; entries: RecentEntry[] }>();
  /** The bucket in which the lists were last pruned. */
  private prunedAt = -Infinity;

  constructor(
    private readonly store: Pick<CounterStore, 'recentLog'>,
    private readonly clock: Clock,
    private readonly counters: DestinationCounters,
  ) {
    counters.carry(this);
  }

  /**
   * A delivery record was created (its first attempt, deferral or queueing), or written again:
   * into the head, written with the counters' next flush; a group member under its group's id
   * beside its own (domain/delivery/grouped-outcomes.ts headEntryId). Not counted in usage here: a delivery
   * is counted with its journal batch's removal (domain/intake/intake-usage.ts), which no kill loses.
   */
  created(destinationId: string, deliveryId: string, publishedAt: string, at: Date, group?: string): void {
    const start = this.counters.bucketOf(destinationId, at);
    const key = `${destinationId}~${start}`;
    const list = this.lists.get(key) ?? { destinationId, start, entries: [] };
    list.entries = keepNewest(list.entries, [publishedAt, headEntryId(deliveryId, group)]);
    this.lists.set(key, list);
    // Older buckets are written for good: nothing is created in them any more. Looked at once a bucket, not per record.
    if (start > this.prunedAt) {
      this.prunedAt = start;
      const oldest = start - 2 * this.counters.options.bucketMs;
      for (const [k, l] of this.lists) if (l.start < oldest) this.lists.delete(k);
    }
  }

  /** This writer's list of the destination's bucket starting at `bucketStart` (the counters write it with the bucket's counts). */
  listOf(destinationId: string, bucketStart: number): readonly RecentEntry[] | undefined {
    return this.lists.get(`${destinationId}~${bucketStart}`)?.entries;
  }

  /**
   * The destination's newest `want` records if the head is sure of them (domain/delivery/recent-log.ts
   * headOf): the stored lists of its newest buckets and this writer's own, not yet flushed.
   */
  async head(destinationId: string, want: number): Promise<RecentEntry[] | undefined> {
    const since = this.clock.now().getTime() - LOG_HEAD_REACH_MS;
    // The newest few documents prove a busy destination's head; a quiet one's needs more buckets.
    for (const docs of LOG_HEAD_DOCS) {
      const stored = await this.store.recentLog(destinationId, since, docs);
      const head = headOf(this.withOwn(destinationId, stored), want);
      if (head) return head;
    }
    return undefined;
  }

  /** `stored` with this writer's own lists of the same destination added (not yet flushed, or written already). */
  private withOwn(destinationId: string, stored: readonly RecentBucket[]): RecentBucket[] {
    const oldestStored = stored.length ? Math.min(...stored.map((b) => b.start)) : -Infinity;
    // A bucket older than those read would claim a reach the stored lists do not have.
    const own = [...this.lists.values()].filter((l) => l.destinationId === destinationId && l.start >= oldestStored).map((l) => recentList(l.start, l.entries));
    return bucketsOf([...stored, ...own]);
  }
}
