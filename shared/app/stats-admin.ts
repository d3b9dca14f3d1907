import { z } from 'zod';
import { Caller, seesDestination } from '../domain/account';
import { issuesFromZod } from '../domain/event';
import { splitDestinationId } from '../domain/ids';
import { bucketStart, RateBucket } from '../domain/success-rate';
import { Clock, DeliveryStore, DestinationStore } from '../ports';
import { RateRecorder } from './rate-recorder';
import { AdminResult, destinationsOfAccount } from './destinations-admin';
import { forEachLimited } from './for-each-limited';

/**
 * The console's overview charts: an account's attempts over the last hour or day, from the
 * success-rate counters every attempt already adds to (shared/domain/success-rate.ts), and
 * its QUEUED and DEAD deliveries as count aggregations. Never a scan of the deliveries.
 */
export interface StatsAdminDeps {
  destinations: Pick<DestinationStore, 'list'>;
  deliveries: Pick<DeliveryStore, 'countByStatus'>;
  /** The counters' buckets one by one (not the recorder's summary: the chart needs each). */
  rates: Pick<RateRecorder, 'buckets'>;
  clock: Clock;
  /** The counters' bucket, a minute of scaled time (rate-recorder.ts rateBucketMs). */
  rateBucketMs: number;
  /** HERALD_TIME_SCALE: the windows are scaled as the counters are. */
  timeScale: number;
}

export const STATS_WINDOWS = { '1h': { ms: 3_600_000, points: 60 }, '24h': { ms: 86_400_000, points: 96 } } as const;

export const statsQuerySchema = z.strictObject(
  { window: z.enum(['1h', '24h'], { error: 'window must be "1h" or "24h"' }).default('1h') },
  { error: 'the query takes window (1h or 24h) only' },
);

export interface StatsPoint {
  start: string;
  attempts: number;
  successes: number;
  failures: number;
}

export interface AccountStats {
  window: '1h' | '24h';
  bucketMs: number;
  series: StatsPoint[];
  successRate?: number;
  queued: number;
  dead: number;
}

/** Destinations read at once. */
const CONCURRENCY = 16;

/** The series of a window: `points` buckets (each a whole number of counter buckets), oldest first, the last one holding now. */
export function statsSeries(buckets: readonly RateBucket[], now: number, windowMs: number, points: number, counterBucketMs: number): { bucketMs: number; series: StatsPoint[] } {
  const bucketMs = Math.max(counterBucketMs, Math.ceil(windowMs / points / counterBucketMs) * counterBucketMs);
  const last = bucketStart(now, bucketMs);
  const first = last - (points - 1) * bucketMs;
  const series = Array.from({ length: points }, (_, i) => ({ start: new Date(first + i * bucketMs).toISOString(), attempts: 0, successes: 0, failures: 0 }));
  for (const b of buckets) {
    const i = Math.floor((b.start - first) / bucketMs);
    const point = series[i];
    if (i < 0 || !point) continue;
    point.attempts += b.attempts;
    point.successes += b.successes;
    point.failures += b.failures;
  }
  return { bucketMs, series };
}

export async function getAccountStats(deps: StatsAdminDeps, caller: Caller, account: string, query: Record<string, unknown>): Promise<AdminResult<AccountStats>> {
  const parsed = statsQuerySchema.safeParse(query);
  if (!parsed.success) return { status: 400, body: { error: 'invalid query', issues: issuesFromZod(parsed.error) } };
  const window = parsed.data.window;
  const { ms, points } = STATS_WINDOWS[window];
  const windowMs = ms / deps.timeScale;
  const now = deps.clock.now().getTime();
  const ids = (await destinationsOfAccount(deps.destinations, account)).map((d) => d.id).filter((id) => seesDestination(caller, splitDestinationId(id).id));
  const buckets: RateBucket[] = [];
  const since = bucketStart(now, deps.rateBucketMs) - windowMs;
  await forEachLimited(ids, CONCURRENCY, async (id) => {
    buckets.push(...(await deps.rates.buckets(id, since)));
  });
  const { bucketMs, series } = statsSeries(buckets, now, windowMs, points, deps.rateBucketMs);
  const successes = series.reduce((n, p) => n + p.successes, 0);
  const failures = series.reduce((n, p) => n + p.failures, 0);
  const count = async (status: 'QUEUED' | 'DEAD') => (ids.length === 0 || !deps.deliveries.countByStatus ? 0 : deps.deliveries.countByStatus(ids, status));
  const [queued, dead] = await Promise.all([count('QUEUED'), count('DEAD')]);
  return {
    status: 200,
    body: { window, bucketMs, series, ...(successes + failures > 0 ? { successRate: successes / (successes + failures) } : {}), queued, dead },
  };
}
