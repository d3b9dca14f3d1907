import { RateRecorder } from '../../shared/app/rate-recorder';
import { createLogger } from '../../shared/log';
import { Clock, RateStore } from '../../shared/ports';

const MIN = 60_000;
const quiet = createLogger({ write: () => undefined });
const T0 = Date.parse('2026-11-26T10:00:00.000Z');

function manualClock(start = T0): Clock & { advance(ms: number): void } {
  let now = start;
  return { now: () => new Date(now), advance: (ms) => void (now += ms) };
}

/** What the counters carry beside the success rate — the log head, the settled counts — written and read back: the same with every rate store. */
export function rateStoreConformance(name: string, make: () => Promise<RateStore> | RateStore): void {
  describe(`${name} rate store: settled counts and the delivery log's head`, () => {
    test('deliveries that became DEAD or QUEUED are summed per bucket across writers, in the counters\' one write', async () => {
      const store = await make();
      const clock = manualClock();
      const a = new RateRecorder(store, clock, quiet, { bucketMs: MIN, flushMs: 1000, shard: 2 });
      const b = new RateRecorder(store, clock, quiet, { bucketMs: MIN, flushMs: 1000, shard: 2 });
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
      const a = new RateRecorder(store, clock, quiet, { bucketMs: MIN, flushMs: 1000, shard: 7 });
      const b = new RateRecorder(store, clock, quiet, { bucketMs: MIN, flushMs: 1000, shard: 7 });
      const iso = (ms: number) => new Date(T0 + ms).toISOString();
      // Bucket 1 (T0 … T0+60 s): a creates 3, b creates 2; bucket 2: a creates 2.
      for (const [w, ms] of [[a, 1000], [b, 2000], [a, 3000], [b, 4000], [a, 5000]] as const) w.created('acct_dest', `acct_dest.k${ms}`, iso(ms), new Date(T0 + ms + 10));
      clock.advance(MIN);
      a.created('acct_dest', 'acct_dest.k61000', iso(61_000), new Date(T0 + 61_010));
      a.created('acct_dest', 'acct_dest.k62000', iso(62_000), new Date(T0 + 62_010));
      a.created('other_dest', 'other_dest.k1', iso(61_500), new Date(T0 + 61_600));
      await a.flush();
      await b.flush();
      const reader = new RateRecorder(store, clock, quiet, { bucketMs: MIN, flushMs: 1000, shard: 9 });
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
      const w = new RateRecorder(store, clock, quiet, { bucketMs: MIN, flushMs: 1000, shard: 1 });
      w.created('solo', 'solo.k1', new Date(T0).toISOString(), new Date(T0 + 5));
      expect((await w.head('solo', 1))?.map((e) => e[1])).toEqual(['solo.k1']);
    });
  });
}
