import { Firestore, Timestamp } from '@google-cloud/firestore';
import { OperationCounter } from '../../shared/adapters/firestore/stores';
import { COLLECTIONS, FIRESTORE_TTL_FIELDS } from '../../shared/firestore-schema';
import { FirestoreDeliveryStore } from '../../shared/adapters/firestore/deliveries/delivery-store';
import { gunzipSync } from 'node:zlib';
import { GROUP_WAIT_MS } from '../../shared/adapters/firestore/deliveries/delivery-groups';
import { BUNDLE_OUTCOME_LINGER_MS, groupKey, paceLingerMs } from '../../shared/domain/delivery/grouped-outcomes';
import { BundleOutcomes } from '../../shared/app/delivery/bundle-outcomes';
import { HeraldEvent } from '../../shared/domain/events/event';
import { DEAD_RECORD_MIN_KEEP_MS } from '../../shared/domain/delivery/delivery-retention';
import { deliveryStoreConformance } from '../support/delivery-store-conformance';
import { MemoryDestinationStore } from '../../shared/adapters/memory/destination-store';
import { MemoryIntakeStore } from '../../shared/adapters/memory/intake-store';
import { DestinationDirectory } from '../../shared/app/destinations/destination-directory';
import { IntakeJournal } from '../../shared/app/intake/intake-journal';
import { reconcileOnce } from '../../shared/app/intake/reconcile';
import { ReconcileDeps } from '../../shared/app/intake/reconcile-deps';
import { DeliveryRecord, deliveryId } from '../../shared/domain/retry/delivery';
import { applySpec, destinationSpecSchema } from '../../shared/domain/destinations/destination';
import { eventKey } from '../../shared/domain/events/event';
import { createLogger } from '../../shared/log';
import { deliveredRecord, GROUPED_PUBLISHED } from '../support/grouped-records';

const projectId = 'delivery-store-test';
const db = new Firestore({ projectId, ignoreUndefinedProperties: true });

async function wipe(): Promise<void> {
  const res = await fetch(`http://${process.env.FIRESTORE_EMULATOR_HOST}/emulator/v1/projects/${projectId}/databases/(default)/documents`, { method: 'DELETE' });
  if (!res.ok) throw new Error(`could not clear the Firestore emulator: ${res.status}`);
}

afterAll(() => db.terminate());

deliveryStoreConformance('firestore', async (grouping) => {
  await wipe();
  return new FirestoreDeliveryStore(db, undefined, undefined, grouping);
});

describe('firestore delivery store: retention (the TTL field Firestore deletes records by; the emulator never deletes)', () => {
  const RETENTION_MS = 7 * 86_400_000;
  let now = new Date('2026-11-26T12:00:00.000Z');
  const store = new FirestoreDeliveryStore(db, undefined, { retentionMs: RETENTION_MS, now: () => now });
  const stored = async (id: string) => (await db.collection(FIRESTORE_TTL_FIELDS.deliveries.collection).doc(id).get()).get(FIRESTORE_TTL_FIELDS.deliveries.field) as Timestamp | undefined;
  const base = { destinationId: 'dest-a', eventSource: '/src', eventType: 't', publishedAt: '2026-11-26T11:59:59.000Z' } as const;
  const event = { attributes: { id: 'e', source: '/src', type: 't', specversion: '1.0' }, data: Buffer.from('{}') } as HeraldEvent;

  beforeEach(async () => {
    await wipe();
    now = new Date('2026-11-26T12:00:00.000Z');
  });

  test('a record created settled carries its expiry; the record read back does not show it', async () => {
    expect(await store.create({ ...base, id: 'dest-a.ok', eventId: 'ok', status: 'DELIVERED', attempts: 1 })).toBe(true);
    expect((await stored('dest-a.ok'))?.toDate()).toEqual(new Date(now.getTime() + RETENTION_MS));
    expect(await store.get('dest-a.ok')).not.toHaveProperty('expireAt');
    const page = await store.log('dest-a', { limit: 10 });
    expect(page.deliveries[0]).not.toHaveProperty('expireAt');
  });

  test('an update keeps the expiry; work again (a replay) clears it; settling anew sets a new one', async () => {
    await store.create({ ...base, id: 'dest-a.d', eventId: 'd', status: 'DEAD', attempts: 3, deadLetterDueAt: now.toISOString(), event });
    expect(await stored('dest-a.d')).toBeUndefined();
    // The dead letter is out: the record settles now, kept as long as the dead-letter topic keeps the letter (31 days > 7).
    await store.update('dest-a.d', (r) => r && { ...r, deadLetterDueAt: undefined });
    const settled = (await stored('dest-a.d'))?.toDate();
    expect(settled).toEqual(new Date(now.getTime() + DEAD_RECORD_MIN_KEEP_MS));
    now = new Date(now.getTime() + 3_600_000);
    await store.update('dest-a.d', (r) => r && { ...r, reason: 'rewritten later' });
    expect((await stored('dest-a.d'))?.toDate()).toEqual(settled);
    await store.update('dest-a.d', (r) => r && { ...r, status: 'PENDING', attempts: 0 });
    expect(await stored('dest-a.d')).toBeUndefined();
    now = new Date(now.getTime() + 3_600_000);
    await store.update('dest-a.d', (r) => r && { ...r, status: 'DELIVERED', attempts: 1 });
    expect((await stored('dest-a.d'))?.toDate()).toEqual(new Date(now.getTime() + RETENTION_MS));
  });

  test('a record that holds work carries no expiry: PENDING, IN_FLIGHT, QUEUED', async () => {
    for (const status of ['PENDING', 'IN_FLIGHT', 'QUEUED'] as const) {
      await store.put({ ...base, id: `dest-a.${status}`, eventId: status, status, attempts: 0, event });
      expect(await stored(`dest-a.${status}`)).toBeUndefined();
    }
  });
});

describe('firestore delivery store: the attempt log, kept for the whole retention, stored as one gzip', () => {
  const store = new FirestoreDeliveryStore(db);
  const body = JSON.stringify({ invoice: 'in_1MtHbELkdIwHu7ixl4OzzPMv', amount: 2900, currency: 'usd', customer: { name: 'Ada Lovelace', email: 'ada@example.org' }, lines: [1, 2, 3].map((n) => ({ id: `il_${n}`, description: 'Pro plan (at $29.00 / month)' })) });
  const attempt = { at: '2026-11-26T12:00:01.000Z', durationMs: 40, target: 'https://hooks.example.com/a', request: { headers: { 'content-type': 'application/json', 'ce-id': 'e1', 'webhook-id': 'msg_x' }, bodyBytes: body.length, body: { encoding: 'utf8' as const, excerpt: body, truncated: false } }, decision: { kind: 'delivered' as const }, response: { status: 200, headers: { 'content-type': 'text/plain' }, bodyExcerpt: 'ok' } };
  const record = (id: string): DeliveryRecord => ({ id, destinationId: 'dest-a', eventId: 'e1', eventSource: '/src', eventType: 't', status: 'DELIVERED', attempts: 1, publishedAt: '2026-11-26T12:00:00.000Z', lastAttemptAt: attempt.at, attemptLog: [attempt] });

  test('is bytes in the document, smaller than its JSON, and reads back whole', async () => {
    await store.create(record('dest-a.log1'));
    const stored = (await db.collection(COLLECTIONS.deliveries).doc('dest-a.log1').get()).get('attemptLog') as Buffer;
    expect(Buffer.isBuffer(stored)).toBe(true);
    expect(stored.length).toBeLessThan(JSON.stringify([attempt]).length);
    expect(await store.get('dest-a.log1')).toEqual(record('dest-a.log1'));
  });

  test('a record written before (the log as an array) reads back the same, and is packed when next written', async () => {
    const { attemptLog, ...rest } = record('dest-a.log2');
    await db.collection(COLLECTIONS.deliveries).doc('dest-a.log2').set({ ...rest, attemptLog });
    expect(await store.get('dest-a.log2')).toEqual(record('dest-a.log2'));
    await store.update('dest-a.log2', (r) => (r ? { ...r, attempts: 2 } : undefined));
    expect(Buffer.isBuffer((await db.collection(COLLECTIONS.deliveries).doc('dest-a.log2').get()).get('attemptLog'))).toBe(true);
    expect(await store.get('dest-a.log2')).toEqual({ ...record('dest-a.log2'), attempts: 2 });
  });
});

describe('firestore delivery store: group commit of DELIVERED first attempts', () => {
  const published = GROUPED_PUBLISHED;
  const delivered = (destinationId: string, n: number) => deliveredRecord(destinationId, n);
  const groups = () => db.collection(COLLECTIONS.deliveryGroups);

  beforeEach(() => wipe());

  test('outcomes that finish while a commit is in flight go together: 60 at once are a few writes, each durable when it resolves', async () => {
    const ops = new OperationCounter();
    const store = new FirestoreDeliveryStore(db, ops, undefined, { alone: 'group' });
    // A lone outcome is written at once.
    await store.addDelivered(delivered('acme_orders', 0));
    expect(ops.writes).toBe(1);
    await Promise.all(Array.from({ length: 60 }, (_, i) => store.addDelivered(delivered(i % 2 ? 'acme_orders' : 'acme_billing', i + 1))));
    // The first of them waits for nothing; the other 59 share the next commit.
    expect(ops.writes).toBeLessThanOrEqual(3);
    const snap = await groups().get();
    expect(snap.docs.flatMap((d) => d.get('ids') as string[]).sort()).toHaveLength(61);
    // One account's members to a document, named for the account (an account's erasure takes them by id range).
    for (const doc of snap.docs) expect(doc.id.startsWith('acme_')).toBe(true);
    for (let n = 0; n <= 60; n++) expect(await store.get(delivered(n % 2 === 0 ? 'acme_orders' : 'acme_billing', n).id)).toMatchObject({ status: 'DELIVERED' });
  });

  test('a commit waits a moment for sends under way: two outcomes that end a few milliseconds apart share one write; a lone one waits for nothing', async () => {
    const ops = new OperationCounter();
    const store = new FirestoreDeliveryStore(db, ops, undefined, { alone: 'group' });
    const first = store.expectDelivered();
    const second = store.expectDelivered();
    // As deliver does: the outcome added, then the send no longer under way.
    const a = store.addDelivered(delivered('acme_orders', 1));
    first();
    await new Promise((r) => setTimeout(r, 5));
    const b = store.addDelivered(delivered('acme_orders', 2));
    second();
    await Promise.all([a, b]);
    expect(ops.writes).toBe(1);
    // Nothing under way: written at once, however recently the last commit ran.
    const started = Date.now();
    await store.addDelivered(delivered('acme_orders', 3));
    expect(ops.writes).toBe(2);
    expect(Date.now() - started).toBeLessThan(GROUP_WAIT_MS + 200);
    // A send under way that never ends in a success holds a commit back GROUP_WAIT_MS at most.
    const stuck = store.expectDelivered();
    const t = Date.now();
    await store.addDelivered(delivered('acme_orders', 4));
    expect(Date.now() - t).toBeGreaterThanOrEqual(GROUP_WAIT_MS - 2);
    stuck();
  });

  test("a batch's outcomes linger for the next batch's: two batches are one write, each batch's shared fields stored once", async () => {
    const ops = new OperationCounter();
    const store = new FirestoreDeliveryStore(db, ops, undefined, { alone: 'group' });
    const detail = (batch: string) => ({ at: published, durationMs: 3, target: 'https://x.example/hook', request: { headers: { 'webhook-id': `msg_${batch}` }, bodyBytes: 100 } });
    const batch = (id: string, from: number) => {
      const shared = detail(id);
      return [0, 1, 2].map((i): DeliveryRecord => ({ ...delivered('acme_orders', from + i), attemptLog: [shared] as unknown as DeliveryRecord['attemptLog'], batch: { id, position: i, size: 3 } }));
    };
    const [b1, b2] = [batch('b_one', 0), batch('b_two', 10)];
    const t = Date.now();
    const first = Promise.all(b1.map((r) => store.addDelivered(r, { lingerMs: 300 })));
    await new Promise((r) => setTimeout(r, 50));
    expect(ops.writes).toBe(0);
    await Promise.all([first, ...b2.map((r) => store.addDelivered(r, { lingerMs: 300 }))]);
    expect(Date.now() - t).toBeGreaterThanOrEqual(290);
    expect(ops.writes).toBe(1);
    const [doc] = (await groups().get()).docs;
    const packed = JSON.parse(gunzipSync(doc!.get('packed') as Buffer).toString()) as { sections: { common: Record<string, unknown>; members: unknown[] }[] };
    expect(packed.sections.map((p) => [p.common.attemptLog, p.members.length])).toEqual([
      [[detail('b_one')], 3],
      [[detail('b_two')], 3],
    ]);
    for (const r of [...b1, ...b2]) expect(await store.get(r.id)).toEqual(r);
    // An outcome that may not wait takes those lingering with it, at once.
    const t2 = Date.now();
    await Promise.all([...batch('b_three', 20).map((r) => store.addDelivered(r, { lingerMs: 5000 })), store.addDelivered(delivered('acme_orders', 30))]);
    expect(Date.now() - t2).toBeLessThan(1000);
    expect(ops.writes).toBe(2);
  });

  test("a bundle's outcomes wait for the rest of the bundle, and go in one write as soon as the last is in", async () => {
    const ops = new OperationCounter();
    const store = new FirestoreDeliveryStore(db, ops);
    const bundle = new BundleOutcomes(3);
    const members = [0, 1, 2].map(() => bundle.member());
    const t = Date.now();
    // Paced by the destination's rate: they end 100 ms apart.
    const added = [40, 41, 42].map(async (n, i) => {
      await new Promise((r) => setTimeout(r, i * 100));
      const adding = store.addDelivered(delivered('acme_orders', n), members[i]!.linger);
      members[i]!.in();
      return adding;
    });
    await new Promise((r) => setTimeout(r, 150));
    expect(ops.writes).toBe(0);
    expect((await Promise.all(added)).map((a) => a.created)).toEqual([true, true, true]);
    expect(Date.now() - t).toBeLessThan(BUNDLE_OUTCOME_LINGER_MS / 2);
    expect(ops.writes).toBe(1);
    for (const n of [40, 41, 42]) expect(await store.get(`acme_orders.e${n}`)).toMatchObject({ status: 'DELIVERED' });
    // A member that never comes in (it waits for its rate turn) holds the others BUNDLE_OUTCOME_LINGER_MS at most.
    const stalled = new BundleOutcomes(2);
    const [early] = [stalled.member(), stalled.member()];
    const t2 = Date.now();
    const alone = store.addDelivered(delivered('acme_orders', 43), early!.linger);
    early!.in();
    await alone;
    expect(Date.now() - t2).toBeGreaterThanOrEqual(BUNDLE_OUTCOME_LINGER_MS - 5);
    expect(ops.writes).toBe(2);
  });

  test('as deployed, an outcome that commits alone is a document of its own; those that finish together are one group', async () => {
    const ops = new OperationCounter();
    const store = new FirestoreDeliveryStore(db, ops);
    // When each outcome was added: the first Date.now() an add makes (read through, not changed).
    const clock = jest.spyOn(Date, 'now');
    const addedAt = async (add: () => Promise<unknown>): Promise<number> => {
      const call = clock.mock.results.length;
      await add();
      return clock.mock.results[call]!.value as number;
    };
    // A connection already open and used, as a running Herald's is: the first write then takes milliseconds, not a channel's setup.
    await db.collection('warm-up').doc('deliveries').set({ at: Date.now() });
    try {
      const first = await addedAt(async () => expect(await store.addDelivered(delivered('acme_orders', 0))).toEqual({ created: true }));
      // The same again, alone: refused, as create refuses (deliver settles it as a redelivery).
      const second = await addedAt(async () => expect(await store.addDelivered(delivered('acme_orders', 0))).toEqual({ created: false }));
      await new Promise((r) => setImmediate(r));
      const before = ops.writes;
      const third = await addedAt(() => Promise.all([1, 2, 3, 4].map((n) => store.addDelivered(delivered('acme_orders', n)))));
      expect((await db.collection(COLLECTIONS.deliveries).doc('acme_orders.e0').get()).exists).toBe(true);
      const sizes = (await groups().get()).docs.map((d) => (d.get('ids') as string[]).length).sort();
      if (paceLingerMs([first, second, third], third) > 0) {
        // Close on the heels of those two, outcomes come at a pace: the first waits a moment for company, and the four share one write.
        expect(ops.writes - before).toBe(1);
        expect(sizes).toEqual([4]);
      } else {
        // A loaded machine (or a slow emulator) spaced those two writes out: no pace, so the first goes alone at once and the three added meanwhile share one.
        expect(ops.writes - before).toBe(2);
        expect(sizes).toEqual([3]);
      }
    } finally {
      clock.mockRestore();
    }
  });

  test('a fresh store (no pace yet): the first outcome goes alone at once, the three that finish meanwhile together', async () => {
    const ops = new OperationCounter();
    const store = new FirestoreDeliveryStore(db, ops);
    await Promise.all([5, 6, 7, 8].map((n) => store.addDelivered(delivered('acme_orders', n))));
    expect(ops.writes).toBe(2);
    expect((await db.collection(COLLECTIONS.deliveries).doc('acme_orders.e5').get()).exists).toBe(true);
  });

  test('a group stores what its members share once, and every view reads each member whole', async () => {
    const store = new FirestoreDeliveryStore(db, undefined, undefined, { alone: 'group' });
    // The first commits at once; the three that finish meanwhile wait for it and go together.
    await Promise.all([0, 1, 2, 3].map((n) => store.addDelivered(delivered('acme_orders', n))));
    const [doc] = (await groups().get()).docs.filter((d) => (d.get('ids') as string[]).length === 3);
    const { members, common } = JSON.parse(gunzipSync(doc!.get('packed') as Buffer).toString()) as { members: Record<string, unknown>[]; common: Record<string, unknown> };
    expect(common).toMatchObject({ destinationId: 'acme_orders', status: 'DELIVERED', eventSource: '/src', lastAttemptAt: '2026-11-26T12:00:00.000Z' });
    expect(members.map((m) => Object.keys(m).sort())).toEqual([1, 2, 3].map(() => ['eventId', 'id']));
    // Each id and event id indexed by its short key (a delivery id's hash; a short event id as it is).
    expect((doc!.get('ids') as string[]).sort()).toEqual([1, 2, 3].map((n) => groupKey(`acme_orders.e${n}`)).sort());
    expect((doc!.get('ids') as string[]).every((k) => k.length === 8)).toBe(true);
    for (const n of [1, 2, 3]) expect(await store.get(`acme_orders.e${n}`)).toEqual(delivered('acme_orders', n));
    const log = await store.log('acme_orders', { limit: 10, eventId: 'e2' });
    expect(log.deliveries.map((r) => r.id)).toEqual(['acme_orders.e2']);
  });

  test("a member's delivery id is not stored when its destination, source and event id name it; every view reads it back", async () => {
    const store = new FirestoreDeliveryStore(db, undefined, undefined, { alone: 'group' });
    const named = (n: number): DeliveryRecord => ({ ...delivered('acme_orders', n), id: deliveryId('acme_orders', eventKey({ source: '/src', id: `e${n}` })) });
    // Two made as Herald names them; one whose id is not what its event names (kept whole).
    const records = [named(1), named(2), delivered('acme_orders', 3)];
    await Promise.all([store.addDelivered(named(0)), ...records.map((r) => store.addDelivered(r))]);
    const [doc] = (await groups().get()).docs.filter((d) => (d.get('ids') as string[]).length === 3);
    const { members } = JSON.parse(gunzipSync(doc!.get('packed') as Buffer).toString()) as { members: Record<string, unknown>[] };
    expect(members.map((m) => m.id)).toEqual([undefined, undefined, 'acme_orders.e3']);
    for (const r of records) expect(await store.get(r.id)).toEqual(r);
    expect((await store.log('acme_orders', { limit: 10, eventId: 'e2' })).deliveries).toEqual([records[1]]);
    expect((await store.log('acme_orders', { limit: 10 })).deliveries.map((r) => r.id).sort()).toEqual([named(0), ...records].map((r) => r.id).sort());
  });

  test('a group written before short keys and packed members (full ids, members as maps) is still found by id, by event id and in the log', async () => {
    const store = new FirestoreDeliveryStore(db, undefined, undefined, { alone: 'group' });
    const [r1, r2] = [delivered('acme_orders', 1), delivered('acme_orders', 2)];
    const { destinationId, status, eventSource, eventType, attempts, publishedAt, lastAttemptAt, firstAttemptAt, deliveredAt } = r1;
    await groups().doc('acme_~old~0').set({
      account: 'acme',
      ids: [r1.id, r2.id],
      eventIds: [r1.eventId, r2.eventId],
      destinations: ['acme_orders'],
      intakes: [],
      oldest: r1.publishedAt,
      newest: r2.publishedAt,
      committedAt: '2026-11-26T12:00:01.000Z',
      common: Object.fromEntries(Object.entries({ destinationId, status, eventSource, eventType, attempts, publishedAt, lastAttemptAt, firstAttemptAt, deliveredAt }).filter(([, v]) => v !== undefined)),
      members: [r1, r2].map((r) => ({ id: r.id, eventId: r.eventId, ...(r.publishedAt !== publishedAt ? { publishedAt: r.publishedAt } : {}) })),
    });
    expect(await store.get(r2.id)).toEqual(r2);
    expect((await store.log('acme_orders', { limit: 10, eventId: r1.eventId })).deliveries.map((r) => r.id)).toEqual([r1.id]);
    expect((await store.log('acme_orders', { limit: 10 })).deliveries.map((r) => r.id).sort()).toEqual([r1.id, r2.id].sort());
  });

  test('accounts are never mixed in a group; a group carries the retention of its members', async () => {
    const store = new FirestoreDeliveryStore(db, undefined, { retentionMs: 86_400_000, now: () => new Date('2026-11-26T12:00:00.000Z') }, { alone: 'group' });
    await store.addDelivered(delivered('acme_orders', 0));
    await Promise.all([store.addDelivered(delivered('acme_orders', 1)), store.addDelivered(delivered('globex_orders', 1)), store.addDelivered(delivered('acme_orders', 2))]);
    const snap = await groups().get();
    const byAccount = snap.docs.map((d) => [d.get('account') as string, (d.get('ids') as string[]).length] as const).sort();
    // acme's first waits for nothing; acme's second and globex's share the next commit, in two documents.
    expect(byAccount).toEqual([
      ['acme', 1],
      ['acme', 1],
      ['acme', 1],
      ['globex', 1],
    ]);
    for (const doc of snap.docs) {
      const { members } = JSON.parse(gunzipSync(doc.get('packed') as Buffer).toString()) as { members: { id: string }[] };
      for (const m of members) expect(m.id.startsWith(`${doc.get('account') as string}_`)).toBe(true);
    }
    for (const doc of snap.docs) expect((doc.get(FIRESTORE_TTL_FIELDS.deliveryGroups.field) as Timestamp).toDate().toISOString()).toBe('2026-11-27T12:00:00.000Z');
  });

  test('a failed commit fails every outcome in it (their pushes are not acked), and the next commits again', async () => {
    const store = new FirestoreDeliveryStore(db, undefined, undefined, { alone: 'group' });
    // A member that cannot be stored (a value no JSON holds) fails its whole commit, as an outage would.
    const bad = { ...delivered('acme_orders', 9), lastError: { at: published, error: 'x', big: 1n } } as unknown as DeliveryRecord;
    await store.addDelivered(delivered('acme_orders', 0));
    const outcomes = await Promise.allSettled([store.addDelivered(delivered('acme_orders', 1)), store.addDelivered(bad), store.addDelivered(delivered('acme_orders', 2))]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'rejected']);
    await store.addDelivered(delivered('acme_orders', 3));
    expect(await store.existing(['acme_orders.e0', 'acme_orders.e1', 'acme_orders.e2', 'acme_orders.e3'])).toEqual(new Set(['acme_orders.e0', 'acme_orders.e1', 'acme_orders.e3']));
  });
});

describe('firestore delivery store: the reconciler over it (issue 35 item 1)', () => {
  const clock = { t: Date.parse('2026-11-26T10:00:00.000Z'), now: () => new Date(clock.t) };
  const ev = (id: string, type: string): HeraldEvent => ({ attributes: { specversion: '1.0', id, source: '/shop', type, time: '2026-11-26T10:00:00.000Z' }, data: Buffer.from('{}') });
  const silent = createLogger({ level: 'ERROR', write: () => undefined });

  test('extra records (a destination deleted since, a group member among them) do not hide a missing one; a complete round costs one aggregation', async () => {
    await wipe();
    const ops = new OperationCounter();
    // Outcomes committed as groups: the record layout a busy Herald writes.
    const store = new FirestoreDeliveryStore(db, ops, undefined, { alone: 'group' });
    const destinations = new MemoryDestinationStore();
    const before = new Date('2026-11-26T09:00:00.000Z');
    for (const [id, type] of [['d1', 'com.example.a'], ['d2', 'com.example.b'], ['d3', 'com.example.b']] as const) {
      await destinations.put(applySpec(id, destinationSpecSchema.parse({ url: `https://${id}.example/hook`, eventTypes: [type] }), undefined, before));
    }
    const intake = new MemoryIntakeStore();
    const journal = new IntakeJournal(intake, clock);
    const first = journal.add([ev('ea', 'com.example.a')]);
    await first.durable;
    clock.t += 5;
    const second = journal.add([ev('eb', 'com.example.b')]);
    await second.durable;
    const [a, b] = [first.ids[0]!, second.ids[0]!];
    const record = (dest: string, id: string, type: string, intakeId: string): DeliveryRecord => ({
      id: deliveryId(dest, eventKey(ev(id, type).attributes)), destinationId: dest, eventId: id, eventSource: '/shop', eventType: type, status: 'DELIVERED', attempts: 1, intake: intakeId, publishedAt: new Date(clock.t).toISOString(), lastAttemptAt: new Date(clock.t).toISOString(),
    });
    // A's event never reached d1; B's reached d2 (grouped) and d3 (a document of its own), and d3 is deleted.
    await store.addDelivered(record('d2', 'eb', 'com.example.b', b));
    await store.put(record('d3', 'eb', 'com.example.b', b));
    await destinations.delete('d3');
    const deps: ReconcileDeps = {
      intake, deliveries: store, directory: new DestinationDirectory(destinations, clock, 0), bus: { publish: async () => 'm' }, deadLetterTopic: 'dl', clock, log: silent,
      graceMs: 60_000, batchLimit: 100, rateLeases: { lease: () => Promise.reject(new Error('unused')), peek: async () => undefined }, state: {},
    };
    clock.t += 61_000;
    expect(await reconcileOnce(deps)).toEqual({ batches: 2, postponed: 0, expected: 2, recovered: 1, deadLetters: 0 });
    expect(await store.get(deliveryId('d1', eventKey(ev('ea', 'com.example.a').attributes)))).toMatchObject({ status: 'PENDING', intake: a });

    // Every record there, in groups (a batch's events all are): one aggregation (a read), the group
    // query (a read per group found) and the owed dead letters' query (a read) — no member's own
    // document is looked for when the members counted whole make the expected tally.
    const batch = journal.add(['ec', 'ed', 'ee', 'ef'].map((id) => ev(id, 'com.example.b')));
    await batch.durable;
    await Promise.all(['ec', 'ed', 'ee', 'ef'].map((id, i) => store.addDelivered(record('d2', id, 'com.example.b', batch.ids[i]!))));
    clock.t += 61_000;
    const readsBefore = ops.reads;
    expect(await reconcileOnce(deps)).toMatchObject({ batches: 1, expected: 4, recovered: 0 });
    expect(ops.reads - readsBefore).toBeLessThanOrEqual(4);
  });
});
