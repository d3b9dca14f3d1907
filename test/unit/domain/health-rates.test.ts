import { baselineOf, bucketQuantile, bucketsBetween, HealthSample, keepSamples, overviewQuerySchema, summarize } from '../../../shared/domain/health/health-rates';
import { LaneAges } from '../../../shared/domain/health/lane-ages';

/** The Overview panel's numbers from cumulative samples: rates over the window, p99 from buckets. */

const BOUNDS = [10, 50, 100, 500];
const sample = (at: number, accepted: number, delivered: number, dead: number, counts = [0, 0, 0, 0, 0]): HealthSample => ({ at, accepted, delivered, deadLettered: dead, endToEnd: { bounds: BOUNDS, counts } });

test('rates are the change since the newest sample at or before the window began, per second', () => {
  const samples = [sample(0, 0, 0, 0), sample(100_000, 50, 40, 1), sample(200_000, 100, 90, 2)];
  const latest = sample(400_000, 700, 690, 5);
  // A 5-minute window at 400 s starts at 100 s: that sample is the baseline.
  expect(baselineOf(samples, latest.at, 300_000)?.at).toBe(100_000);
  expect(summarize(samples, latest, 300_000)).toMatchObject({ acceptedPerSecond: 2.167, deliveredPerSecond: 2.167, deadLettered: 4, accepted: 650, delivered: 650, coveredSeconds: 300 });
  // A 1-minute window starts at 340 s: the newest before it (200 s) is the baseline, so the span is 200 s.
  expect(summarize(samples, latest, 60_000)).toMatchObject({ accepted: 600, coveredSeconds: 200, acceptedPerSecond: 3 });
});

test('a process younger than the window: its rates are over its life so far', () => {
  const samples = [sample(1_000, 0, 0, 0)];
  expect(summarize(samples, sample(11_000, 20, 10, 0), 300_000)).toMatchObject({ acceptedPerSecond: 2, deliveredPerSecond: 1, coveredSeconds: 10 });
  // No time between: no rate rather than a division by zero.
  expect(summarize(samples, sample(1_000, 0, 0, 0), 300_000)).toMatchObject({ acceptedPerSecond: null, deliveredPerSecond: null, endToEndP99Ms: null });
});

test('p99 comes from the window’s own observations, interpolated in its bucket', () => {
  // 100 observations: 98 at ≤ 10 ms, 2 in (50, 100]: the 99th is halfway through that bucket.
  expect(bucketQuantile({ bounds: BOUNDS, counts: [98, 0, 2, 0, 0] }, 0.99)).toBe(75);
  expect(bucketQuantile({ bounds: BOUNDS, counts: [100, 0, 0, 0, 0] }, 0.99)).toBeCloseTo(9.9);
  // Above the last bound: the last bound is all that can be said.
  expect(bucketQuantile({ bounds: BOUNDS, counts: [0, 0, 0, 0, 3] }, 0.99)).toBe(500);
  expect(bucketQuantile({ bounds: BOUNDS, counts: [0, 0, 0, 0, 0] }, 0.99)).toBeNull();
  // Slow deliveries before the window do not count in it.
  const before = { bounds: BOUNDS, counts: [0, 0, 0, 0, 5] };
  const now = { bounds: BOUNDS, counts: [10, 0, 0, 0, 5] };
  expect(bucketsBetween(before, now).counts).toEqual([10, 0, 0, 0, 0]);
  expect(summarize([sample(0, 0, 0, 0, before.counts)], sample(60_000, 0, 10, 0, now.counts), 60_000).endToEndP99Ms).toBe(9.9);
  // The first histogram seen (no bounds before): taken whole.
  expect(bucketsBetween({ bounds: [], counts: [] }, now)).toEqual(now);
});

test('the kept samples: the start, one per spacing, and back to just before the longest window', () => {
  let kept: HealthSample[] = [sample(0, 0, 0, 0)];
  for (let t = 1_000; t <= 2 * 3_600_000; t += 1_000) kept = keepSamples(kept, sample(t, t, t, 0), 5_000);
  expect(kept[0]!.at).toBe(0);
  // About every 5 s over the last hour, and one before it as the baseline of a 1-hour window.
  expect(kept.length).toBeLessThan(3_600 / 4 + 5);
  expect(kept[1]!.at).toBeLessThanOrEqual(3_600_000);
  expect(baselineOf(kept, 2 * 3_600_000, 3_600_000)!.at).toBeGreaterThan(3_600_000 - 10_000);
});

test('the window is one of four, 5m unless asked', () => {
  expect(overviewQuerySchema.parse({})).toEqual({ window: '5m' });
  expect(overviewQuerySchema.parse({ window: '1h' })).toEqual({ window: '1h' });
  expect(overviewQuerySchema.safeParse({ window: '2d' }).success).toBe(false);
  expect(overviewQuerySchema.safeParse({ window: '5m', other: '1' }).success).toBe(false);
});

test('lane ages: the oldest first attempt taken in the window', () => {
  const ages = new LaneAges();
  ages.seen(0, 2_000);
  ages.seen(100_000, 100_500);
  ages.seen(200_000, 200_100);
  expect(ages.oldestSince(0)).toBe(2_000);
  expect(ages.oldestSince(90_000)).toBe(500);
  expect(ages.oldestSince(300_000)).toBeUndefined();
});
