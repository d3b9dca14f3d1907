import { DocumentReference, Firestore } from '@google-cloud/firestore';
import { createIfAbsent, deleteIfExists, ifPresent, NewDocumentExists, readDecideWrite, readManyDecideWrite, RetryOptions, transactOne } from '../../shared/adapters/firestore/write';
import { WriteContentionError } from '../../shared/ports/deliveries';

/**
 * The stores' optimistic read-decide-write and delete (shared/adapters/firestore/write.ts) on
 * the Firestore emulator: a write replaces the whole document, many at once lose nothing and
 * take no transaction lock (which the emulator serialises, seconds each), a lost race past the budget is WriteContentionError, and of many
 * deletes at once exactly one deletes; and the transactional and create-if-absent helpers.
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

test('20 read-modify-writes of one document at once: none lost, none locked', async () => {
  const ref = col.doc('counter');
  await ref.set({ n: 0 });
  // How long they take is the bench's (test/bench/contention.ts): on a busy machine any bound here is luck.
  const transactions = jest.spyOn(Firestore.prototype, 'runTransaction');
  // Two clients: two "instances", whose writes race in Firestore, not in one process's queue.
  const other = new Firestore({ projectId: PROJECT, ignoreUndefinedProperties: true });
  try {
    await Promise.all(Array.from({ length: 20 }, (_, i) => readDecideWrite<Doc>(i % 2 ? other : db, (i % 2 ? other : db).collection('docs').doc('counter'), (c) => ({ n: (c!.n as number) + 1 }), plain)));
  } finally {
    await other.terminate();
  }
  expect(transactions).not.toHaveBeenCalled();
  transactions.mockRestore();
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

test('a store so slow that one lost try spends the budget is tried again (a slow commit is not contention)', async () => {
  const ref = col.doc('slow');
  await ref.set({ n: 0 });
  const tight: RetryOptions = { budgetMs: 50, firstPauseMs: 1, maxPauseMs: 5 };
  // The first try reads slowly, past the whole budget, and loses its race once.
  let first = true;
  const slow = Object.create(ref) as DocumentReference;
  slow.get = async () => {
    const snap = await ref.get();
    if (first) {
      first = false;
      await new Promise((r) => setTimeout(r, 80));
      await ref.set({ n: 1 });
    }
    return snap;
  };
  await expect(readDecideWrite<Doc>(db, slow, (c) => ({ n: (c!.n as number) + 1 }), plain, tight)).resolves.toMatchObject({ written: { n: 2 } });
  expect((await ref.get()).data()).toEqual({ n: 2 });
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

test('createIfAbsent: of 10 creates at once exactly one is true, the rest false with nothing written; other errors are thrown', async () => {
  const ref = col.doc('once');
  const results = await Promise.all(Array.from({ length: 10 }, (_, i) => createIfAbsent(() => ref.create({ i }))));
  expect(results.filter(Boolean)).toHaveLength(1);
  expect((await ref.get()).data()).toEqual({ i: results.indexOf(true) });
  // A batch holding a create: refused whole, its other write too.
  const batch = db.batch();
  batch.create(ref, { i: -1 });
  batch.set(col.doc('with-once'), { x: 1 });
  expect(await createIfAbsent(() => batch.commit())).toBe(false);
  expect((await col.doc('with-once').get()).exists).toBe(false);
  await expect(createIfAbsent(() => ref.update({ 'a..b': 1 }))).rejects.toThrow();
});

test('ifPresent: an update of a missing document is false, of a present one true; other errors are thrown', async () => {
  expect(await ifPresent(() => col.doc('missing').update({ x: 1 }))).toBe(false);
  expect((await col.doc('missing').get()).exists).toBe(false);
  await col.doc('present').set({ x: 1 });
  expect(await ifPresent(() => col.doc('present').update({ x: 2 }))).toBe(true);
  expect((await col.doc('present').get()).data()).toEqual({ x: 2 });
  await expect(ifPresent(() => col.doc('present').create({ x: 3 }))).rejects.toThrow();
});

test('transactOne: set, update, delete or nothing, as decided from what it read; 4 at once on one document lose nothing', async () => {
  const ref = col.doc('tx');
  expect(await transactOne(db, ref, (current) => ({ result: current, write: { set: { n: 0, keep: true } } }))).toEqual({ result: undefined, reads: 1 });
  expect(await transactOne(db, ref, (current) => ({ result: current?.n, write: { update: { n: 1 } } }))).toEqual({ result: 0, reads: 1 });
  expect((await ref.get()).data()).toEqual({ n: 1, keep: true });
  expect(await transactOne(db, ref, () => ({ result: 'nothing' }))).toEqual({ result: 'nothing', reads: 1 });
  expect((await ref.get()).data()).toEqual({ n: 1, keep: true });
  // Contended: Firestore runs the transaction again, and `reads` counts every try.
  const other = new Firestore({ projectId: PROJECT, ignoreUndefinedProperties: true });
  try {
    const runs = await Promise.all(
      Array.from({ length: 4 }, (_, i) => {
        const client = i % 2 ? other : db;
        return transactOne(client, client.collection('docs').doc('tx'), (current) => ({ result: undefined, write: { update: { n: (current!.n as number) + 1 } } }));
      }),
    );
    expect((await ref.get()).data()).toEqual({ n: 5, keep: true });
    expect(runs.reduce((sum, r) => sum + r.reads, 0)).toBeGreaterThanOrEqual(4);
  } finally {
    await other.terminate();
  }
  expect(await transactOne(db, ref, () => ({ result: true, write: { delete: true } }))).toEqual({ result: true, reads: 1 });
  expect((await ref.get()).exists).toBe(false);
});

test('an optimistic write over several documents: 20 at once from two clients move a key and its records exactly; an unread create of an existing document is NewDocumentExists', async () => {
  const other = new Firestore({ projectId: PROJECT, ignoreUndefinedProperties: true });
  await col.doc('key').set({ n: 0 });
  try {
    // Each writer bumps the key and writes a record named by the value it read: a lost race must decide again.
    await Promise.all(
      Array.from({ length: 20 }, (_, i) => {
        const client = i % 2 ? other : db;
        const docs = client.collection('docs');
        return readManyDecideWrite(client, 'key', async (io) => {
          const [key] = await io.getAll([docs.doc('key')]);
          const n = (key!.n as number) + 1;
          io.put(docs.doc('key'), { n });
          io.put(docs.doc(`rec-${n}`), { n });
        });
      }),
    );
  } finally {
    await other.terminate();
  }
  expect((await col.doc('key').get()).get('n')).toBe(20);
  const records = await db.getAll(...Array.from({ length: 20 }, (_, i) => col.doc(`rec-${i + 1}`)));
  expect(records.every((r) => r.exists)).toBe(true);
  await expect(readManyDecideWrite(db, 'rec', async (io) => io.put(col.doc('rec-1'), { n: 0 }))).rejects.toBeInstanceOf(NewDocumentExists);
  expect((await col.doc('rec-1').get()).get('n')).toBe(1);
});
