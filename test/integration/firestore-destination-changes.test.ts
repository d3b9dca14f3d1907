import { Firestore } from '@google-cloud/firestore';
import { OperationCounter } from '../../shared/adapters/firestore/stores';
import { FirestoreDestinationStore } from '../../shared/adapters/firestore/destinations';
import { applySpec } from '../../shared/domain/destinations/destination';

/** The destination change log on the Firestore emulator: every write path logs, and a look returns only what changed. */
const projectId = `dest-changes-${Date.now().toString(36)}`;
const db = new Firestore({ projectId, ignoreUndefinedProperties: true });
afterAll(() => db.terminate());

const at = new Date('2026-11-25T10:00:00Z');
const dest = (id: string, types: string[] = []) => applySpec(id, { url: `https://example.com/${id}`, eventTypes: types }, undefined, at);
const ids = (ds: { id: string }[]) => ds.map((d) => d.id).sort();

test('a first look reads where the log stands, no destination; then put, update and delete each show up once, and nothing else does', async () => {
  const ops = new OperationCounter();
  const store = new FirestoreDestinationStore(db, ops);
  await store.put(dest('kept'));
  await store.put(dest('changed'));
  await store.put(dest('deleted'));
  const all = await store.changesSince(undefined);
  // A fresh directory starts here: one read, however many destinations (or changes) there are.
  expect(ops.reads).toBe(1);
  expect(all).toMatchObject({ upserted: [], removed: [] });

  // A look reaches 5 s back before the last one (a change seen twice changes nothing):
  // once the writes are older than that, a look with nothing new returns nothing.
  await new Promise((r) => setTimeout(r, 5_100));
  const overlap = await store.changesSince(all.readTime);
  const quiet = await store.changesSince(overlap.readTime);
  expect(quiet).toMatchObject({ upserted: [], removed: [] });

  await store.update('changed', (d) => d && { ...d, eventTypes: ['com.example.x'] });
  await store.delete('deleted');
  await store.put(dest('added'));
  const readsBefore = ops.reads;
  const next = await store.changesSince(quiet.readTime);
  // Each entry carries the destination as written: three entries read, no destination document.
  expect(ops.reads - readsBefore).toBe(3);
  expect(ids(next.upserted)).toEqual(['added', 'changed']);
  expect(next.upserted.find((d) => d.id === 'changed')?.eventTypes).toEqual(['com.example.x']);
  expect(next.removed).toEqual(['deleted']);
  expect(next.readTime.getTime()).toBeGreaterThanOrEqual(quiet.readTime.getTime());
}, 20_000);
