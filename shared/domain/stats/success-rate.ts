import { AttemptResult, isSuccess, LastError } from '../retry/delivery';
import { LatencyHistogram } from './latency-histogram';
import { ThresholdPolicy } from '../retry/delivery-policy';

/**
 * Seed 000's success rate: what each attempt does to it, the rolling window's sums, and the
 * threshold-suspension rule. Pure: the caller passes the times.
 */

/** What one attempt does to the success rate. */
export type RateOutcome = 'success' | 'failure' | 'ignored';

/**
 * A 2xx succeeds; 5xx, every other 4xx, timeouts and network errors fail. A 429 is left out
 * while its event has waited at most `windowMs` since it was published (throttled events are
 * not failures before the hour), and fails after. 3xx, 404 and 410 suspend at once: counted
 * as failures too, so the rate shows them.
 */
export function rateOutcome(result: AttemptResult, waitedMs: number, windowMs: number): RateOutcome {
  if (isSuccess(result)) return 'success';
  if (result.kind === 'response' && result.status === 429) return waitedMs > windowMs ? 'failure' : 'ignored';
  return 'failure';
}

/** Counts of one destination over some span: every attempt, and those that count for or against the rate. */
export interface RateCounts {
  attempts: number;
  successes: number;
  failures: number;
}

/** A counter bucket: the counts of one destination's attempts that started in [start, start + bucketMs). */
export interface RateBucket extends RateCounts {
  destinationId: string;
  /** Epoch ms. */
  start: number;
  /** The most recent failures in the bucket, newest first. */
  lastErrors?: LastError[];
  /** The attempts' latencies (those recorded with one), by bin of domain/stats/latency-histogram.ts; absent with none. */
  latency?: LatencyHistogram;
  /** Deliveries that became DEAD, or QUEUED, in the bucket (the console charts them); absent: none. */
  settled?: SettledCounts;
}

/**
 * A bucket's counts beside its attempts: deliveries that entered a state (DEAD, given up, or
 * QUEUED, held for an operator or a suspension), and what a destination's filter did with the
 * events of its eventTypes where they were routed (domain/destinations/event-filter.ts):
 * passed, dropped (`filtered`) or failed on (`filterErrors`, dropped too). Added in the writes
 * counters take anyway.
 */
export interface SettledCounts {
  dead?: number;
  queued?: number;
  filterPassed?: number;
  filtered?: number;
  filterErrors?: number;
}

export const SETTLED_KEYS = ['dead', 'queued', 'filterPassed', 'filtered', 'filterErrors'] as const;

/** Two buckets' settled counts, added (absent when they come to nothing). */
export function addSettled(a: SettledCounts | undefined, b: SettledCounts | undefined): SettledCounts | undefined {
  let sum: SettledCounts | undefined;
  for (const key of SETTLED_KEYS) {
    const n = (a?.[key] ?? 0) + (b?.[key] ?? 0);
    if (n) (sum ??= {})[key] = n;
  }
  return sum;
}

/** The settled counts of stored fields (a document's, a row's): those of SETTLED_KEYS that are there. */
export function settledOf(fields: Partial<Record<(typeof SETTLED_KEYS)[number], number>>): SettledCounts | undefined {
  return addSettled(fields, undefined);
}

export const NO_COUNTS: RateCounts = Object.freeze({ attempts: 0, successes: 0, failures: 0 });

/** Buckets are minutes (of scaled time): a rolling hour is its last 60 of them. */
export function bucketStart(at: number, bucketMs: number): number {
  return Math.floor(at / bucketMs) * bucketMs;
}

export interface RateSummary extends RateCounts {
  /** successes / (successes + failures); absent with nothing counted. */
  successRate?: number;
  /** Newest first, at most `RECENT_ERRORS`. */
  recentErrors: LastError[];
  /** What the destination's filter did in the window (SettledCounts); absent: nothing counted. */
  settled?: SettledCounts;
}

export const RECENT_ERRORS = 5;

/** The window (now − windowMs, now]: every bucket that began after its start, summed. */
export function summarize(buckets: readonly RateBucket[], now: number, windowMs: number): RateSummary {
  const since = now - windowMs;
  const inWindow = buckets.filter((b) => b.start >= since && b.start <= now);
  const sum = inWindow.reduce<RateCounts>((t, b) => ({ attempts: t.attempts + b.attempts, successes: t.successes + b.successes, failures: t.failures + b.failures }), NO_COUNTS);
  const counted = sum.successes + sum.failures;
  const recentErrors = inWindow
    .flatMap((b) => b.lastErrors ?? [])
    .sort((a, b) => b.at.localeCompare(a.at))
    .slice(0, RECENT_ERRORS);
  const settled = inWindow.reduce<SettledCounts | undefined>((t, b) => addSettled(t, b.settled), undefined);
  return { ...sum, ...(counted > 0 ? { successRate: sum.successes / counted } : {}), recentErrors, ...(settled ? { settled } : {}) };
}

export type ThresholdVerdict = { suspend: false; why: string } | { suspend: true; reason: string };

/**
 * Suspend below the threshold's success rate once the sample (attempts counted for or
 * against) reaches its minimum. Exactly at the threshold is not below it.
 */
export function thresholdVerdict(summary: RateCounts, threshold: ThresholdPolicy): ThresholdVerdict {
  const sample = summary.successes + summary.failures;
  if (sample < threshold.minSample) return { suspend: false, why: `${sample} counted attempts, below the minimum sample of ${threshold.minSample}` };
  const rate = summary.successes / sample;
  const percent = (r: number) => `${(r * 100).toFixed(r * 100 === Math.round(r * 100) ? 0 : 1)} %`;
  if (rate >= threshold.successRate) return { suspend: false, why: `success rate ${percent(rate)} is not below ${percent(threshold.successRate)}` };
  return {
    suspend: true,
    reason: `success rate ${percent(rate)} over the last ${windowText(threshold.windowMs)} (${summary.successes} of ${sample} attempts) is below ${percent(threshold.successRate)}`,
  };
}

function windowText(ms: number): string {
  if (ms % 3_600_000 === 0) return ms === 3_600_000 ? 'hour' : `${ms / 3_600_000} h`;
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  return `${ms / 1000} s`;
}
