import { Firestore } from '@google-cloud/firestore';
import { FirestoreCounterStore } from '../../shared/adapters/firestore-counters';
import { OperationCounter } from '../../shared/adapters/firestore-stores';
import { counterStoreConformance } from '../support/counter-store-conformance';

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
    // As a writer's flush leaves them: 8 shared documents of 64 destinations (destination-counters.ts SHARED_PART_SIZE).
    await store.add(
      ids.map((destinationId, i) => ({ destinationId, bucketStart, attempts: 1, successes: 1, failures: 0, lastErrors: [], group: `wtest~${Math.floor(i / 64)}` })),
      0,
    );
    expect(counted.writes).toBe(8);
    counted.reset();
    const active = await store.activeSince(bucketStart);
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
