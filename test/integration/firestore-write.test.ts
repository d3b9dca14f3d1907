import { DocumentReference, Firestore } from '@google-cloud/firestore';
import { deleteIfExists, readDecideWrite, RetryOptions } from '../../shared/adapters/firestore-write';
import { WriteContentionError } from '../../shared/ports';

/**
 * The stores' optimistic read-decide-write and delete (shared/adapters/firestore-write.ts) on
 * the Firestore emulator: a write replaces the whole document, many at once lose nothing and
 * take well under a second, a lost race past the budget is WriteContentionError, and of many
 * deletes at once exactly one deletes.
 */
const PROJECT = `firestore-write-${Date.now().toString(36)}`;
const db = new Firestore({ projectId: PROJECT, ignoreUndefinedProperties: true });
const col = db.collection('docs');
type Doc = Record<string, unknown>;
const plain = { decode: (d: Doc) => d, encode: (d: Doc) => d };

afterAll(async () => {
  await db.terminate();
});

test('creates an absent document, replaces a present one whole (fields it lacks deleted, maps replaced, a dotted name one field)', async () => {
  const ref = col.doc('whole');
  const made = await readDecideWrite<Doc>(db, ref, (current) => (current ? undefined : { id: 'whole', keep: 1, drop: 'x', nested: { a: 1, b: 2 } }), plain);
  expect(made).toEqual({ written: { id: 'whole', keep: 1, drop: 'x', nested: { a: 1, b: 2 } }, reads: 1, writes: 1 });
  await readDecideWrite<Doc>(db, ref, (current) => ({ id: current!.id, keep: 2, nested: { a: 3 }, 'notification.webhook.failure.policy': 'queue', gone: undefined }), plain);
  expect((await ref.get()).data()).toEqual({ id: 'whole', keep: 2, nested: { a: 3 }, 'notification.webhook.failure.policy': 'queue' });
  // Deciding nothing writes nothing.
  expect(await readDecideWrite<Doc>(db, ref, () => undefined, plain)).toEqual({ written: undefined, reads: 1, writes: 0 });
});

test('20 read-modify-writes of one document at once: none lost, all within a second', async () => {
  const ref = col.doc('counter');
  await ref.set({ n: 0 });
  const start = performance.now();
  // Two clients: two "instances", whose writes race in Firestore, not in one process's queue.
  const other = new Firestore({ projectId: PROJECT, ignoreUndefinedProperties: true });
  try {
    await Promise.all(Array.from({ length: 20 }, (_, i) => readDecideWrite<Doc>(i % 2 ? other : db, (i % 2 ? other : db).collection('docs').doc('counter'), (c) => ({ n: (c!.n as number) + 1 }), plain)));
  } finally {
    await other.terminate();
  }
  expect(performance.now() - start).toBeLessThan(1_000);
  expect((await ref.get()).data()).toEqual({ n: 20 });
});

test('a writer that keeps losing past its budget gives up with WriteContentionError, having written nothing', async () => {
  const ref = col.doc('busy');
  await ref.set({ n: 0 });
  const tight: RetryOptions = { budgetMs: 50, firstPauseMs: 1, maxPauseMs: 5 };
  // Another writer changes the document between each of this one's reads and its write.
  let n = 100;
  const raced = Object.create(ref) as DocumentReference;
  raced.get = async () => {
    const snap = await ref.get();
    await ref.set({ n: ++n });
    return snap;
  };
  await expect(readDecideWrite<Doc>(db, raced, (c) => ({ n: (c!.n as number) + 1, mine: true }), plain, tight)).rejects.toBeInstanceOf(WriteContentionError);
  expect((await ref.get()).data()).toEqual({ n });
});

test('of 20 deletes at once exactly one deletes, and its companion write goes with it alone', async () => {
  const ref = col.doc('doomed');
  await ref.set({ x: 1 });
  const results = await Promise.all(Array.from({ length: 20 }, (_, i) => deleteIfExists(db, ref, (batch) => batch.set(col.doc(`log-${i}`), { i }))));
  expect(results.filter(Boolean)).toHaveLength(1);
  expect((await ref.get()).exists).toBe(false);
  const logs = await Promise.all(Array.from({ length: 20 }, (_, i) => col.doc(`log-${i}`).get()));
  expect(logs.filter((l) => l.exists)).toHaveLength(1);
  expect(await deleteIfExists(db, ref)).toBe(false);
});
