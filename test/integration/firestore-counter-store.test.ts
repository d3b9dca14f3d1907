import { Firestore } from '@google-cloud/firestore';
import { FirestoreCounterStore } from '../../shared/adapters/firestore/counters';
import { OperationCounter } from '../../shared/adapters/firestore/stores';
import { counterStoreConformance } from '../support/counter-store-conformance';
import { getAccountStats } from '../../shared/app/admin/stats-admin';
import { DestinationCounters } from '../../shared/app/destinations/destination-counters';
import { SPARSE_MAX } from '../../shared/app/destinations/counter-writer';
import { checkThresholds } from '../../shared/app/delivery/suspend-and-reactivate';
import { statsDeps, thresholdCheck } from '../support/rollup-check';
import { createLogger } from '../../shared/log';
import { Clock } from '../../shared/ports/clock';
import { patient } from '../support/patience';

const projectId = `rate-store-test-${process.pid}`;
const db = new Firestore({ projectId, ignoreUndefinedProperties: true });

async function wipe(): Promise<void> {
  const res = await fetch(`http://${process.env.FIRESTORE_EMULATOR_HOST}/emulator/v1/projects/${projectId}/databases/(default)/documents`, { method: 'DELETE' });
  if (!res.ok) throw new Error(`could not clear the Firestore emulator: ${res.status}`);
}

afterAll(() => db.terminate());

// Writes as the store counts them (OperationCounter, which the cost bench reads): one per document written.
const ops = new OperationCounter();
counterStoreConformance(
  'firestore',
  async () => {
    await wipe();
    return new FirestoreCounterStore(db, ops);
  },
  () => ops.writes,
);

describe('firestore counter store: what the suspension check reads', () => {
  test('500 sparse destinations: their windows read together cost the shared documents once and an `in` query per 30, not a query per destination', async () => {
    await wipe();
    const counted = new OperationCounter();
    const store = new FirestoreCounterStore(db, counted);
    const ids = Array.from({ length: 500 }, (_, i) => `acct_s-${i}`);
    const bucketStart = Date.parse('2026-11-26T10:00:00.000Z');
    // As a writer's flush leaves them: 8 shared documents of 64 destinations (counter-writer.ts SHARED_PART_SIZE).
    await store.add(
      ids.map((destinationId, i) => ({ destinationId, bucketStart, attempts: 1, successes: 1, failures: 0, lastErrors: [], group: `wtest~${Math.floor(i / 64)}` })),
      0,
    );
    expect(counted.writes).toBe(8);
    counted.reset();
    const active = [...(await store.bucketsSince(bucketStart)).keys()];
    expect(active).toHaveLength(500);
    // Own documents (none here: one read for the empty query) and the 8 shared ones.
    expect(counted.reads).toBe(1 + 8);
    counted.reset();
    const windows = await store.windows(active, bucketStart);
    expect([...windows.values()].every((w) => w.length === 1 && w[0]!.attempts === 1)).toBe(true);
    // 17 `in` queries over own documents (empty: a read each) and the 8 shared documents once.
    expect(counted.reads).toBe(Math.ceil(500 / 30) + 8);
    counted.reset();
    // One by one, as the check read before: a read per destination at least (here two: own and shared).
    for (const id of ids.slice(0, 50)) await store.window(id, bucketStart);
    expect(counted.reads).toBe(50 * 2);
  });
});

describe('firestore counter store: rollups (issue 36), reads counted as billed', () => {
  const MIN = 60_000;
  const T0 = Date.parse('2026-11-26T10:00:00.000Z');
  const quiet = createLogger({ write: () => undefined });
  const operator = { kind: 'operator' } as unknown as Parameters<typeof getAccountStats>[1];

  test('200 destinations busy all hour, checked every ten minutes: the next check run reads at most 3 documents per active destination, judges all, suspends the last in sort order; stats of 10 read their rollups', async () => {
    await wipe();
    let now = T0;
    const clock: Clock = { now: () => new Date(now) };
    const counted = new OperationCounter();
    const store = new FirestoreCounterStore(db, counted);
    const writer = new DestinationCounters(store, clock, quiet, { bucketMs: MIN, flushMs: 1000, shard: 1 });
    const checker = new DestinationCounters(store, clock, quiet, { bucketMs: MIN, flushMs: 1000, shard: 2 });
    const ten = Array.from({ length: 10 }, (_, i) => `ten_d${i}`);
    const last = 'zzzz_last';
    const ids = [...ten, ...Array.from({ length: 188 }, (_, i) => `acct-${String(i).padStart(3, '0')}_hook`), 'acct-999_extra', last];
    const { registry, deps } = await thresholdCheck(ids, checker, clock, quiet);
    const minute = async (m: number, failLast: boolean) => {
      now = T0 + m * MIN + 5000;
      // Busy: past sparse each minute, so each has documents of its own (CounterWriter SPARSE_MAX).
      for (const id of ids) for (let i = 0; i <= SPARSE_MAX; i++) writer.record(id, 'success', clock.now(), undefined, 20 + (i % 20) * 30);
      if (failLast) for (let i = 0; i < 400; i++) writer.record(last, 'failure', clock.now(), { at: clock.now().toISOString(), error: 'HTTP 503' });
      await writer.flush();
    };
    // Checked 15 s into every tenth minute (the scheduler's runs, fewer of them: each reads the
    // counter documents written since the last, so the hour is read once, not once a run).
    for (let m = 0; m <= 60; m++) {
      await minute(m, false);
      if (m % 10 !== 0 || m === 0) continue;
      now = T0 + m * MIN + 15_000;
      if (m > 10) {
        // Steady: each rollup folds the ten minutes since, from one read of them all.
        expect(await checkThresholds(deps)).toMatchObject({ checked: ids.length, suspended: [], folded: ids.length });
        continue;
      }
      // No rollup yet: runs catch them up from their ten minutes of counters, as many as each has
      // time for (the rest judged on those, as before), until all are; each run catches some up.
      let caughtUp = 0;
      while (caughtUp < ids.length) {
        const report = await checkThresholds(deps);
        expect(report).toMatchObject({ checked: ids.length, suspended: [] });
        expect(report.folded).toBeGreaterThan(0);
        caughtUp += report.folded;
      }
      expect(caughtUp).toBe(ids.length);
    }
    // The next minute fails for the last destination; the scheduler's next run, 15 s into it.
    await minute(61, true);
    now = T0 + 61 * MIN + 15_000;
    counted.reset();
    const second = await checkThresholds(deps);
    expect(second).toMatchObject({ checked: ids.length, suspended: [last], active: ids.length, folded: ids.length });
    // Per destination its rollup and the documents of two buckets; per run the cursor and the empty query of shared documents.
    expect(counted.reads).toBeLessThanOrEqual(3 * ids.length + 2);
    expect((await registry.get(last))?.status).toBe('suspended');

    // An account of 10 destinations busy all hour: each stats request reads their rollups and two buckets of counters.
    const { rolled, raw } = statsDeps(ten, clock, checker, store, MIN);
    for (const query of [{ window: '1h' }, { window: '24h' }, { window: '1h', destination: 'd3', counts: 'false' }, { window: '24h', destination: 'd9', counts: 'false' }]) {
      counted.reset();
      const answer = await getAccountStats(rolled, operator, 'ten', query);
      // 50 a request at most with the listing (10) and the two count aggregations: the counters take at most 3 a destination and 2 a request.
      expect(counted.reads).toBeLessThanOrEqual(3 * (query.destination ? 1 : ten.length) + 2);
      counted.reset();
      expect(answer).toEqual(await getAccountStats(raw, operator, 'ten', query));
      // The same from the counter documents alone, as before rollups: a document a minute a destination.
      expect(counted.reads).toBeGreaterThanOrEqual((query.destination ? 1 : ten.length) * 60);
    }
  }, patient(120_000));
});
