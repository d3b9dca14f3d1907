import { Firestore } from '@google-cloud/firestore';
import { OperationCounter } from '../../shared/adapters/firestore/stores';
import { FirestoreDestinationStore } from '../../shared/adapters/firestore/destinations';
import { applySpec } from '../../shared/domain/destinations/destination';
import { COLLECTIONS } from '../../shared/firestore-schema';

/**
 * Each account's destination count (its quota check) on the Firestore emulator: one read,
 * kept by every create and delete, and taken whole once for data from before it existed.
 */
const projectId = `dest-counts-${Date.now().toString(36)}`;
const db = new Firestore({ projectId, ignoreUndefinedProperties: true });
afterAll(() => db.terminate());

const at = new Date('2026-11-27T00:00:00Z');
const dest = (id: string) => applySpec(id, { url: `https://example.com/${id}` }, undefined, at);

test('one read per count, whatever the registry holds; creates, update-creates, replacements and deletes keep it exact', async () => {
  const ops = new OperationCounter();
  const store = new FirestoreDestinationStore(db, ops);
  for (let i = 0; i < 5; i++) await store.put(dest(`acme_d${i}`));
  for (let i = 0; i < 40; i++) await store.put(dest(`other${i}_d`));
  await store.put(dest('acme_d0')); // a replacement: no new destination
  await store.update('acme_made', (current) => current ?? dest('acme_made'));
  await store.update('acme_d1', (current) => current && { ...current, technicalEmail: 'ops@example.com' });
  await store.delete('acme_d2');
  await store.delete('acme_d2'); // gone already: counted once

  const reads = ops.reads;
  // Taken whole the first time (the document holds increments only until then), one read after.
  expect(await store.countAccount('acme')).toBe(5);
  const afterFirst = ops.reads;
  expect(await store.countAccount('acme')).toBe(5);
  expect(ops.reads - afterFirst).toBe(1);
  expect(afterFirst - reads).toBeLessThanOrEqual(3);

  await store.put(dest('acme_d9'));
  await store.delete('acme_d3');
  await store.put(dest('acme_d10'));
  expect(await store.countAccount('acme')).toBe(6);
  expect((await store.listAccount('acme')).length).toBe(6);
});

test('an account whose destinations were written before counts existed is counted once, exactly, also with creates racing the count', async () => {
  const ops = new OperationCounter();
  const store = new FirestoreDestinationStore(db, ops);
  // As an older Herald left them: documents and no count.
  for (let i = 0; i < 12; i++) await db.collection(COLLECTIONS.destinations).doc(`legacy_d${i}`).set(dest(`legacy_d${i}`));
  // Creates while the first count is taken: each either in the count or an increment after it.
  const [count] = await Promise.all([store.countAccount('legacy'), ...Array.from({ length: 6 }, (_, i) => store.put(dest(`legacy_new${i}`)))]);
  expect(count).toBeGreaterThanOrEqual(12);
  expect(count).toBeLessThanOrEqual(18);
  expect(await store.countAccount('legacy')).toBe(18);
  const doc = (await db.collection(COLLECTIONS.destinationCounts).doc('legacy').get()).data();
  expect(doc).toEqual({ count: 18, exact: true });
});

describe("the default account's list (its ids carry no account prefix to range over)", () => {
  test('reads its count and its own destinations, not the registry; documents from before the mark are found, marked once, and a rewrite that dropped the mark is found again', async () => {
    const project = new Firestore({ projectId: `${projectId}-default`, ignoreUndefinedProperties: true });
    try {
      const ops = new OperationCounter();
      const store = new FirestoreDestinationStore(project, ops);
      for (let i = 0; i < 60; i++) await store.put(dest(`tenant${i}_hook`));
      // Two as an older Herald wrote them (no mark, no count), three now.
      for (const id of ['old-a', 'old-b']) await project.collection(COLLECTIONS.destinations).doc(id).set(dest(id));
      for (const id of ['new-a', 'new-b', 'new-c']) await store.put(dest(id));
      const ids = async () => (await store.listAccount('default')).map((d) => d.id).sort();
      const all = ['new-a', 'new-b', 'new-c', 'old-a', 'old-b'];

      // The first list reads the registry once, marks the two and takes the count.
      expect(await ids()).toEqual(all);
      expect((await project.collection(COLLECTIONS.destinationCounts).doc('default').get()).data()).toEqual({ count: 5, exact: true, listable: true });
      // From then on: the count and its own five.
      const before = ops.reads;
      expect(await ids()).toEqual(all);
      expect(ops.reads - before).toBe(1 + 5);
      expect((await store.listAccount('default'))[0]).not.toHaveProperty('defaultAccount');

      // An older version rewrites one without the mark (a rolling deploy): the count tells, the registry is read again.
      await project.collection(COLLECTIONS.destinations).doc('new-b').set(dest('new-b'));
      expect(await ids()).toEqual(all);
      const again = ops.reads;
      expect(await ids()).toEqual(all);
      expect(ops.reads - again).toBe(1 + 5);
      // Creates and deletes keep it so.
      await store.put(dest('new-d'));
      await store.delete('old-a');
      expect(await ids()).toEqual(['new-a', 'new-b', 'new-c', 'new-d', 'old-b']);
    } finally {
      await project.terminate();
    }
  });
});
