import { DestinationCounters } from '../../shared/app/destinations/destination-counters';
import { SHARED_PART_SIZE, SPARSE_MAX } from '../../shared/app/destinations/counter-writer';
import { DeliveryLogHead } from '../../shared/app/destinations/delivery-log-head';
import { headOf, newestFirst, RecentEntry } from '../../shared/domain/delivery/recent-log';
import { createLogger } from '../../shared/log';
import { Clock } from '../../shared/ports/clock';
import { CounterStore } from '../../shared/ports/counters';

const MIN = 60_000;
const quiet = createLogger({ write: () => undefined });
const T0 = Date.parse('2026-11-26T10:00:00.000Z');

/** One process's writer as the runtime builds it: its counters, and the log head riding in their documents. */
type Writer = DestinationCounters & Pick<DeliveryLogHead, 'created' | 'head'>;

function writer(store: CounterStore, clock: Clock, shard: number): Writer {
  const counters = new DestinationCounters(store, clock, quiet, { bucketMs: MIN, flushMs: 1000, shard });
  const logHead = new DeliveryLogHead(store, clock, counters);
  return Object.assign(counters, { created: logHead.created.bind(logHead), head: logHead.head.bind(logHead) });
}

function manualClock(start = T0): Clock & { advance(ms: number): void } {
  let now = start;
  return { now: () => new Date(now), advance: (ms) => void (now += ms) };
}

/**
 * What the counters carry beside the success rate — the log head, the settled counts — written
 * and read back, and sparse destinations' counts in shared documents: the same with every rate
 * store. `written`: the documents the store has written so far, as it counts them (what the
 * cost bench reads).
 */
export function counterStoreConformance(name: string, make: () => Promise<CounterStore> | CounterStore, written: (store: CounterStore) => number): void {
  describe(`${name} counter store: settled counts and the delivery log's head`, () => {
    test('deliveries that became DEAD or QUEUED are summed per bucket across writers, in the counters\' one write', async () => {
      const store = await make();
      const clock = manualClock();
      const a = writer(store, clock, 2);
      const b = writer(store, clock, 2);
      a.settled('dest', 'DEAD', clock.now());
      a.settled('dest', 'QUEUED', clock.now());
      b.settled('dest', 'DEAD', clock.now());
      a.record('dest', 'failure', clock.now());
      await a.flush();
      await b.flush();
      clock.advance(MIN);
      a.settled('dest', 'QUEUED', clock.now());
      await a.flush();
      const buckets = await store.window('dest', T0);
      expect(buckets.map((x) => [x.start - T0, x.settled])).toEqual([
        [0, { dead: 2, queued: 1 }],
        [MIN, { queued: 1 }],
      ]);
      expect(buckets[0]).toMatchObject({ attempts: 1, failures: 1 });
    });

    test('two writers on one shard keep their own lists; the head is read back newest first once it is sure', async () => {
      const store = await make();
      const clock = manualClock();
      const a = writer(store, clock, 7);
      const b = writer(store, clock, 7);
      const iso = (ms: number) => new Date(T0 + ms).toISOString();
      // Bucket 1 (T0 … T0+60 s): a creates 3, b creates 2; bucket 2: a creates 2.
      for (const [w, ms] of [[a, 1000], [b, 2000], [a, 3000], [b, 4000], [a, 5000]] as const) w.created('acct_dest', `acct_dest.k${ms}`, iso(ms), new Date(T0 + ms + 10));
      clock.advance(MIN);
      a.created('acct_dest', 'acct_dest.k61000', iso(61_000), new Date(T0 + 61_010));
      a.created('acct_dest', 'acct_dest.k62000', iso(62_000), new Date(T0 + 62_010));
      a.created('other_dest', 'other_dest.k1', iso(61_500), new Date(T0 + 61_600));
      await a.flush();
      await b.flush();
      const reader = writer(store, clock, 9);
      expect((await reader.head('acct_dest', 7))?.map((e) => e[1])).toEqual([
        'acct_dest.k62000',
        'acct_dest.k61000',
        'acct_dest.k5000',
        'acct_dest.k4000',
        'acct_dest.k3000',
        'acct_dest.k2000',
        'acct_dest.k1000',
      ]);
      // Nothing older than the first bucket is known: an eighth cannot be proved absent.
      expect(await reader.head('acct_dest', 8)).toBeUndefined();
      // Records created in a bucket read later flush into the same documents: the lists grow, not reset.
      b.created('acct_dest', 'acct_dest.k6000', iso(6000), new Date(T0 + 6010));
      await b.flush();
      expect((await reader.head('acct_dest', 3))?.map((e) => e[1])).toEqual(['acct_dest.k62000', 'acct_dest.k61000', 'acct_dest.k6000']);
      expect((await reader.head('other_dest', 1))?.map((e) => e[1])).toEqual(['other_dest.k1']);
    });

    test("a writer's own unflushed records are in its head at once", async () => {
      const store = await make();
      const clock = manualClock();
      const w = writer(store, clock, 1);
      w.created('solo', 'solo.k1', new Date(T0).toISOString(), new Date(T0 + 5));
      expect((await w.head('solo', 1))?.map((e) => e[1])).toEqual(['solo.k1']);
    });
  });

  describe(`${name} counter store: sparse destinations share documents`, () => {
    const iso = (ms: number) => new Date(T0 + ms).toISOString();

    test('500 destinations with one delivery each in one flush: one write per shared document, every count read back exact', async () => {
      const store = await make();
      const clock = manualClock();
      const w = writer(store, clock, 4);
      const ids = Array.from({ length: 500 }, (_, i) => `acct_d-${i}`);
      ids.forEach((id, i) => {
        w.created(id, `${id}.k`, iso(i), new Date(T0 + i + 5));
        w.record(id, i % 10 === 0 ? 'failure' : 'success', new Date(T0 + i + 5), i % 10 === 0 ? { at: iso(i + 5), status: 500, error: 'HTTP 500' } : undefined, 40);
      });
      const before = written(store);
      await w.flush();
      // 500 destinations, SHARED_PART_SIZE to a document: 8 writes, not 500 (the deliveries are counted in usage with their journal batches, not here).
      expect(written(store) - before).toBe(Math.ceil(500 / SHARED_PART_SIZE));
      expect([...(await store.bucketsSince(T0)).keys()].sort()).toEqual([...ids].sort());
      expect(await store.window('acct_d-10', T0)).toEqual([expect.objectContaining({ start: T0, attempts: 1, successes: 0, failures: 1, lastErrors: [expect.objectContaining({ error: 'HTTP 500' })], latency: { b06: 1 } })]);
      const all = await store.windows(ids, T0);
      expect([...all.keys()].sort()).toEqual([...ids].sort());
      expect(ids.every((id, i) => all.get(id)!.length === 1 && all.get(id)![0]!.attempts === 1 && all.get(id)![0]!.successes === (i % 10 === 0 ? 0 : 1))).toBe(true);
      // A few destinations at once (fewer than 30: the shared documents that list them) read the same.
      expect(await store.windows(['acct_d-3', 'acct_d-499', 'never'], T0)).toEqual(new Map([['acct_d-3', all.get('acct_d-3')], ['acct_d-499', all.get('acct_d-499')], ['never', []]]));
      const reader = writer(store, clock, 9);
      expect(await reader.head('acct_d-321', 1)).toEqual([[iso(321), 'acct_d-321.k']]);
      // A second flush to the same destinations writes the same documents again, each once.
      ids.forEach((id) => w.record(id, 'success', new Date(T0 + 1000)));
      clock.advance(1000);
      const mid = written(store);
      await w.flush();
      expect(written(store) - mid).toBe(Math.ceil(500 / SHARED_PART_SIZE));
      expect((await store.window('acct_d-10', T0))[0]).toMatchObject({ attempts: 2, successes: 1, failures: 1 });
    });

    test('a destination sparse, then busy, in one bucket, beside another writer: window, windows, buckets, bucketsSince and the head see every document', async () => {
      const store = await make();
      const clock = manualClock();
      const a = writer(store, clock, 1);
      const b = writer(store, clock, 2);
      const created: RecentEntry[] = [];
      const deliver = (w: Writer, ms: number, outcome: 'success' | 'failure' = 'success') => {
        w.created('acct_hook', `acct_hook.k${ms}`, iso(ms), new Date(T0 + ms + 5));
        w.record('acct_hook', outcome, new Date(T0 + ms + 5), undefined, 10);
        created.push([iso(ms), `acct_hook.k${ms}`]);
      };
      deliver(a, 100);
      deliver(b, 200, 'failure');
      b.settled('acct_hook', 'DEAD', new Date(T0 + 205));
      await a.flush();
      await b.flush();
      // a's destination is busy now: the rest of the bucket in its own document, with a's whole list.
      for (let ms = 1000; ms < 1000 + SPARSE_MAX * 100; ms += 100) deliver(a, ms);
      const before = written(store);
      await a.flush();
      // The destination's document (the deliveries are counted in usage with their journal batches).
      expect(written(store) - before).toBe(1);
      const attempts = created.length;
      const [bucket] = await store.window('acct_hook', T0);
      expect(bucket).toMatchObject({ start: T0, attempts, successes: attempts - 1, failures: 1, settled: { dead: 1 }, latency: { b02: attempts } });
      expect((await store.windows(['acct_hook'], T0)).get('acct_hook')).toEqual([bucket]);
      expect(await a.buckets('acct_hook', T0)).toEqual([bucket]);
      expect(await store.bucketsSince(T0)).toEqual(new Map([['acct_hook', [bucket]]]));
      const reader = writer(store, clock, 9);
      expect(await reader.head('acct_hook', attempts)).toEqual([...created].sort(newestFirst));
      expect(await reader.windows([{ destinationId: 'acct_hook', windowMs: MIN }])).toEqual(new Map([['acct_hook', expect.objectContaining({ attempts, failures: 1 })]]));
    });

    test('the log head proof holds with a destination in shared and own documents: a read cut by its limit never claims older buckets', async () => {
      const store = await make();
      const clock = manualClock();
      const busy = writer(store, clock, 1);
      const sparse = writer(store, clock, 2);
      const truth: RecentEntry[] = [];
      // Six buckets: the busy writer's own document in each, the sparse writer's shared one in the first two.
      for (let bucket = 0; bucket < 6; bucket++) {
        for (let i = 0; i <= SPARSE_MAX; i++) {
          // Past sparse within the bucket, every record inside it.
          const ms = bucket * MIN + i * Math.floor(MIN / (SPARSE_MAX + 2));
          busy.created('acct_log', `acct_log.b${ms}`, iso(ms), new Date(T0 + ms + 5));
          truth.push([iso(ms), `acct_log.b${ms}`]);
        }
        if (bucket < 2) {
          const ms = bucket * MIN + 500;
          sparse.created('acct_log', `acct_log.s${ms}`, iso(ms), new Date(T0 + ms + 5));
          truth.push([iso(ms), `acct_log.s${ms}`]);
        }
        clock.advance(MIN);
        await busy.flush();
        await sparse.flush();
      }
      truth.sort(newestFirst);
      for (const maxDocs of [1, 2, 4, 5, 6, 40]) {
        const buckets = await store.recentLog('acct_log', T0, maxDocs);
        for (let want = 1; want <= truth.length; want++) {
          const head = headOf(buckets, want);
          if (head) expect(head).toEqual(truth.slice(0, want));
        }
      }
      // Read far enough, the whole log is proved.
      expect(headOf(await store.recentLog('acct_log', T0, 40), truth.length)).toEqual(truth);
    });
  });

  describe(`${name} counter store: rollups and what the suspension check reads`, () => {
    test('every document since a time, own and shared, read whole and merged per destination and bucket', async () => {
      const store = await make();
      const clock = manualClock();
      const a = writer(store, clock, 1);
      const b = writer(store, clock, 2);
      for (let i = 0; i <= SPARSE_MAX; i++) a.record('acct_busy', i ? 'success' : 'failure', clock.now(), i ? undefined : { at: clock.now().toISOString(), error: 'HTTP 500' }, 40);
      b.record('acct_busy', 'success', clock.now(), undefined, 40);
      b.record('acct_sparse', 'success', clock.now());
      b.settled('acct_sparse', 'QUEUED', clock.now());
      await Promise.all([a.flush(), b.flush()]);
      clock.advance(MIN);
      a.record('acct_sparse', 'failure', clock.now());
      await a.flush();
      const all = await store.bucketsSince(T0);
      expect([...all.keys()].sort()).toEqual(['acct_busy', 'acct_sparse']);
      for (const id of all.keys()) expect(all.get(id)).toEqual(await store.window(id, T0));
      expect(all.get('acct_busy')).toEqual([expect.objectContaining({ start: T0, attempts: SPARSE_MAX + 2, failures: 1, latency: { b06: SPARSE_MAX + 2 } })]);
      expect([...(await store.bucketsSince(T0 + MIN)).keys()]).toEqual(['acct_sparse']);
    });

    test('a rollup is written only over the version read: a second writer from the same read is refused, each write on its own', async () => {
      const store = await make();
      const minute = { destinationId: 'acct_r', start: T0, attempts: 3, successes: 2, failures: 1, lastErrors: [{ at: new Date(T0).toISOString(), error: 'HTTP 503' }], latency: { b04: 3 }, settled: { dead: 1 } };
      const rollup = { destinationId: 'acct_r', foldedThrough: T0 + MIN, minutes: [minute], coarse: [{ destinationId: 'acct_r', start: T0, attempts: 3, successes: 2, failures: 1, latency: { b04: 3 }, settled: { dead: 1 } }] };
      expect(await store.rollups(['acct_r', 'acct_none'])).toEqual(new Map());
      expect(await store.putRollups([{ rollup, version: undefined }])).toEqual([true]);
      // Another run that read none either: refused.
      expect(await store.putRollups([{ rollup, version: undefined }])).toEqual([false]);
      const read = (await store.rollups(['acct_r', 'acct_none'])).get('acct_r')!;
      expect(read.rollup).toEqual({ ...rollup, coarse: [expect.objectContaining(rollup.coarse[0])] });
      const next = { ...rollup, foldedThrough: T0 + 2 * MIN, minutes: [minute, { ...minute, start: T0 + MIN, lastErrors: [] }] };
      const other = { ...rollup, destinationId: 'acct_other' };
      expect(await store.putRollups([{ rollup: next, version: read.version }, { rollup: other, version: undefined }])).toEqual([true, true]);
      expect(await store.putRollups([{ rollup: { ...next, foldedThrough: T0 + 3 * MIN }, version: read.version }])).toEqual([false]);
      const after = await store.rollups(['acct_r', 'acct_other']);
      expect(after.get('acct_r')!.rollup.foldedThrough).toBe(T0 + 2 * MIN);
      expect(after.get('acct_r')!.rollup.minutes.map((m) => m.start)).toEqual([T0, T0 + MIN]);
      expect(after.get('acct_other')!.rollup.destinationId).toBe('acct_other');
    });

    test("the check's cursor: none at first, then where the last run folded to", async () => {
      const store = await make();
      expect(await store.foldCursor()).toBeUndefined();
      await store.setFoldCursor(T0 + 5 * MIN);
      expect(await store.foldCursor()).toBe(T0 + 5 * MIN);
    });
  });
}
