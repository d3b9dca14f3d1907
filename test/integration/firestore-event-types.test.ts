import { randomBytes } from 'node:crypto';
import { Firestore } from '@google-cloud/firestore';
import { FirestoreEventTypeStore } from '../../shared/adapters/firestore/event-types';
import { OperationCounter } from '../../shared/adapters/firestore/stores';
import { EventTypeCatalogue } from '../../shared/app/destinations/event-type-samples';
import { typeHash } from '../../shared/domain/events/event-type-catalogue';
import { HeraldEvent } from '../../shared/domain/events/event';
import { createLogger } from '../../shared/log';

/** The event-type catalogue on the Firestore emulator: a write per account and document per round, merged writers, and the per-type documents of before. */
const projectId = 'event-types-store-test';
const db = new Firestore({ projectId, ignoreUndefinedProperties: true });
const other = new Firestore({ projectId, ignoreUndefinedProperties: true });
afterAll(() => Promise.all([db.terminate(), other.terminate()]));

/** An account of this run's own (the emulator keeps earlier runs' data). */
const account = (name: string) => `${name}-${randomBytes(4).toString('hex')}`;
const silent = createLogger({ write: () => undefined });
const event = (id: string, type: string, acct: string): HeraldEvent => ({
  attributes: { specversion: '1.0', id, source: '/shop', type, datacontenttype: 'application/json', heraldaccount: acct },
  data: Buffer.from(JSON.stringify({ id, nested: [[1, 2], [3]] })),
});

test("a round's 200 new types of an account cost one write, not one per type; a round seeing them again costs none", async () => {
  const acme = account('acme');
  const ops = new OperationCounter();
  const store = new FirestoreEventTypeStore(db, ops);
  const catalogue = new EventTypeCatalogue(store, silent);
  const events = Array.from({ length: 200 }, (_, i) => event(`e${i}`, `com.example.sparse.${i}`, acme));
  await catalogue.observe([{ id: 'b1', acceptedAt: '2026-11-26T10:00:00.000Z', events }]);
  // One read: the account's catalogue, once (empty: a read all the same).
  expect([ops.writes, ops.reads]).toEqual([1, 1]);
  await catalogue.observe([{ id: 'b2', acceptedAt: '2026-11-26T10:05:00.000Z', events }]);
  expect([ops.writes, ops.reads]).toEqual([1, 1]);
  const docs = await db.collection('event-types').where('account', '==', acme).get();
  expect(docs.size).toBe(1);
  const listed = await store.list(acme);
  expect(listed).toHaveLength(200);
  // The sample round-trips as JSON text (Firestore refuses arrays in arrays as values).
  expect(listed.find((s) => s.type === 'com.example.sparse.7')).toEqual({
    account: acme,
    type: 'com.example.sparse.7',
    lastSeenAt: '2026-11-26T10:00:00.000Z',
    sample: expect.objectContaining({ id: 'e7', data: { id: 'e7', nested: [[1, 2], [3]] } }) as unknown,
  });
});

test('two writers adding types to the same document at once keep both (merge), and a restarted catalogue reads what is there', async () => {
  const acme = account('acme');
  const types = Array.from({ length: 6 }, (_, i) => `com.example.merge.${i}`);
  const a = new FirestoreEventTypeStore(db);
  const b = new FirestoreEventTypeStore(other);
  // Both into the same document.
  const entry = (type: string, n: number) => ({ type, lastSeenAt: `2026-11-26T10:00:0${n}.000Z`, sample: JSON.stringify({ id: type }), shard: 0 });
  await Promise.all([a.record(acme, types.slice(0, 3).map((t) => entry(t, 1))), b.record(acme, types.slice(3).map((t) => entry(t, 2)))]);
  expect((await a.list(acme)).map((s) => s.type)).toEqual([...types].sort());
  expect((await b.known(acme)).map((e) => e.type).sort()).toEqual([...types].sort());
  const ops = new OperationCounter();
  const restarted = new EventTypeCatalogue(new FirestoreEventTypeStore(db, ops), silent);
  await restarted.observe([{ id: 'b', acceptedAt: '2026-11-26T10:00:09.000Z', events: [event('again', types[0]!, acme), event('new', 'com.example.merge.new', acme)] }]);
  // Only the new type is written (the other is within the refresh interval of what the read found).
  expect(ops.writes).toBe(1);
  expect((await a.list(acme)).find((s) => s.type === types[0])!.sample).toEqual({ id: types[0] });
  // Two writers placing one type in two documents: listed once, the newest.
  await b.record(acme, [{ type: types[1]!, lastSeenAt: '2026-11-26T11:00:00.000Z', sample: JSON.stringify({ id: 'newer' }), shard: 5 }]);
  const listed = await a.list(acme);
  expect(listed.filter((s) => s.type === types[1]).map((s) => s.sample)).toEqual([{ id: 'newer' }]);
  expect(listed).toHaveLength(types.length + 1);
});

test('the per-type documents written before the catalogue are listed too, the newest lastSeenAt of a type winning; another account is never listed', async () => {
  const acme = account('acme');
  const store = new FirestoreEventTypeStore(db);
  // As the sampler of before wrote them: `{account}~{hash}`, one per type.
  const legacy = (acct: string, type: string, lastSeenAt: string, id: string) =>
    db.collection('event-types').doc(`${acct}~${typeHash(type)}`).set({ account: acct, type, lastSeenAt, sample: JSON.stringify({ id }) });
  await legacy(acme, 'com.example.old.only', '2026-11-20T00:00:00.000Z', 'old-only');
  await legacy(acme, 'com.example.both', '2026-11-20T00:00:00.000Z', 'old-both');
  await legacy(acme, 'com.example.old.newer', '2026-11-27T00:00:00.000Z', 'old-newer');
  // An account whose id extends acme's is another account.
  await legacy(`${acme}-x`, 'com.example.neighbour', '2026-11-20T00:00:00.000Z', 'neighbour');
  await store.record(acme, [
    { type: 'com.example.both', lastSeenAt: '2026-11-26T00:00:00.000Z', sample: JSON.stringify({ id: 'new-both' }), shard: 0 },
    { type: 'com.example.old.newer', lastSeenAt: '2026-11-26T00:00:00.000Z', sample: JSON.stringify({ id: 'new-older' }), shard: 1 },
  ]);
  expect((await store.list(acme)).map((s) => [s.type, s.lastSeenAt, s.sample.id])).toEqual([
    ['com.example.both', '2026-11-26T00:00:00.000Z', 'new-both'],
    ['com.example.old.newer', '2026-11-27T00:00:00.000Z', 'old-newer'],
    ['com.example.old.only', '2026-11-20T00:00:00.000Z', 'old-only'],
  ]);
  // The catalogue's memory is its own documents: an old type is moved into them by its next event.
  expect((await store.known(acme)).map((e) => e.type).sort()).toEqual(['com.example.both', 'com.example.old.newer']);
});
