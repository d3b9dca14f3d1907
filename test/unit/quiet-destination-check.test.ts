import { MemoryCounterStore } from '../../shared/adapters/memory/counter-store';
import { getAccountStats } from '../../shared/app/admin/stats-admin';
import { DestinationCounters, ROLLUP_MIN_BUCKETS } from '../../shared/app/destinations/destination-counters';
import { checkThresholds } from '../../shared/app/delivery/suspend-and-reactivate';
import { POLICY_PRESETS } from '../../shared/domain/retry/policy-presets';
import { PolicySpec } from '../../shared/domain/retry/policy';
import { summarize, thresholdVerdict } from '../../shared/domain/stats/success-rate';
import { createLogger } from '../../shared/log';
import { Clock } from '../../shared/ports/clock';
import { webhookDestination } from '../support/destinations';
import { statsDeps, thresholdCheck } from '../support/rollup-check';

/**
 * Issue 58: a quiet destination (a few events an hour) is judged by the suspension check on its
 * counter documents, read with those of 30 destinations at a time, and gets no rollup until its
 * hour earns one — the same verdicts, and the same numbers, for less.
 */
const MIN = 60_000;
const HOUR = 60 * MIN;
const T0 = Date.parse('2026-12-01T00:00:00.000Z');
const quiet = createLogger({ write: () => undefined });
const operator = { kind: 'operator' } as unknown as Parameters<typeof getAccountStats>[1];

function manualClock(): Clock & { set(ms: number): void } {
  let now = T0;
  return { now: () => new Date(now), set: (ms) => void (now = ms) };
}

/** A store that notes every destination a read names (its windows, rollups and log heads): bucketsSince names none, it reads what is new. */
function watchedStore(): MemoryCounterStore & { named: string[] } {
  const store = Object.assign(new MemoryCounterStore(), { named: [] as string[] });
  const note = <A extends unknown[], R>(read: (ids: readonly string[], ...rest: A) => R) => (ids: readonly string[], ...rest: A): R => {
    store.named.push(...ids);
    return read(ids, ...rest);
  };
  const window = store.window.bind(store);
  store.window = (id, since) => note((ids: readonly string[], s: number) => window(ids[0]!, s))([id], since);
  store.windows = note(store.windows.bind(store));
  store.rollups = note(store.rollups.bind(store));
  return store;
}

function setup() {
  const store = watchedStore();
  const clock = manualClock();
  const writer = new DestinationCounters(store, clock, quiet, { bucketMs: MIN, flushMs: 1000, shard: 1 });
  const checker = new DestinationCounters(store, clock, quiet, { bucketMs: MIN, flushMs: 1000, shard: 2 });
  return { store, clock, writer, checker };
}

/** Minute `m`: `act` records at 20 s in, the writer flushes at 50 s, the scheduled check runs 15 s into the next minute. */
async function minute(s: ReturnType<typeof setup>, m: number, act: () => void, check: () => Promise<unknown>): Promise<void> {
  s.clock.set(T0 + m * MIN + 20_000);
  act();
  s.clock.set(T0 + m * MIN + 50_000);
  await s.writer.flush();
  s.clock.set(T0 + (m + 1) * MIN + 15_000);
  await check();
}

test('a quiet destination failing everything is suspended at the threshold its policy sets, on the window its counters hold', async () => {
  const s = setup();
  const id = 'acme_quiet-failing';
  const threshold = { successRate: 0.9, windowMs: HOUR, minSample: 4 };
  const { registry, deps } = await thresholdCheck([id, 'acme_busy'], s.checker, s.clock, quiet);
  await registry.put({ ...webhookDestination(id), policy: { ...(structuredClone(POLICY_PRESETS['event-platform']) as unknown as Omit<Exclude<PolicySpec, string>, 'name'>), name: 'custom', threshold } });
  let suspendedAt: number | undefined;
  for (let m = 0; m < 80 && suspendedAt === undefined; m++) {
    await minute(
      s,
      m,
      () => {
        // One failure every 15 minutes: never enough buckets in an hour to earn a rollup.
        if (m % 15 === 0) s.writer.record(id, 'failure', s.clock.now(), { at: s.clock.now().toISOString(), error: 'HTTP 503' });
        for (let i = 0; i < 30; i++) s.writer.record('acme_busy', 'success', s.clock.now());
      },
      async () => {
        const now = s.clock.now().getTime();
        const expected = thresholdVerdict(summarize(await s.store.window(id, now - HOUR), now, HOUR), threshold);
        const report = await checkThresholds(deps);
        // Judged whenever it had an attempt since the last run, as before: suspended exactly when its window says so.
        if (m % 15 === 0) expect(report.suspended.includes(id)).toBe(expected.suspend);
        else expect(report.suspended).toEqual([]);
        if (report.suspended.includes(id)) suspendedAt = m;
      },
    );
  }
  // The fourth failure (minute 45) fills the minimum sample: suspended at the run after it.
  expect(suspendedAt).toBe(45);
  expect((await registry.get(id))?.suspension?.cause).toBe('threshold');
  expect(await s.store.rollups([id])).toEqual(new Map());
});

test('a quiet destination that succeeds is judged once, then never read again until it has traffic, and gets no rollup', async () => {
  const s = setup();
  const id = 'acme_quiet-ok';
  const { registry, deps } = await thresholdCheck([id, 'acme_busy'], s.checker, s.clock, quiet);
  const namedIn: number[] = [];
  for (let m = 0; m < 95; m++) {
    s.store.named.length = 0;
    await minute(
      s,
      m,
      () => {
        if (m === 0 || m === 90) s.writer.record(id, 'success', s.clock.now());
        for (let i = 0; i < 30; i++) s.writer.record('acme_busy', 'success', s.clock.now());
      },
      () => checkThresholds(deps),
    );
    if (s.store.named.includes(id)) namedIn.push(m);
  }
  // Read by the run after each of its events only: the busy one beside it keeps every run busy.
  expect(namedIn).toEqual([0, 90]);
  expect((await registry.get(id))?.status).toBe('active');
  expect(await s.store.rollups([id])).toEqual(new Map());
  expect((await s.store.rollups(['acme_busy'])).size).toBe(1);
});

test('one event a minute for an hour: it earns a rollup, and its rolling hour, stats and 24 h chart stay those of its counter documents', async () => {
  const s = setup();
  const id = 'acme_minutely';
  const { rolled, raw } = statsDeps([id, 'acme_hourly'], s.clock, s.checker, s.store, MIN);
  for (let m = 0; m < 75; m++) {
    await minute(
      s,
      m,
      () => {
        if (m < 60) s.writer.record(id, m % 7 === 0 ? 'failure' : 'success', s.clock.now(), m % 7 === 0 ? { at: s.clock.now().toISOString(), error: 'HTTP 500' } : undefined, 20 + m);
        if (m % 30 === 0) s.writer.record('acme_hourly', 'success', s.clock.now(), undefined, 40);
      },
      () => s.checker.foldRecent(),
    );
    const now = s.clock.now().getTime();
    expect(await s.checker.window(id)).toEqual(summarize(await s.store.window(id, now - HOUR), now, HOUR));
    if (m % 10 === 4) for (const window of ['1h', '24h']) expect(await getAccountStats(rolled, operator, 'acme', { window })).toEqual(await getAccountStats(raw, operator, 'acme', { window }));
    // Its rollup comes with its ROLLUP_MIN_BUCKETS-th minute of counts, not before.
    expect((await s.store.rollups([id])).size).toBe(m + 1 >= ROLLUP_MIN_BUCKETS ? 1 : 0);
  }
  // The hour up to 15 s past minute 75: its minutes 16 to 59.
  expect((await s.checker.window(id)).attempts).toBe(44);
  expect(await s.store.rollups(['acme_hourly'])).toEqual(new Map());
});
