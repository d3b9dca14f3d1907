import { z } from 'zod';
import { Caller, seesDestination } from '../../domain/access/account';
import { issuesFromZod } from '../../domain/events/event';
import { DESTINATION_ID, internalDestinationId, splitDestinationId } from '../../domain/ids';
import { addHistograms, LatencyHistogram, percentile } from '../../domain/stats/latency-histogram';
import { bucketStart, RateBucket } from '../../domain/stats/success-rate';
import { Clock } from '../../ports/clock';
import { DeliveryStore } from '../../ports/deliveries';
import { DestinationStore } from '../../ports/destinations';
import { DAY_POINTS, DestinationCounters } from '../destinations/destination-counters';
import { destinationsOfAccount, notFound } from './destinations-admin';
import { Outcome } from '../support/outcome';

/**
 * The console's overview charts: an account's attempts over the last hour or day, from the
 * success-rate counters every attempt already adds to (shared/domain/stats/success-rate.ts), and
 * its QUEUED and DEAD deliveries as count aggregations. Never a scan of the deliveries.
 * Attempt latency (p50, p99) comes from the counters' latency histograms
 * (domain/stats/latency-histogram.ts): within one bin's width of the exact percentile.
 */
export interface StatsAdminDeps {
  destinations: Pick<DestinationStore, 'listAccount'>;
  deliveries: Pick<DeliveryStore, 'countByStatus'>;
  /** The counters' buckets (not the recorder's summary: the chart needs each), from their rollups and the counters after. */
  counters: Pick<DestinationCounters, 'series' | 'rollupShape'>;
  clock: Clock;
  /** The counters' bucket, a minute of scaled time (destination-counters.ts counterBucketMs). */
  counterBucketMs: number;
  /** HERALD_TIME_SCALE: the windows are scaled as the counters are. */
  timeScale: number;
}

export const STATS_WINDOWS = { '1h': { ms: 3_600_000, points: 60 }, '24h': { ms: 86_400_000, points: DAY_POINTS } } as const;

export const statsQuerySchema = z.strictObject(
  {
    window: z.enum(['1h', '24h'], { error: 'window must be "1h" or "24h"' }).default('1h'),
    destination: z
      .string({ error: 'destination must be one destination id, given once' })
      .regex(DESTINATION_ID, { error: 'destination must be a destination id: 1-63 lowercase letters, digits and hyphens, starting and ending with a letter or digit' })
      .optional()
      .describe("one of the account's destinations, by its id: that destination's series alone"),
    counts: z
      .enum(['true', 'false'], { error: 'counts must be "true" or "false"' })
      .default('true')
      .describe('"false" leaves out the queued and dead counts (count aggregations): a sparkline needs only the series'),
  },
  { error: 'the query takes window (1h or 24h), destination (a destination id) and counts (true or false) only' },
);

export interface StatsPoint {
  start: string;
  attempts: number;
  successes: number;
  failures: number;
  /** Attempt latency percentiles of the point, ms; absent when no attempt in it has a latency. */
  p50Ms?: number;
  p99Ms?: number;
  /** Deliveries that became DEAD, and QUEUED, in the point's span. */
  dead: number;
  queued: number;
}

/** Attempt latency percentiles, ms: each within one histogram bin's width of the exact one. */
export interface LatencyPercentiles {
  p50: number;
  p99: number;
}

export interface AccountStats {
  window: '1h' | '24h';
  /** The destination asked for (its id in the account); absent: every destination the caller sees. */
  destination?: string;
  bucketMs: number;
  series: StatsPoint[];
  successRate?: number;
  /** Over the whole window; absent with no attempt latency recorded. */
  latencyMs?: LatencyPercentiles;
  /** Absent with `counts=false`. */
  queued?: number;
  dead?: number;
}

/** A histogram's p50 and p99, rounded to 0.1 ms; undefined when it is empty. */
export function latencyPercentiles(hist: LatencyHistogram | undefined): LatencyPercentiles | undefined {
  const p50 = percentile(hist, 0.5);
  const p99 = percentile(hist, 0.99);
  const round = (v: number) => Math.round(v * 10) / 10;
  return p50 === undefined || p99 === undefined ? undefined : { p50: round(p50), p99: round(p99) };
}

/**
 * The series of a window: `points` buckets (each a whole number of counter buckets), oldest
 * first, the last one holding now; with `latency`, the window's latency histogram summed.
 */
export function statsSeries(buckets: readonly RateBucket[], now: number, windowMs: number, points: number, counterBucketMs: number): { bucketMs: number; series: StatsPoint[]; latency: LatencyHistogram } {
  const bucketMs = pointMs(windowMs, points, counterBucketMs);
  const last = bucketStart(now, bucketMs);
  const first = last - (points - 1) * bucketMs;
  const series: StatsPoint[] = Array.from({ length: points }, (_, i) => ({ start: new Date(first + i * bucketMs).toISOString(), attempts: 0, successes: 0, failures: 0, dead: 0, queued: 0 }));
  const latencies: (LatencyHistogram | undefined)[] = new Array<LatencyHistogram | undefined>(points);
  for (const b of buckets) {
    const i = Math.floor((b.start - first) / bucketMs);
    const point = series[i];
    if (i < 0 || !point) continue;
    point.attempts += b.attempts;
    point.successes += b.successes;
    point.failures += b.failures;
    point.dead += b.settled?.dead ?? 0;
    point.queued += b.settled?.queued ?? 0;
    if (b.latency) latencies[i] = addHistograms(latencies[i], b.latency);
  }
  series.forEach((point, i) => {
    const p = latencyPercentiles(latencies[i]);
    if (p) Object.assign(point, { p50Ms: p.p50, p99Ms: p.p99 });
  });
  return { bucketMs, series, latency: addHistograms(...latencies) };
}

/** A chart point's span: a whole number of counter buckets. */
function pointMs(windowMs: number, points: number, counterBucketMs: number): number {
  return Math.max(counterBucketMs, Math.ceil(windowMs / points / counterBucketMs) * counterBucketMs);
}

export async function getAccountStats(deps: StatsAdminDeps, caller: Caller, account: string, query: Record<string, unknown>): Promise<Outcome<AccountStats>> {
  const parsed = statsQuerySchema.safeParse(query);
  if (!parsed.success) return { kind: 'invalid', body: { error: 'invalid query', issues: issuesFromZod(parsed.error) } };
  const { window, destination, counts } = parsed.data;
  const { ms, points } = STATS_WINDOWS[window];
  const windowMs = ms / deps.timeScale;
  const now = deps.clock.now().getTime();
  const seen = (await destinationsOfAccount(deps.destinations, account)).map((d) => d.id).filter((id) => seesDestination(caller, splitDestinationId(id).id));
  // One destination: not found, as on every destination route when the caller has none of that id (or may not see it).
  const ids = destination === undefined ? seen : seen.filter((id) => id === internalDestinationId(account, destination));
  if (destination !== undefined && ids.length === 0) return notFound(internalDestinationId(account, destination));
  const since = bucketStart(now, deps.counterBucketMs) - windowMs;
  // The day's points are the rollups' coarse buckets: each sums whole into one point (a minute chart reads minutes).
  const coarse = pointMs(windowMs, points, deps.counterBucketMs) === deps.counters.rollupShape.coarseMs && points === DAY_POINTS;
  const buckets: RateBucket[] = [...(await deps.counters.series(ids, since, coarse)).values()].flat();
  const { bucketMs, series, latency } = statsSeries(buckets, now, windowMs, points, deps.counterBucketMs);
  const latencyMs = latencyPercentiles(latency);
  const successes = series.reduce((n, p) => n + p.successes, 0);
  const failures = series.reduce((n, p) => n + p.failures, 0);
  const count = async (status: 'QUEUED' | 'DEAD') => (ids.length === 0 || !deps.deliveries.countByStatus ? 0 : deps.deliveries.countByStatus(ids, status));
  const [queued, dead] = counts === 'true' ? await Promise.all([count('QUEUED'), count('DEAD')]) : [];
  return {
    kind: 'ok',
    body: {
      window,
      ...(destination !== undefined ? { destination } : {}),
      bucketMs,
      series,
      ...(successes + failures > 0 ? { successRate: successes / (successes + failures) } : {}),
      ...(latencyMs ? { latencyMs } : {}),
      ...(queued !== undefined && dead !== undefined ? { queued, dead } : {}),
    },
  };
}
