import { RecentBucket, RecentEntry } from '../domain/delivery/recent-log';
import { LastError } from '../domain/retry/delivery';
import { LatencyHistogram } from '../domain/stats/latency-histogram';
import type { RateRollup } from '../domain/stats/rate-rollup';
import { RateBucket, RateCounts, SettledCounts } from '../domain/stats/success-rate';
import type { UsageCounts } from '../domain/usage/usage';

/** Each destination's success-rate counters, written in flushes. Only shared/adapters/ implements these with SDKs and sockets. */

/** Counts to add to one destination's bucket (see shared/domain/stats/success-rate.ts). */
export interface CounterDelta extends RateCounts {
  destinationId: string;
  bucketStart: number;
  /** Newest first; the store keeps the newest few. */
  lastErrors: LastError[];
  /** Attempt latencies, sparse (only the bins hit): the store adds each bin in the same write. */
  latency?: LatencyHistogram;
  /** Deliveries that became DEAD or QUEUED in this bucket: added in the same write. */
  settled?: SettledCounts;
  /** The writer's newest records created in this bucket (domain/delivery/recent-log.ts), replacing its list in the same write. */
  recent?: { writer: string; entries: readonly RecentEntry[] };
  /**
   * The shared document (of this bucket) the delta goes into with other sparse destinations'
   * — one writer's, of one account, named by it (`<account>_~…`: app/destinations/counter-writer.ts) — instead of
   * the destination's own.
   */
  group?: string;
}

/** One account's usage in one UTC day, as one writer counted it since its last flush (domain/usage/usage.ts). */
export interface UsageDelta {
  account: string;
  day: string;
  counts: UsageCounts;
}

/**
 * A flush, named in every counter document it writes (in the same write, so at no cost): after a
 * commit failed, one read of one of its documents tells whether it landed (a reply lost on its
 * way back), since increments added again would be counted twice. One writer's flushes go one
 * after another, and none is written until the last one's outcome is known, so its mark in a
 * document is still its own when read.
 */
export interface CounterFlushMark {
  writer: string;
  flush: number;
}

/** A commit of a flush that failed: its deltas, and a document of it with the flush's mark. */
export interface UnsureCounterWrite {
  deltas: CounterDelta[];
  usage: UsageDelta[];
  probe: { doc: string; mark: CounterFlushMark };
}

/** CounterStore.add's failure when commits of a marked flush failed: every other commit is written. */
export class CountersNotWritten extends Error {
  constructor(
    readonly unsure: UnsureCounterWrite[],
    readonly writeError: unknown,
  ) {
    super(writeError instanceof Error ? writeError.message : String(writeError));
    this.name = 'CountersNotWritten';
  }
}

/**
 * Each destination's counters (success rate, latency, DEAD/QUEUED counts; the delivery log's
 * head rides in the same documents). Each writer adds to its own shard of a (destination, bucket) pair,
 * so no counter document takes more than one write per flush of one writer.
 */
export interface CounterStore {
  /**
   * One write per document: a delta without a `group` is its destination's own; all deltas of one
   * (bucket, group), one shared document; each usage delta, its (account, day, writer) document
   * (`usage`), in the same commits, under the same mark. With `mark`, each document carries it, and commits that
   * fail are named in a CountersNotWritten (the others are written); without, or any other error,
   * none is known written.
   */
  add(deltas: readonly CounterDelta[], shard: number, mark?: CounterFlushMark, usage?: readonly UsageDelta[]): Promise<void>;
  /**
   * Each day's usage of the account from `from` to `to` (`YYYY-MM-DD`, included), every writer's
   * document of a day summed: one query. `account` undefined: every account's, per account.
   */
  usage(account: string | undefined, from: string, to: string): Promise<Map<string, Map<string, UsageCounts>>>;
  /** Whether each failed commit landed after all: its probe document carries its mark (a read each). */
  landed(probes: readonly UnsureCounterWrite['probe'][]): Promise<boolean[]>;
  /** Every shard of every bucket of the destination that started at or after `since` (epoch ms), own and shared documents, merged per bucket. */
  window(destinationId: string, since: number): Promise<RateBucket[]>;
  /**
   * `window` of each destination, read together: shared documents once for all of them (the
   * suspension check); with `before`, only the buckets that started before it.
   */
  windows(destinationIds: readonly string[], since: number, before?: number): Promise<Map<string, RateBucket[]>>;
  /**
   * The log head of the destination's newest buckets (since `since`), newest first, every
   * writer's list of a bucket together: at most `maxDocs` documents read of each kind (own,
   * shared), and every bucket that may have been cut by that limit left out.
   */
  recentLog(destinationId: string, since: number, maxDocs: number): Promise<RecentBucket[]>;
  /** Every counter document (own and shared) of the buckets since `since`, read whole, merged per destination and bucket: the suspension check's one query. */
  bucketsSince(since: number): Promise<Map<string, RateBucket[]>>;
  /**
   * The destinations' rollups (domain/stats/rate-rollup.ts), those that exist, each with the
   * version a write of it must match: a read per rollup found, and one per 30 destinations
   * asked that have none (most active destinations of a quiet deployment have none).
   */
  rollups(destinationIds: readonly string[]): Promise<Map<string, { rollup: RateRollup; version: string }>>;
  /**
   * Writes each rollup if the stored one is still at its `version` (undefined: none stored yet),
   * a write each, not all or nothing: false for one refused (another write came first).
   */
  putRollups(writes: readonly { rollup: RateRollup; version: string | undefined }[]): Promise<boolean[]>;
  /** Where the last complete suspension check folded to (the first bucket it left unfolded); undefined before any. */
  foldCursor(): Promise<number | undefined>;
  setFoldCursor(foldedTo: number): Promise<void>;
}
