import { Firestore } from '@google-cloud/firestore';
import { FirestoreIntakeStore } from '../../shared/adapters/firestore/intake';
import { IntakeBatch } from '../../shared/domain/intake/intake';

/** The intake journal on the Firestore emulator: batches kept whole (event bytes too), found by age, removed together. */
const projectId = 'intake-store-test';
const db = new Firestore({ projectId, ignoreUndefinedProperties: true });
afterAll(() => db.terminate());

const batch = (id: string, acceptedAt: string): IntakeBatch => ({
  id,
  acceptedAt,
  events: [{ attributes: { specversion: '1.0', id: `e-${id}`, source: '/s', type: 't' }, data: Buffer.from([0, 255, 10]) }],
});

test('add, due (oldest first, after a time), remove', async () => {
  const store = new FirestoreIntakeStore(db);
  await store.add(batch('i-3', '2026-11-25T10:00:03.000Z'));
  await store.add(batch('i-1', '2026-11-25T10:00:01.000Z'));
  await store.add(batch('i-2', '2026-11-25T10:00:02.000Z'));
  const due = await store.due(new Date('2026-11-25T10:00:02.500Z'), 10);
  expect(due.map((b) => b.id)).toEqual(['i-1', 'i-2']);
  expect(due[0]!.events[0]!.data.equals(Buffer.from([0, 255, 10]))).toBe(true);
  expect((await store.due(new Date('2026-11-25T10:00:05.000Z'), 10, '2026-11-25T10:00:01.000Z')).map((b) => b.id)).toEqual(['i-2', 'i-3']);
  await store.remove(['i-1', 'i-2']);
  expect((await store.due(new Date('2026-11-25T10:00:05.000Z'), 10)).map((b) => b.id)).toEqual(['i-3']);
  await store.remove(['i-3']);
});

test('holds: whether a batch is stored, read without its events (one read), as a failed write is checked', async () => {
  const store = new FirestoreIntakeStore(db);
  await store.add(batch('i-held', '2026-11-25T10:00:04.000Z'));
  expect(await store.holds('i-held')).toBe(true);
  expect(await store.holds('i-never')).toBe(false);
  await store.remove(['i-held']);
  expect(await store.holds('i-held')).toBe(false);
});
