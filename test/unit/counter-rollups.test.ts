import { MemoryCounterStore } from '../../shared/adapters/memory/counter-store';
import { getAccountStats } from '../../shared/app/admin/stats-admin';
import { DestinationCounters, ROLLUP_MIN_BUCKETS } from '../../shared/app/destinations/destination-counters';
import { checkThresholds } from '../../shared/app/delivery/suspend-and-reactivate';
import { foldRollup } from '../../shared/domain/stats/rate-rollup';
import { summarize } from '../../shared/domain/stats/success-rate';
import { createLogger } from '../../shared/log';
import { Clock } from '../../shared/ports/clock';
import { CounterStore } from '../../shared/ports/counters';
import { statsDeps, thresholdCheck } from '../support/rollup-check';

/**
 * Issue 36: each destination's counters folded into a rollup by the suspension check, and
 * every read of a window or a chart answered from it and the counter documents after it —
 * with the same numbers as the counter documents alone.
 */
const MIN = 60_000;
const HOUR = 60 * MIN;
const T0 = Date.parse('2026-11-26T00:00:00.000Z');
const quiet = createLogger({ write: () => undefined });
const operator = { kind: 'operator' } as unknown as Parameters<typeof getAccountStats>[1];

function manualClock(start = T0): Clock & { set(ms: number): void } {
  let now = start;
  return { now: () => new Date(now), set: (ms) => void (now = ms) };
}

function countersOn(store: CounterStore, clock: Clock, shard: number): DestinationCounters {
  return new DestinationCounters(store, clock, quiet, { bucketMs: MIN, flushMs: 1000, shard });
}

/** What the destination does in minute `m`: a varied pattern, with latencies and settled deliveries. */
function traffic(w: DestinationCounters, id: string, m: number, clock: ReturnType<typeof manualClock>): void {
  clock.set(T0 + m * MIN + 2000 + (m % 5) * 1000);
  for (let i = 0; i < (m * 7) % 11; i++) w.record(id, i % 3 === 0 ? 'failure' : 'success', clock.now(), i % 3 === 0 ? { at: clock.now().toISOString(), error: `HTTP 50${i % 4}` } : undefined, 10 + ((m + i) % 400));
  if (m % 13 === 0) w.settled(id, m % 2 ? 'DEAD' : 'QUEUED', clock.now());
}

/** A counter store in memory, a clock, a writer (deliver's counters) and a checker (the scheduled check's), with stats deps for the account of `ids`. */
function setup(ids: string[]) {
  const store = new MemoryCounterStore();
  const clock = manualClock();
  const writer = countersOn(store, clock, 1);
  const checker = countersOn(store, clock, 2);
  return { store, clock, writer, checker, ...statsDeps(ids, clock, checker, store, MIN) };
}

test('a destination busy for 90 minutes, folded each minute: its windows and its hour and day charts are those of its counter documents', async () => {
  const { store, clock, writer, checker, rolled, raw } = setup(['acme_busy', 'acme_quiet']);
  for (let m = 0; m < 90; m++) {
    traffic(writer, 'acme_busy', m, clock);
    if (m % 17 === 0) traffic(writer, 'acme_quiet', m + 1, clock);
    clock.set(T0 + m * MIN + 50_000);
    await writer.flush();
    // The scheduler's run, 15 s into the next minute.
    clock.set(T0 + (m + 1) * MIN + 15_000);
    await checker.foldRecent();
    if (m % 29 !== 0) continue;
    for (const window of ['1h', '24h']) expect(await getAccountStats(rolled, operator, 'acme', { window })).toEqual(await getAccountStats(raw, operator, 'acme', { window }));
    const now = clock.now().getTime();
    const rawHour = summarize(await store.window('acme_busy', now - HOUR), now, HOUR);
    expect(await checker.window('acme_busy')).toEqual(rawHour);
  }
  const stored = (await store.rollups(['acme_busy'])).get('acme_busy')!.rollup;
  // The minute just ended is in it: the next run reads two buckets of counters, no more.
  expect(stored.foldedThrough).toBe(T0 + 90 * MIN);
  expect(stored.minutes.length).toBeLessThanOrEqual(62);
});

test('a day of traffic: the 24 h chart from coarse buckets equals the counters minute by minute, point by point, and a check that never ran leaves it the same', async () => {
  const ids = ['acme_a', 'acme_b'];
  const { store, clock, writer, checker, rolled, raw } = setup(ids);
  for (let m = 0; m < 26 * 60; m += 1) {
    if (m % 7 === 0 || m % 11 === 0) traffic(writer, ids[m % 2]!, m, clock);
    clock.set(T0 + m * MIN + 50_000);
    await writer.flush();
    // No run for the first 2 h (stats then read counters alone), then one every minute but a few skipped.
    if (m < 120 || m % 97 === 0) {
      if (m === 100) expect(await getAccountStats(rolled, operator, 'acme', { window: '24h' })).toEqual(await getAccountStats(raw, operator, 'acme', { window: '24h' }));
      continue;
    }
    clock.set(T0 + (m + 1) * MIN + 12_000);
    await checker.foldRecent();
  }
  const day = await getAccountStats(rolled, operator, 'acme', { window: '24h' });
  expect(day).toEqual(await getAccountStats(raw, operator, 'acme', { window: '24h' }));
  expect((day as { body: { series: { attempts: number }[] } }).body.series.filter((p) => p.attempts > 0).length).toBeGreaterThan(90);
  expect(await getAccountStats(rolled, operator, 'acme', { window: '1h' })).toEqual(await getAccountStats(raw, operator, 'acme', { window: '1h' }));
  const rollup = (await store.rollups(['acme_a'])).get('acme_a')!.rollup;
  expect(rollup.coarse.length).toBeLessThanOrEqual(98);
});

test('a fold is done once: a second run of the same minute, or two runs at once, count nothing twice', async () => {
  const store = new MemoryCounterStore();
  const clock = manualClock();
  const writer = countersOn(store, clock, 1);
  const [a, b] = [countersOn(store, clock, 2), countersOn(store, clock, 3)];
  for (let m = 0; m < 10; m++) {
    traffic(writer, 'acme_x', m, clock);
    clock.set(T0 + m * MIN + 50_000);
    await writer.flush();
    clock.set(T0 + (m + 1) * MIN + 15_000);
    // Two runs at once (a retried scheduler call), then one more of the same minute.
    const runs = await Promise.all([a.foldRecent(), b.foldRecent()]);
    // Its hour earns it a rollup at its ROLLUP_MIN_BUCKETS-th minute with counts; from then on each minute is folded once.
    expect(runs.reduce((n, r) => n + r.folded, 0)).toBe(m + 1 >= ROLLUP_MIN_BUCKETS ? 1 : 0);
    expect((await a.foldRecent()).folded).toBe(0);
  }
  const { rollup, version } = (await store.rollups(['acme_x'])).get('acme_x')!;
  const raw = await store.window('acme_x', T0);
  expect(rollup.minutes.map((x) => [x.start, x.attempts])).toEqual(raw.map((x) => [x.start, x.attempts]));
  // Folding what it holds already changes nothing; a write from a stale read is refused.
  expect(foldRollup(rollup, 'acme_x', raw, rollup.foldedThrough, rollup.foldedThrough, a.rollupShape)).toBeUndefined();
  expect(await store.putRollups([{ rollup: { ...rollup, foldedThrough: rollup.foldedThrough + MIN }, version }])).toEqual([true]);
  expect(await store.putRollups([{ rollup: { ...rollup, foldedThrough: rollup.foldedThrough + 2 * MIN }, version }])).toEqual([false]);
});

test('runs skipped for minutes: the next one catches up, and a destination active only then is judged on its counter documents, with no rollup', async () => {
  const store = new MemoryCounterStore();
  const clock = manualClock();
  const writer = countersOn(store, clock, 1);
  const checker = countersOn(store, clock, 2);
  for (let m = 0; m < 12; m++) {
    traffic(writer, 'acme_steady', m, clock);
    if (m === 7) traffic(writer, 'acme_only-then', m, clock);
    clock.set(T0 + m * MIN + 50_000);
    await writer.flush();
    if (m >= 5 && m < 10) continue;
    clock.set(T0 + (m + 1) * MIN + 15_000);
    const run = await checker.foldRecent();
    if (m === 10) expect(run.active).toEqual(['acme_only-then', 'acme_steady']);
  }
  const now = clock.now().getTime();
  for (const id of ['acme_steady', 'acme_only-then']) expect(await checker.window(id)).toEqual(summarize(await store.window(id, now - HOUR), now, HOUR));
  // Folded through minute 10: minute 11 counted nothing, and a fold that adds nothing is not written.
  expect((await store.rollups(['acme_steady'])).get('acme_steady')!.rollup.foldedThrough).toBe(T0 + 11 * MIN);
  // One minute with counts in its hour: its counter documents answer every read for less than a rollup would cost.
  expect(await store.rollups(['acme_only-then'])).toEqual(new Map());
});

test('counts flushed minutes late (the store refused writes meanwhile) go into the current bucket: a folded bucket takes none, the hour loses none', async () => {
  const memory = new MemoryCounterStore();
  let failing = false;
  const store: CounterStore = Object.assign(Object.create(memory) as MemoryCounterStore, { add: (d: Parameters<CounterStore['add']>[0], s: number) => (failing ? Promise.reject(new Error('unavailable')) : memory.add(d, s)) });
  const clock = manualClock();
  const writer = countersOn(store, clock, 1);
  const checker = countersOn(memory, clock, 2);
  let recorded = 0;
  for (let m = 0; m < 10; m++) {
    failing = m >= 3 && m < 6;
    clock.set(T0 + m * MIN + 30_000);
    for (let i = 0; i < 5; i++) writer.record('acme_late', 'success', clock.now());
    recorded += 5;
    clock.set(T0 + m * MIN + 50_000);
    await writer.flush();
    clock.set(T0 + (m + 1) * MIN + 15_000);
    await checker.foldRecent();
  }
  const buckets = await memory.window('acme_late', T0);
  // Minutes 3 to 5 were written at minute 6, into it.
  expect(buckets.map((b) => [(b.start - T0) / MIN, b.attempts])).toEqual([
    [0, 5],
    [1, 5],
    [2, 5],
    [6, 20],
    [7, 5],
    [8, 5],
    [9, 5],
  ]);
  expect((await checker.window('acme_late')).attempts).toBe(recorded);
});

test('the check judges every active destination, the last in sort order too, reading each rollup once', async () => {
  const store = new MemoryCounterStore();
  const clock = manualClock();
  const writer = countersOn(store, clock, 1);
  const checker = countersOn(store, clock, 2);
  const ids = Array.from({ length: 1000 }, (_, i) => `acct-${String(i).padStart(4, '0')}_hook`);
  const last = 'zzzz_last';
  const { registry, deps } = await thresholdCheck([...ids, last], checker, clock, quiet);
  for (let m = 0; m < 3; m++) {
    clock.set(T0 + m * MIN + 5000);
    for (const id of ids) for (let i = 0; i < 2; i++) writer.record(id, 'success', clock.now());
    for (let i = 0; i < 60; i++) writer.record(last, 'failure', clock.now());
    clock.set(T0 + m * MIN + 50_000);
    await writer.flush();
    clock.set(T0 + (m + 1) * MIN + 15_000);
    store.rollupReads = 0;
    const report = await checkThresholds(deps);
    expect(report.checked).toBe(m === 0 ? 1001 : 1000);
    expect(store.rollupReads).toBeLessThanOrEqual(1001 + 1);
    if (m === 0) expect(report.suspended).toEqual([last]);
  }
  expect((await registry.get(last))?.status).toBe('suspended');
});

test('a destination with no rollup yet is caught up from its counter documents: its first fold holds its whole day', async () => {
  const store = new MemoryCounterStore();
  const clock = manualClock();
  const writer = countersOn(store, clock, 1);
  for (let m = 0; m < 180; m++) {
    traffic(writer, 'acme_old', m, clock);
    clock.set(T0 + m * MIN + 50_000);
    await writer.flush();
  }
  const checker = countersOn(store, clock, 2);
  clock.set(T0 + 180 * MIN + 15_000);
  expect((await checker.foldRecent()).folded).toBe(1);
  const { rollup } = (await store.rollups(['acme_old'])).get('acme_old')!;
  const raw = await store.window('acme_old', T0);
  expect(rollup.coarse.reduce((n, b) => n + b.attempts, 0)).toBe(raw.reduce((n, b) => n + b.attempts, 0));
});
