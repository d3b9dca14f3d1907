import { Firestore, WriteBatch } from '@google-cloud/firestore';
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
  await store.remove(due);
  expect((await store.due(new Date('2026-11-25T10:00:05.000Z'), 10)).map((b) => b.id)).toEqual(['i-3']);
  await store.remove(await store.due(new Date('2026-11-25T10:00:05.000Z'), 10));
});

test('holds: whether a batch is stored, read without its events (one read), as a failed write is checked', async () => {
  const store = new FirestoreIntakeStore(db);
  await store.add(batch('i-held', '2026-11-25T10:00:04.000Z'));
  expect(await store.holds('i-held')).toBe(true);
  expect(await store.holds('i-never')).toBe(false);
  await store.remove([batch('i-held', '2026-11-25T10:00:04.000Z')]);
  expect(await store.holds('i-held')).toBe(false);
});

test('removing batches counts their events in usage once, in the same commit: two reconcilers removing the same batches count them once', async () => {
  const store = new FirestoreIntakeStore(db);
  const account = `acct-${Date.now().toString(36)}`;
  const event = (id: string, type: string, acct: string | undefined) => ({ attributes: { specversion: '1.0' as const, id, source: '/s', type, ...(acct ? { heraldaccount: acct } : {}) }, data: Buffer.from('{}') });
  const batches: IntakeBatch[] = Array.from({ length: 6 }, (_, i) => ({
    id: `i-usage-${i}`,
    // The last two on the next UTC day: counted on the day each batch was accepted.
    acceptedAt: i < 4 ? `2026-11-30T23:59:5${i}.000Z` : `2026-12-01T00:00:0${i}.000Z`,
    events: [event(`a-${i}`, 'com.example.t', account), event(`b-${i}`, 'herald.delivery.dead', account), event(`c-${i}`, 'com.example.t', `${account}-other`)],
  }));
  for (const b of batches) await store.add(b);
  // Two rounds took overlapping batches: each batch is removed, and counted, by one of them only.
  await Promise.all([store.remove(batches.slice(0, 4)), store.remove(batches.slice(2)), new FirestoreIntakeStore(db).remove(batches.slice(1, 5))]);
  // A round that runs again after a lost reply finds them gone: nothing more is counted.
  await store.remove(batches);
  expect(await store.due(new Date('2026-12-02T00:00:00.000Z'), 10, '2026-11-30T23:59:00.000Z')).toEqual([]);
  const docs = (await db.collection('usage').where('account', 'in', [account, `${account}-other`]).get()).docs.map((d) => ({ id: d.id, ...d.data() }) as { id: string; account: string; day: string; eventsAccepted: number; operationalEvents: number });
  const row = (acct: string, day: string) => docs.filter((d) => d.account === acct && d.day === day).map((d) => [d.id, d.eventsAccepted, d.operationalEvents]);
  expect(row(account, '2026-11-30')).toEqual([[`${account}_2026-11-30~intake`, 8, 4]]);
  expect(row(account, '2026-12-01')).toEqual([[`${account}_2026-12-01~intake`, 4, 2]]);
  expect(row(`${account}-other`, '2026-11-30')).toEqual([[`${account}-other_2026-11-30~intake`, 4, 0]]);
  expect(row(`${account}-other`, '2026-12-01')).toEqual([[`${account}-other_2026-12-01~intake`, 2, 0]]);
});

test('a batch is stored as one bytes field; a batch stored before, with its events as maps, still reads back', async () => {
  const store = new FirestoreIntakeStore(db);
  const stored = batch('i-packed', '2026-11-25T09:00:01.000Z');
  await store.add(stored);
  const doc = (await db.collection('intake').doc('i-packed').get()).data()!;
  expect(Object.keys(doc).sort()).toEqual(['acceptedAt', 'count', 'id', 'packed']);
  await db.collection('intake').doc('i-legacy').set({ id: 'i-legacy', acceptedAt: '2026-11-25T09:00:02.000Z', progress: 1, events: [...stored.events, ...stored.events].map((e) => ({ attributes: { ...e.attributes }, data: e.data })) });
  const due = await store.due(new Date('2026-11-25T09:00:03.000Z'), 10, '2026-11-25T09:00:00.000Z');
  expect(due.map((b) => [b.id, b.events.length, b.progress])).toEqual([
    ['i-packed', 1, undefined],
    ['i-legacy', 2, 1],
  ]);
  for (const b of due) expect(b.events.map((e) => [e.attributes.id, [...e.data]])).toEqual(b.events.map(() => ['e-i-packed', [0, 255, 10]]));
  await store.remove(due);
});

describe('records adopted from an intake never journaled (domain/intake/intake-ownership.ts)', () => {
  const at = Date.parse('2026-11-25T08:00:00.000Z');
  const idAt = (ms: number, r: string) => `i-${String(at + ms).padStart(13, '0')}-${r}`;

  test('a batch adopting more records than a commit holds marks them first, then is removed and counted', async () => {
    const store = new FirestoreIntakeStore(db);
    const id = idAt(1, `many${Date.now().toString(36)}`);
    const adopted = Array.from({ length: 1_100 }, (_, i) => `dest-many.${id}.${i}`);
    await store.add(batch(id, new Date(at + 1).toISOString()));
    // The emulator takes a commit of any size; Firestore refuses one over 500 writes: each commit's size is watched.
    const sizes: number[] = [];
    const original = WriteBatch.prototype.commit;
    const commit = jest.spyOn(WriteBatch.prototype, 'commit').mockImplementation(function (this: WriteBatch) {
      sizes.push((this as unknown as { _opCount: number })._opCount);
      return original.call(this);
    });
    try {
      await store.remove([{ ...batch(id, new Date(at + 1).toISOString()), adopted }]);
    } finally {
      commit.mockRestore();
    }
    expect(Math.max(...sizes)).toBeLessThanOrEqual(500);
    expect(sizes.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(1_100 + 1);
    expect(await store.journaled([id])).toEqual(new Set([id]));
    expect((await store.due(new Date(at + 2), 10, new Date(at).toISOString())).map((b) => b.id)).not.toContain(id);
    const marks = await store.adoptedBy(adopted);
    expect(marks.size).toBe(1_100);
    expect(new Set(marks.values())).toEqual(new Set([id]));
  });

  test('two reconcilers adopting one record: one batch is removed with it, the other stays for the next round', async () => {
    const [a, b] = [idAt(10, `race-a${Date.now().toString(36)}`), idAt(11, `race-b${Date.now().toString(36)}`)];
    const record = `dest-race.${a}`;
    for (const [id, ms] of [[a, 10], [b, 11]] as const) await new FirestoreIntakeStore(db).add(batch(id, new Date(at + ms).toISOString()));
    await Promise.all([new FirestoreIntakeStore(db).remove([{ ...batch(a, new Date(at + 10).toISOString()), adopted: [record] }]), new FirestoreIntakeStore(db).remove([{ ...batch(b, new Date(at + 11).toISOString()), adopted: [record] }])]);
    const left = (await new FirestoreIntakeStore(db).due(new Date(at + 12), 10, new Date(at + 9).toISOString())).map((x) => x.id);
    const by = (await new FirestoreIntakeStore(db).adoptedBy([record])).get(record);
    expect(left).toHaveLength(1);
    expect(by).toBe(left[0] === a ? b : a);
  });
});
