import { FieldValue, Firestore } from '@google-cloud/firestore';
import { FirestoreCounterStore, mergeShards } from '../../shared/adapters/firestore/counters';
import { OperationCounter } from '../../shared/adapters/firestore/stores';
import { MemoryCounterStore } from '../../shared/adapters/memory/counter-store';
import { DestinationCounters } from '../../shared/app/destinations/destination-counters';
import { SPARSE_MAX } from '../../shared/app/destinations/counter-writer';
import { createLogger } from '../../shared/log';
import { Clock } from '../../shared/ports/clock';
import { CounterDelta, CounterStore, CountersNotWritten } from '../../shared/ports/counters';
import { counterStoreConformance } from '../support/counter-store-conformance';

/** A clock the test moves by hand. */
function manualClock(start = 1_000_000): Clock & { advance(ms: number): void } {
  let now = start;
  return { now: () => new Date(now), advance: (ms) => void (now += ms) };
}

const MIN = 60_000;

/** `store`, whose writes fail while `failing()` says so. */
function failingWhile(store: MemoryCounterStore, failing: () => boolean): CounterStore {
  return {
    add: (deltas: readonly CounterDelta[], shard: number) => (failing() ? Promise.reject(new Error('unavailable')) : store.add(deltas, shard)),
    window: store.window.bind(store),
    windows: store.windows.bind(store),
    recentLog: store.recentLog.bind(store),
    ...rollupsOf(store),
  };
}
const quiet = createLogger({ write: () => undefined });

/** The store's rollup methods (and `landed`), bound: a wrapper that changes how counters are written or read passes these through. */
function rollupsOf(store: MemoryCounterStore): Pick<CounterStore, 'bucketsSince' | 'rollups' | 'putRollups' | 'foldCursor' | 'setFoldCursor' | 'landed' | 'usage'> {
  return {
    landed: store.landed.bind(store),
    usage: store.usage.bind(store),
    bucketsSince: store.bucketsSince.bind(store),
    rollups: store.rollups.bind(store),
    putRollups: store.putRollups.bind(store),
    foldCursor: store.foldCursor.bind(store),
    setFoldCursor: store.setFoldCursor.bind(store),
  };
}

function setup(flushMs = 1000, shard = 3) {
  const clock = manualClock();
  const store = new MemoryCounterStore();
  const recorder = new DestinationCounters(store, clock, quiet, { bucketMs: MIN, flushMs, shard });
  return { clock, store, recorder };
}

test('100 events/s to one destination for 10 s: one write per second to one document, 0.01 writes per event', async () => {
  const clock = manualClock();
  const store = new MemoryCounterStore();
  const writes: { at: number; docs: number }[] = [];
  const timed = {
    add: async (deltas: readonly CounterDelta[], shard: number) => {
      writes.push({ at: clock.now().getTime(), docs: deltas.length });
      await store.add(deltas, shard);
    },
    window: store.window.bind(store),
    windows: store.windows.bind(store),
    recentLog: store.recentLog.bind(store),
    ...rollupsOf(store),
  };
  const recorder = new DestinationCounters(timed, clock, quiet, { bucketMs: MIN, flushMs: 1000, shard: 3 });
  for (let ms = 0; ms < 10_000; ms += 10) {
    // With a latency each (10-300 ms): the histogram rides in the same writes.
    recorder.record('orders', ms % 1000 === 990 ? 'failure' : 'success', clock.now(), undefined, 10 + (ms % 290));
    await recorder.flushIfDue();
    clock.advance(10);
  }
  await recorder.flush();
  const docWrites = writes.reduce((n, w) => n + w.docs, 0);
  expect(docWrites).toBeLessThanOrEqual(11);
  expect(docWrites / 1000).toBeLessThanOrEqual(0.011);
  // One document per write (one destination, one minute bucket), and never two writes within a second.
  expect(writes.every((w) => w.docs === 1)).toBe(true);
  // (The last write is the explicit flush at the end, as on shutdown.)
  for (let i = 1; i < writes.length - 1; i++) expect(writes[i]!.at - writes[i - 1]!.at).toBeGreaterThanOrEqual(1000);
  // The first flush carries one attempt: sparse, into a shared document; every later one is the destination's own.
  expect(store.writes[0]!.docs).toEqual([expect.stringMatching(/^shared\/default_~w[0-9a-f]+~0~\d+$/)]);
  expect(store.writes.slice(1).flatMap((w) => w.docs).every((d) => /^orders~\d+~3$/.test(d))).toBe(true);
  expect(await recorder.window('orders')).toMatchObject({ attempts: 1000, successes: 990, failures: 10 });
});

test('counts not yet flushed are part of the window this process reports', async () => {
  const { clock, store, recorder } = setup(60_000);
  // A first flush; what follows within the minute stays in memory.
  recorder.record('other', 'success', clock.now());
  await recorder.flushIfDue();
  expect(store.writes).toHaveLength(1);
  store.writes.length = 0;
  recorder.record('orders', 'success', clock.now());
  recorder.record('orders', 'ignored', clock.now());
  recorder.record('billing', 'failure', clock.now(), { at: clock.now().toISOString(), status: 500, error: 'HTTP 500' });
  await recorder.flushIfDue();
  expect(store.writes).toHaveLength(0);
  expect(await recorder.window('orders')).toMatchObject({ attempts: 2, successes: 1, failures: 0, successRate: 1 });
  expect(await recorder.window('billing')).toMatchObject({ attempts: 1, failures: 1, successRate: 0, recentErrors: [{ error: 'HTTP 500' }] });
});

test('a flush writes one document per busy (destination, bucket) it touched', async () => {
  const { clock, store, recorder } = setup();
  const busy = (id: string) => {
    for (let i = 0; i <= SPARSE_MAX; i++) recorder.record(id, 'success', clock.now());
  };
  busy('orders');
  busy('billing');
  // Into the next bucket, the one before just ended (its counts are not late: counters-rollup.test.ts).
  clock.advance(20_001);
  busy('orders');
  await recorder.flush();
  expect(store.writes).toHaveLength(1);
  expect(store.writes[0]!.docs).toHaveLength(3);
  expect(store.writes[0]!.docs.every((d) => !d.startsWith('shared/'))).toBe(true);
});

test('a failed write keeps the counts for the next flush: nothing counted is dropped', async () => {
  const clock = manualClock();
  const store = new MemoryCounterStore();
  let fail = true;
  const flaky = failingWhile(store, () => fail);
  const warnings: string[] = [];
  const recorder = new DestinationCounters(flaky, clock, createLogger({ write: (l) => warnings.push(l) }), { bucketMs: MIN, flushMs: 1000, shard: 0 });
  recorder.record('orders', 'failure', clock.now());
  await recorder.flush();
  expect(warnings.join()).toContain('kept for the next flush');
  recorder.record('orders', 'success', clock.now());
  fail = false;
  await recorder.flush();
  expect(await store.window('orders', 0)).toMatchObject([{ attempts: 2, successes: 1, failures: 1 }]);
});

test('filter counts alone take no write of their own: they ride with the next count, or go once when their bucket ends', async () => {
  const { clock, store, recorder } = setup();
  // From a bucket's start (the clock starts 40 s into one).
  clock.advance(MIN - (clock.now().getTime() % MIN));
  const start = clock.now().getTime();
  // 50 s of a filter dropping every event: no write, yet this process's window has them.
  for (let s = 0; s < 50; s++) {
    recorder.filterCounted('orders', { filtered: 2 }, clock.now());
    await recorder.flushIfDue();
    clock.advance(1000);
  }
  expect(store.writes).toHaveLength(0);
  expect((await recorder.window('orders')).settled).toEqual({ filtered: 100 });
  // An attempt of the destination: one write carries it and the held counts.
  recorder.filterCounted('orders', { filterPassed: 1 }, clock.now());
  recorder.record('orders', 'success', clock.now());
  await recorder.flushIfDue();
  expect(store.writes).toHaveLength(1);
  expect(await store.window('orders', 0)).toMatchObject([{ attempts: 1, settled: { filtered: 100, filterPassed: 1 } }]);
  // Filter counts alone again: held until the bucket has ended, then one write.
  recorder.filterCounted('orders', { filtered: 1 }, clock.now());
  clock.advance(1000);
  await recorder.flushIfDue();
  expect(store.writes).toHaveLength(1);
  clock.advance(start + MIN - clock.now().getTime());
  await recorder.flushIfDue();
  expect(store.writes).toHaveLength(2);
  expect((await recorder.window('orders')).settled).toEqual({ filtered: 101, filterPassed: 1 });
  // On shutdown, held counts go too.
  recorder.filterCounted('billing', { filterErrors: 1 }, clock.now());
  await recorder.flush();
  expect(store.writes).toHaveLength(3);
  expect(await store.window('billing', 0)).toMatchObject([{ settled: { filterErrors: 1 } }]);
});

test('the filter bench shape at 5 events/s: counter writes fall with the deliveries a filter drops, its counts adding at most one write a bucket', async () => {
  /** Counter documents written for 200 events at 5/s to 20 destinations, `filtering` of them taking 10 %; `count`: their filter counts tallied. */
  const run = async (filtering: number, count: boolean) => {
    const { clock, store, recorder } = setup();
    clock.advance(MIN - (clock.now().getTime() % MIN));
    for (let i = 0; i < 200; i++) {
      for (let d = 0; d < 20; d++) {
        const pass = d >= filtering || i % 100 < 10;
        if (d < filtering && count) recorder.filterCounted(`d${d}`, pass ? { filterPassed: 1 } : { filtered: 1 }, clock.now());
        if (pass) recorder.record(`d${d}`, 'success', clock.now());
      }
      await recorder.flushIfDue();
      clock.advance(200);
    }
    await recorder.flush();
    return store.writes.reduce((n, w) => n + w.docs.length, 0);
  };
  const plain = await run(0, true);
  const [filtered, uncounted] = [await run(10, true), await run(10, false)];
  // 45 % of the deliveries dropped; the counters fall about as much (they are per destination per flush).
  expect(1 - filtered / plain).toBeGreaterThan(0.4);
  // The filter's own counts: at most one write per filtering destination per bucket (40 s here: one bucket end), never one per flush.
  expect(filtered - uncounted).toBeLessThanOrEqual(10);
});

describe('a flush whose reply was lost (issue 51 item 9b)', () => {
  /** What one count() records for `orders`: past sparse, one in four a failure. */
  const BUSY = SPARSE_MAX + 1;
  const BUSY_FAILURES = Math.ceil(BUSY / 4);
  /** Busy `orders` (own document) and sparse `a`, `b` (a shared one): each flush writes both kinds. */
  const count = (recorder: DestinationCounters, at: Date) => {
    for (let i = 0; i <= SPARSE_MAX; i++) recorder.record('orders', i % 4 === 0 ? 'failure' : 'success', at);
    recorder.record('a', 'success', at);
    recorder.record('b', 'failure', at);
  };

  test('landed all the same: read back once, not added again; every count exact', async () => {
    const { clock, store, recorder } = setup();
    const landed = jest.spyOn(store, 'landed');
    count(recorder, clock.now());
    store.loseReplies = 1;
    await recorder.flush();
    expect(landed).toHaveBeenCalledTimes(1);
    clock.advance(1000);
    count(recorder, clock.now());
    await recorder.flush();
    clock.advance(1000);
    await recorder.flush();
    expect(await store.windows(['orders', 'a', 'b'], 0)).toEqual(
      new Map([
        ['orders', [expect.objectContaining({ attempts: 2 * BUSY, successes: 2 * (BUSY - BUSY_FAILURES), failures: 2 * BUSY_FAILURES })]],
        ['a', [expect.objectContaining({ attempts: 2, successes: 2, failures: 0 })]],
        ['b', [expect.objectContaining({ attempts: 2, successes: 0, failures: 2 })]],
      ]),
    );
    // The normal path reads nothing back.
    expect(landed).toHaveBeenCalledTimes(1);
  });

  test('the read-back fails too: nothing is written until a later flush has read it; then exact', async () => {
    const { clock, store, recorder } = setup();
    let readFails = true;
    const read = store.landed.bind(store);
    store.landed = (probes) => (readFails ? Promise.reject(new Error('14 UNAVAILABLE')) : read(probes));
    count(recorder, clock.now());
    store.loseReplies = 1;
    await recorder.flush();
    clock.advance(1000);
    count(recorder, clock.now());
    await recorder.flush();
    // Nothing written while the first flush's outcome is unknown.
    expect(store.writes).toHaveLength(1);
    readFails = false;
    clock.advance(1000);
    await recorder.flushIfDue();
    expect(await store.window('orders', 0)).toEqual([expect.objectContaining({ attempts: 2 * BUSY, successes: 2 * (BUSY - BUSY_FAILURES), failures: 2 * BUSY_FAILURES })]);
  });

  test('a commit that did not land is put back and written by the next flush', async () => {
    const { clock, store, recorder } = setup();
    const write = store.add.bind(store);
    let fail = true;
    store.add = async (deltas, shard, mark) => {
      if (!fail) return write(deltas, shard, mark);
      fail = false;
      throw new CountersNotWritten([{ deltas: [...deltas], usage: [], probe: { doc: 'rates/none', mark: mark! } }], new Error('4 DEADLINE_EXCEEDED'));
    };
    count(recorder, clock.now());
    await recorder.flush();
    clock.advance(1000);
    await recorder.flush();
    expect(await store.window('orders', 0)).toEqual([expect.objectContaining({ attempts: BUSY })]);
  });
});

test('the rolling hour leaves out buckets that began before it', async () => {
  const { clock, recorder } = setup();
  recorder.record('orders', 'failure', clock.now());
  await recorder.flush();
  clock.advance(61 * MIN);
  recorder.record('orders', 'success', clock.now());
  expect(await recorder.window('orders')).toMatchObject({ attempts: 1, successes: 1, failures: 0 });
});

test('a window read while a flush is being written still sees the counts being written', async () => {
  const clock = manualClock();
  const store = new MemoryCounterStore();
  let release!: () => void;
  const slow = {
    add: async (deltas: readonly CounterDelta[], shard: number) => {
      await new Promise<void>((r) => (release = r));
      await store.add(deltas, shard);
    },
    window: store.window.bind(store),
    windows: store.windows.bind(store),
    recentLog: store.recentLog.bind(store),
    ...rollupsOf(store),
  };
  const recorder = new DestinationCounters(slow, clock, quiet, { bucketMs: MIN, flushMs: 1000, shard: 0 });
  recorder.record('orders', 'failure', clock.now());
  const flushing = recorder.flush();
  const read = recorder.window('orders');
  await new Promise((r) => setImmediate(r));
  release();
  await flushing;
  expect(await read).toMatchObject({ attempts: 1, failures: 1 });
});

test('flushes asked for while one waits behind a window read make one write: a document never takes two writes from one writer within the interval', async () => {
  const clock = manualClock();
  const store = new MemoryCounterStore();
  const issued: number[] = [];
  const gates: (() => void)[] = [];
  const held = () => new Promise<void>((r) => gates.push(r));
  const slow = {
    add: async (deltas: readonly CounterDelta[], shard: number) => {
      issued.push(clock.now().getTime());
      await held();
      await store.add(deltas, shard);
    },
    window: async (destinationId: string, since: number) => {
      await held();
      return store.window(destinationId, since);
    },
    windows: async (destinationIds: readonly string[], since: number) => {
      await held();
      return store.windows(destinationIds, since);
    },
    recentLog: store.recentLog.bind(store),
    ...rollupsOf(store),
  };
  const tick = () => new Promise((r) => setImmediate(r));
  const recorder = new DestinationCounters(slow, clock, quiet, { bucketMs: MIN, flushMs: 1000, shard: 0 });
  recorder.record('orders', 'success', clock.now());
  // A suspension check reads the window; two deliveries end meanwhile and each asks for a flush.
  const read = recorder.window('orders');
  await tick();
  const asked = [recorder.flushIfDue(), recorder.flushIfDue()];
  clock.advance(300);
  gates.shift()!();
  await tick();
  // The flush is being written; another delivery ends.
  expect(issued).toHaveLength(1);
  recorder.record('orders', 'success', clock.now());
  clock.advance(300);
  const releaseAll = async () => {
    for (let i = 0; i < 5; i++) {
      gates.splice(0).forEach((go) => go());
      await tick();
    }
  };
  await releaseAll();
  await Promise.all([read, ...asked]);
  expect(issued).toHaveLength(1);
  // The interval runs from the write: the count recorded during it waits for the next due flush.
  clock.advance(700);
  const due = recorder.flushIfDue();
  await releaseAll();
  await due;
  expect(issued).toEqual([1_000_300, 1_001_300]);
  expect(await store.window('orders', 0)).toEqual([expect.objectContaining({ attempts: 2 })]);
});

test('active in a check run: destinations with counts not yet folded, stored or still in memory, and no others', async () => {
  const store = new MemoryCounterStore();
  const clock = manualClock();
  const recorder = new DestinationCounters(store, clock, quiet, { bucketMs: MIN, flushMs: 1000, shard: 0 });
  recorder.record('idle-since-long', 'success', clock.now());
  await recorder.flush();
  clock.advance(10 * MIN);
  recorder.record('flushed', 'failure', clock.now());
  await recorder.flush();
  recorder.record('in-memory', 'success', clock.now());
  expect((await recorder.foldRecent()).active).toEqual(['flushed', 'in-memory']);
  await recorder.flush();
  clock.advance(3 * MIN);
  // Their bucket is folded by this run: the next one finds nothing new.
  expect((await recorder.foldRecent()).active).toEqual(['flushed', 'in-memory']);
  expect((await recorder.foldRecent()).active).toEqual([]);
});

test('attempt latencies ride in the same write: one document per flush, a histogram bin per latency band, summed across shards', async () => {
  const clock = manualClock();
  const store = new MemoryCounterStore();
  const a = new DestinationCounters(store, clock, quiet, { bucketMs: MIN, flushMs: 1000, shard: 1 });
  const b = new DestinationCounters(store, clock, quiet, { bucketMs: MIN, flushMs: 1000, shard: 2 });
  for (let i = 0; i < 100; i++) a.record('orders', 'success', clock.now(), undefined, i < 90 ? 40 : 400);
  a.record('orders', 'ignored', clock.now());
  b.record('orders', 'failure', clock.now(), { at: clock.now().toISOString(), error: 'timeout' }, 30_000);
  await a.flush();
  await b.flush();
  // a's 101 attempts in its own document; b's one in a shared document: both summed below.
  expect(store.writes.map((w) => w.docs)).toEqual([[`orders~${1_000_000 - (1_000_000 % MIN)}~1`], [expect.stringMatching(new RegExp(`^shared/default_~w[0-9a-f]+~0~${1_000_000 - (1_000_000 % MIN)}$`))]]);
  const [bucket] = await store.window('orders', 0);
  // 40 ms in (30, 50] (b06), 400 ms in (300, 500] (b12), 30 s in (15, 30] s (b22); the attempt without a latency in none.
  expect(bucket).toMatchObject({ attempts: 102, successes: 100, failures: 1, latency: { b06: 90, b12: 10, b22: 1 } });
  // Without latencies, no histogram at all.
  a.record('billing', 'success', clock.now());
  await a.flush();
  expect((await store.window('billing', 0))[0]).not.toHaveProperty('latency');
});

test('a failed write keeps the latencies too', async () => {
  const clock = manualClock();
  const store = new MemoryCounterStore();
  let fail = true;
  const flaky = failingWhile(store, () => fail);
  const recorder = new DestinationCounters(flaky, clock, quiet, { bucketMs: MIN, flushMs: 1000, shard: 0 });
  recorder.record('orders', 'success', clock.now(), undefined, 12);
  await recorder.flush();
  recorder.record('orders', 'success', clock.now(), undefined, 13);
  fail = false;
  await recorder.flush();
  expect(await store.window('orders', 0)).toMatchObject([{ attempts: 2, latency: { b03: 2 } }]);
});

test('Firestore: one set per document per flush, each latency bin hit an increment of its own in that write; shards merged bin by bin', async () => {
  const sets: { path: string; data: Record<string, unknown>; options: unknown }[] = [];
  let commits = 0;
  const db = {
    collection: () => ({ doc: (path: string) => ({ path }) }),
    batch: () => ({
      set: (ref: { path: string }, data: Record<string, unknown>, options: unknown) => void sets.push({ path: ref.path, data, options }),
      commit: async () => void commits++,
    }),
  } as unknown as Firestore;
  await new FirestoreCounterStore(db).add([{ destinationId: 'orders', bucketStart: 60_000, attempts: 3, successes: 3, failures: 0, lastErrors: [], latency: { b02: 2, b09: 1 } }], 5);
  expect(commits).toBe(1);
  expect(sets).toHaveLength(1);
  expect(sets[0]).toMatchObject({ path: 'orders~60000~5', options: { merge: true } });
  expect(sets[0]!.data.latency).toEqual({ b02: FieldValue.increment(2), b09: FieldValue.increment(1) });
  expect(mergeShards([
    { destinationId: 'orders', bucketStart: 60_000, attempts: 2, successes: 2, failures: 0, latency: { b02: 2 } },
    { destinationId: 'orders', bucketStart: 60_000, attempts: 2, successes: 2, failures: 0, latency: { b02: 1, b09: 1 } },
    { destinationId: 'orders', bucketStart: 60_000, attempts: 1, successes: 1, failures: 0 },
  ])).toEqual([{ destinationId: 'orders', start: 60_000, attempts: 5, successes: 5, failures: 0, lastErrors: [], latency: { b02: 3, b09: 1 } }]);
});

test('sparse destinations fill shared documents SHARED_PART_SIZE at a time, each kept in its document for the bucket; busy, it moves to its own', async () => {
  const { clock, store, recorder } = setup();
  const ids = Array.from({ length: 130 }, (_, i) => `d-${i}`);
  for (const id of ids) recorder.record(id, 'success', clock.now());
  await recorder.flush();
  const bucket = 1_000_000 - (1_000_000 % MIN);
  const [first] = store.writes;
  expect(first!.docs).toHaveLength(3);
  expect(first!.docs.every((d) => d.startsWith('shared/default_~') && d.endsWith(`~${bucket}`))).toBe(true);
  // Again, with 3 newcomers: the same documents (the third part takes them), no more.
  for (const id of [...ids, 'n-1', 'n-2', 'n-3']) recorder.record(id, 'success', clock.now());
  clock.advance(1000);
  await recorder.flush();
  expect([...store.writes[1]!.docs].sort()).toEqual([...first!.docs].sort());
  // d-0 gets busy: the rest of its bucket goes to its own document; the others stay.
  for (let i = 0; i < SPARSE_MAX; i++) recorder.record('d-0', 'success', clock.now());
  recorder.record('d-1', 'success', clock.now());
  clock.advance(1000);
  await recorder.flush();
  expect(store.writes[2]!.docs.sort()).toEqual([`d-0~${bucket}~3`, first!.docs.find((d) => d.endsWith(`~0~${bucket}`))].sort());
  expect(await store.window('d-0', 0)).toMatchObject([{ attempts: 2 + SPARSE_MAX }]);
  // A new bucket starts its parts again from the first.
  clock.advance(MIN);
  recorder.record('d-0', 'success', clock.now());
  await recorder.flush();
  expect(store.writes[3]!.docs).toEqual([expect.stringMatching(new RegExp(`^shared/default_~w[0-9a-f]+~0~${bucket + MIN}$`))]);
  expect(await recorder.window('d-0')).toMatchObject({ attempts: 3 + SPARSE_MAX });
  // Another account's sparse destinations go to documents of its own, named with its prefix (erased with it).
  recorder.record('acme_d-0', 'success', clock.now());
  await recorder.flush();
  expect(store.writes[4]!.docs).toEqual([expect.stringMatching(new RegExp(`^shared/acme_~w[0-9a-f]+~0~${bucket + MIN}$`))]);
});

test('a failed write of shared counts keeps them, and the retry writes the same shared document', async () => {
  const clock = manualClock();
  const store = new MemoryCounterStore();
  let fail = true;
  const recorder = new DestinationCounters(failingWhile(store, () => fail), clock, quiet, { bucketMs: MIN, flushMs: 1000, shard: 0 });
  recorder.record('a', 'failure', clock.now());
  recorder.record('b', 'success', clock.now());
  await recorder.flush();
  fail = false;
  recorder.record('a', 'success', clock.now());
  await recorder.flush();
  expect(store.writes).toEqual([{ at: expect.any(Number), docs: [expect.stringMatching(/^shared\//)] }]);
  expect(await store.windows(['a', 'b'], 0)).toEqual(
    new Map([
      ['a', [expect.objectContaining({ attempts: 2, successes: 1, failures: 1 })]],
      ['b', [expect.objectContaining({ attempts: 1, successes: 1 })]],
    ]),
  );
});

/** A Firestore stand-in that records each batched set, and commits with `commit`. */
function batchRecorder(commit: () => Promise<void>) {
  const sets: { path: string; data: Record<string, unknown> }[] = [];
  const db = {
    collection: (name: string) => ({ doc: (path: string) => ({ path: `${name}/${path}` }) }),
    batch: () => ({ set: (ref: { path: string }, data: Record<string, unknown>) => void sets.push({ path: ref.path, data }), commit }),
  } as unknown as Firestore;
  return { db, sets };
}

test('Firestore: sparse deltas of one bucket and group are one merged set of a shared document (its destinations by arrayUnion, each under d.<id>); writes counted one per document, over 500 in several commits', async () => {
  let commits = 0;
  const { db, sets } = batchRecorder(async () => void commits++);
  const ops = new OperationCounter();
  const delta = (destinationId: string, group?: string): CounterDelta => ({ destinationId, bucketStart: 60_000, attempts: 1, successes: 1, failures: 0, lastErrors: [], ...(group ? { group } : {}) });
  await new FirestoreCounterStore(db, ops).add([delta('acct_a', 'wx~0'), delta('busy'), delta('b-2', 'wx~0'), delta('c', 'wx~1')], 5);
  expect(ops.writes).toBe(3);
  expect(sets.map((s) => s.path)).toEqual(['rates/busy~60000~5', 'rates-shared/wx~0~60000', 'rates-shared/wx~1~60000']);
  expect(sets[1]!.data).toMatchObject({ bucketStart: 60_000, destinations: FieldValue.arrayUnion('acct_a', 'b-2'), d: { acct_a: { attempts: FieldValue.increment(1) }, 'b-2': { successes: FieldValue.increment(1) } } });
  await new FirestoreCounterStore(db, ops).add(Array.from({ length: 600 }, (_, i) => delta(`d-${i}`)), 5);
  expect(ops.writes).toBe(603);
  expect(commits).toBe(3);
});

test('Firestore: each document carries the flush mark in the same write; a failed commit of several is named with its deltas and a document of it, the others written', async () => {
  let commits = 0;
  // The second commit fails.
  const { db, sets } = batchRecorder(async () => {
    if (++commits === 2) throw Object.assign(new Error('4 DEADLINE_EXCEEDED'), { code: 4 });
  });
  const ops = new OperationCounter();
  const deltas = Array.from({ length: 600 }, (_, i): CounterDelta => ({ destinationId: `d-${i}`, bucketStart: 60_000, attempts: 1, successes: 1, failures: 0, lastErrors: [] }));
  const mark = { writer: 'wabc', flush: 7 };
  const failure = await new FirestoreCounterStore(db, ops).add(deltas, 5, mark).catch((e: unknown) => e);
  expect(failure).toBeInstanceOf(CountersNotWritten);
  const { unsure } = failure as CountersNotWritten;
  expect(unsure).toHaveLength(1);
  expect(unsure[0]!.deltas.map((d) => d.destinationId)).toEqual(deltas.slice(500).map((d) => d.destinationId));
  expect(unsure[0]!.probe).toEqual({ doc: 'rates/d-500~60000~5', mark });
  // Written: the first commit's 500, one write each, the mark riding in it.
  expect(ops.writes).toBe(500);
  expect(sets.every((w) => (w.data.flushes as Record<string, number>).wabc === 7)).toBe(true);
  // Without a mark nothing is known written: the error as it came.
  commits = 0;
  await expect(new FirestoreCounterStore(db, ops).add(deltas, 5)).rejects.toThrow('DEADLINE_EXCEEDED');
});

counterStoreConformance('memory', () => new MemoryCounterStore(), (store) => (store as MemoryCounterStore).writes.reduce((n, w) => n + w.docs.length, 0));
