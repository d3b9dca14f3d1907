import { DeliveryRecord } from '../../shared/domain/retry/delivery';
import { DeliveryStore } from '../../shared/ports/deliveries';
import { decodeLogCursor } from '../../shared/domain/stats/delivery-log';
import { headEntryId } from '../../shared/domain/delivery/grouped-outcomes';
import { sameTally, tallyOf } from '../../shared/domain/intake/intake-tally';

const T0 = new Date('2026-05-01T10:00:00.000Z');
const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000).toISOString();

function record(id: string, fields: Partial<DeliveryRecord> = {}): DeliveryRecord {
  return { id, destinationId: 'dest-a', eventId: id, eventSource: '/src', eventType: 't', status: 'PENDING', attempts: 0, ...fields };
}

/** How a store writes an outcome that commits alone (FirestoreDeliveryStore's `grouping`): the suite tests both. */
export type Grouping = { alone: 'document' | 'group' };

/** One behaviour, every implementation: Firestore's runs on the emulator, memory's in unit tests. */
export function deliveryStoreConformance(name: string, make: (grouping?: Grouping) => Promise<DeliveryStore> | DeliveryStore): void {
  describe(`${name} delivery store`, () => {
    let store: DeliveryStore;
    beforeEach(async () => {
      store = await make();
    });

    test('keeps a record and its event bytes exactly', async () => {
      const data = Buffer.from([0, 255, 10, 13]);
      await store.put(record('r1', { event: { attributes: { id: 'r1', source: '/src', type: 't', specversion: '1.0' }, data }, lastError: { at: at(0), status: 500, error: 'HTTP 500', bodyExcerpt: 'boom' } }));
      const got = await store.get('r1');
      expect(got?.event?.data.equals(data)).toBe(true);
      expect(got?.lastError).toEqual({ at: at(0), status: 500, error: 'HTTP 500', bodyExcerpt: 'boom' });
      expect(await store.get('missing')).toBeUndefined();
    });

    test('update writes what decide returns and leaves the record when it returns undefined', async () => {
      await store.put(record('u1', { attempts: 1 }));
      const written = await store.update('u1', (r) => (r ? { ...r, attempts: r.attempts + 1 } : undefined));
      expect(written?.attempts).toBe(2);
      expect(await store.update('u1', () => undefined)).toBeUndefined();
      expect((await store.get('u1'))?.attempts).toBe(2);
      const created = await store.update('u2', (r) => (r ? undefined : record('u2', { status: 'QUEUED' })));
      expect(created?.status).toBe('QUEUED');
    });

    test('create writes only a record that does not exist yet', async () => {
      expect(await store.create(record('c1', { status: 'DELIVERED', attempts: 1 }))).toBe(true);
      expect(await store.create(record('c1', { status: 'PENDING', attempts: 7 }))).toBe(false);
      expect(await store.get('c1')).toMatchObject({ status: 'DELIVERED', attempts: 1 });
    });

    test('due finds pending work whose time has come and claims that expired, oldest first', async () => {
      await store.put(record('late', { availableAt: at(30) }));
      await store.put(record('early', { availableAt: at(5) }));
      await store.put(record('now', { availableAt: at(10) }));
      await store.put(record('done', { status: 'DELIVERED', availableAt: at(1) }));
      await store.put(record('claimed-fresh', { status: 'IN_FLIGHT', claimedAt: at(9) }));
      await store.put(record('claimed-stale', { status: 'IN_FLIGHT', claimedAt: at(2) }));
      expect(await store.due(new Date(at(10)), new Date(at(4)), 10)).toEqual(['claimed-stale', 'early', 'now']);
      expect(await store.due(new Date(at(10)), new Date(at(4)), 2)).toHaveLength(2);
      expect((await store.nextAvailableAt())?.toISOString()).toBe(at(5));
    });

    test("finds a destination's rate-deferred deliveries, earliest first, and no retry waiting for its time", async () => {
      await store.put(record('dest-a.late', { availableAt: at(90), rateDeferred: true }));
      await store.put(record('dest-a.soon', { availableAt: at(20), rateDeferred: true }));
      await store.put(record('dest-a.retry', { availableAt: at(10), attempts: 1 }));
      await store.put(record('dest-a.sent', { status: 'IN_FLIGHT', claimedAt: at(5) }));
      await store.put(record('dest-b.other', { destinationId: 'dest-b', availableAt: at(1), rateDeferred: true }));
      expect(await store.rateDeferred('dest-a', 10)).toEqual(['dest-a.soon', 'dest-a.late']);
      expect(await store.rateDeferred('dest-a', 1)).toEqual(['dest-a.soon']);
      expect(await store.rateDeferred('dest-c', 10)).toEqual([]);
    });

    test('lists a destination’s deliveries by status, a page at a time', async () => {
      for (let i = 0; i < 5; i++) await store.put(record(`dest-a.e${i}`, { status: i % 2 ? 'DEAD' : 'PENDING' }));
      await store.put(record('dest-b.e0', { destinationId: 'dest-b' }));
      for (let i = 5; i < 7; i++) await store.put(record(`dest-a.e${i}`));
      const first = await store.list('dest-a', { status: 'PENDING', limit: 2 });
      expect(first.deliveries.map((d) => d.id)).toEqual(['dest-a.e0', 'dest-a.e2']);
      const second = await store.list('dest-a', { status: 'PENDING', limit: 2, cursor: first.nextCursor! });
      expect(second.deliveries.map((d) => d.id)).toEqual(['dest-a.e4', 'dest-a.e5']);
      const third = await store.list('dest-a', { status: 'PENDING', limit: 2, cursor: second.nextCursor! });
      expect(third).toEqual({ deliveries: [expect.objectContaining({ id: 'dest-a.e6' })] });
      expect((await store.list('dest-a', { status: 'DEAD', limit: 10 })).deliveries.map((d) => d.id)).toEqual(['dest-a.e1', 'dest-a.e3']);
    });

    // DELIVERED first attempts are grouped (addDelivered) in production; the log reads both kinds alike.
    test.each(['own documents', 'groups'])('the log: newest published first, filtered, paged by cursor, without the event or the attempts (DELIVERED in %s)', async (kind) => {
      if (kind === 'groups') store = await make({ alone: 'group' });
      const detail = { at: at(0), durationMs: 5, target: 'https://x.example/h', request: { headers: {}, bodyBytes: 1 }, decision: { kind: 'delivered' as const } };
      const data = Buffer.from('{}');
      // What the log head names each record by (a grouped one with its group: domain/delivery/grouped-outcomes.ts headEntryId).
      const entry = new Map<string, string>();
      const write = async (r: DeliveryRecord) => {
        if (kind !== 'groups' || r.status !== 'DELIVERED') return store.put(r);
        const added = await store.addDelivered(r);
        entry.set(r.id, headEntryId(r.id, added.created ? added.group : undefined));
      };
      const entryOf = (id: string) => entry.get(id) ?? id;
      for (let i = 0; i < 6; i++) {
        const status = i % 3 === 0 ? 'DEAD' : 'DELIVERED';
        await write(
          record(`dest-a.l${i}`, {
            eventId: `ev-${i}`,
            eventType: i % 2 ? 'odd' : 'even',
            status,
            publishedAt: at(i),
            attemptLog: [detail],
            ...(status === 'DEAD' ? { event: { attributes: { id: `ev-${i}`, source: '/src', type: 't', specversion: '1.0' }, data } } : {}),
          }),
        );
      }
      // Published in the same millisecond as l5: after it by id (descending).
      await write(record('dest-a.l5a', { eventId: 'ev-5a', eventType: 'odd', status: 'DELIVERED', publishedAt: at(5) }));
      await store.put(record('dest-b.l9', { destinationId: 'dest-b', publishedAt: at(9) }));
      const ids = async (q: Parameters<DeliveryStore['log']>[1]) => (await store.log('dest-a', q)).deliveries.map((d) => d.id);
      expect(await ids({ limit: 10 })).toEqual(['dest-a.l5a', 'dest-a.l5', 'dest-a.l4', 'dest-a.l3', 'dest-a.l2', 'dest-a.l1', 'dest-a.l0']);
      const first = await store.log('dest-a', { limit: 3 });
      expect(first.deliveries.map((d) => d.id)).toEqual(['dest-a.l5a', 'dest-a.l5', 'dest-a.l4']);
      for (const d of first.deliveries) {
        expect(d).not.toHaveProperty('event');
        expect(d).not.toHaveProperty('attemptLog');
      }
      const second = await store.log('dest-a', { limit: 3, cursor: decodeLogCursor(first.nextCursor!)! });
      expect(second.deliveries.map((d) => d.id)).toEqual(['dest-a.l3', 'dest-a.l2', 'dest-a.l1']);
      const third = await store.log('dest-a', { limit: 3, cursor: decodeLogCursor(second.nextCursor!)! });
      expect(third).toEqual({ deliveries: [expect.objectContaining({ id: 'dest-a.l0' })] });
      expect(await ids({ limit: 10, status: 'DEAD' })).toEqual(['dest-a.l3', 'dest-a.l0']);
      expect(await ids({ limit: 10, eventType: 'odd' })).toEqual(['dest-a.l5a', 'dest-a.l5', 'dest-a.l3', 'dest-a.l1']);
      expect(await ids({ limit: 10, eventType: 'odd', status: 'DEAD' })).toEqual(['dest-a.l3']);
      expect(await ids({ limit: 10, eventId: 'ev-4' })).toEqual(['dest-a.l4']);
      expect(await ids({ limit: 10, eventId: 'ev-4', status: 'DEAD' })).toEqual([]);
      expect(await ids({ limit: 10, from: at(2), to: at(5) })).toEqual(['dest-a.l4', 'dest-a.l3', 'dest-a.l2']);
      expect(await ids({ limit: 10, from: at(2), status: 'DELIVERED', eventType: 'even' })).toEqual(['dest-a.l4', 'dest-a.l2']);
      expect((await store.get('dest-a.l1'))?.attemptLog).toEqual([detail]);
      const rows = await store.logRows([entryOf('dest-a.l4'), 'dest-a.missing', entryOf('dest-a.l1')]);
      expect(rows.map((r) => r.id)).toEqual(['dest-a.l4', 'dest-a.l1']);
      expect(rows[0]).toMatchObject({ status: 'DELIVERED', eventType: 'even', publishedAt: at(4) });
      expect(rows[0]).not.toHaveProperty('event');
      expect(rows[0]).not.toHaveProperty('attemptLog');
    });

    test('a DELIVERED outcome that commits alone is a document of its own, created only if none has its id', async () => {
      const delivered = record('dest-a.a1', { status: 'DELIVERED', attempts: 1, publishedAt: at(1), lastAttemptAt: at(2) });
      expect(await store.addDelivered(delivered)).toEqual({ created: true });
      expect(await store.addDelivered({ ...delivered, lastAttemptAt: at(5) })).toEqual({ created: false });
      expect(await store.get('dest-a.a1')).toMatchObject({ status: 'DELIVERED', lastAttemptAt: at(2) });
      expect(await store.get('dest-a.a1')).not.toHaveProperty('duplicates');
    });

    test('a grouped delivery: found by id, in the counts and by existence; sent twice, shown once with a duplicate', async () => {
      store = await make({ alone: 'group' });
      const delivered = (id: string, fields: Partial<DeliveryRecord> = {}) => record(id, { status: 'DELIVERED', attempts: 1, publishedAt: at(1), lastAttemptAt: at(2), intake: 'i-g', ...fields });
      const [first] = await Promise.all([store.addDelivered(delivered('dest-a.g1')), store.addDelivered(delivered('dest-b.g1', { destinationId: 'dest-b' }))]);
      const g1 = headEntryId('dest-a.g1', first.created ? first.group : undefined);
      expect(await store.get('dest-a.g1')).toMatchObject({ status: 'DELIVERED', attempts: 1 });
      expect(await store.existing(['dest-a.g1', 'dest-a.g9'])).toEqual(new Set(['dest-a.g1']));
      expect(await store.intakesOf(['dest-a.g1', 'dest-a.g9'])).toEqual(new Map([['dest-a.g1', 'i-g']]));
      expect(await store.tallyFromIntake('i-g', ['dest-a'])).toEqual(tallyOf(['dest-a.g1']));
      expect(await store.tallyFromIntakes(['i-g'])).toEqual(tallyOf(['dest-a.g1', 'dest-b.g1']));

      // A redelivered push sent again and grouped again (nothing was read): one delivery, a duplicate.
      await store.addDelivered(delivered('dest-a.g1', { lastAttemptAt: at(7) }));
      expect(await store.get('dest-a.g1')).toMatchObject({ status: 'DELIVERED', lastAttemptAt: at(2), duplicates: { count: 1, lastAt: at(7) } });
      expect(await store.tallyFromIntake('i-g', ['dest-a'])).toEqual(tallyOf(['dest-a.g1']));
      expect(await store.tallyFromIntakes(['i-g'])).toEqual(tallyOf(['dest-a.g1', 'dest-b.g1']));
      expect((await store.log('dest-a', { limit: 10 })).deliveries).toEqual([expect.objectContaining({ id: 'dest-a.g1', duplicates: { count: 1, lastAt: at(7) } })]);
      // The first page names each row by the group it was written in: the copy in another group is not looked for there.
      expect(await store.logRows([g1])).toEqual([expect.objectContaining({ id: 'dest-a.g1', status: 'DELIVERED' })]);

      // An update writes its own record over the group copies, which are not counted again.
      const updated = await store.update('dest-a.g1', (r) => r && { ...r, eventType: 'changed' });
      expect(updated).toMatchObject({ eventType: 'changed', duplicates: { count: 1 } });
      expect(await store.get('dest-a.g1')).toMatchObject({ eventType: 'changed', duplicates: { count: 1, lastAt: at(7) } });
      expect(await store.get('dest-a.g1')).not.toHaveProperty('groupCopies');
      // A copy grouped after it is one more.
      await store.addDelivered(delivered('dest-a.g1', { lastAttemptAt: at(9) }));
      expect(await store.get('dest-a.g1')).toMatchObject({ eventType: 'changed', duplicates: { count: 2, lastAt: at(9) } });
      expect(await store.tallyFromIntake('i-g', ['dest-a'])).toEqual(tallyOf(['dest-a.g1']));
    });

    test('a delivery with a document of its own (a retry waiting) and a grouped copy sent beside it stands as its document says', async () => {
      store = await make({ alone: 'group' });
      expect(await store.create(record('dest-a.w1', { status: 'PENDING', attempts: 1, publishedAt: at(1), availableAt: at(60), intake: 'i-w' }))).toBe(true);
      await store.addDelivered(record('dest-a.w1', { status: 'DELIVERED', attempts: 1, publishedAt: at(1), lastAttemptAt: at(2), intake: 'i-w' }));
      expect(await store.get('dest-a.w1')).toMatchObject({ status: 'PENDING', availableAt: at(60) });
      expect((await store.log('dest-a', { limit: 10 })).deliveries.map((d) => [d.id, d.status])).toEqual([['dest-a.w1', 'PENDING']]);
      expect((await store.log('dest-a', { limit: 10, status: 'DELIVERED' })).deliveries).toEqual([]);
      expect(await store.tallyFromIntakes(['i-w'])).toEqual(tallyOf(['dest-a.w1']));
      // Its retry succeeds: DELIVERED, and the copy sent beside it was a duplicate.
      await store.update('dest-a.w1', (r) => r && { ...r, status: 'DELIVERED', attempts: 2, lastAttemptAt: at(61) });
      expect(await store.get('dest-a.w1')).toMatchObject({ status: 'DELIVERED', attempts: 2, duplicates: { count: 1, lastAt: at(2) } });
    });

    test('the log pages through many groups and own documents in order', async () => {
      store = await make({ alone: 'group' });
      // 30 deliveries a second and a half apart: each its own group, more than a query's page of them.
      const all: string[] = [];
      for (let i = 0; i < 30; i++) {
        const id = `dest-a.p${String(i).padStart(2, '0')}`;
        all.push(id);
        const fields = { publishedAt: new Date(T0.getTime() + i * 1500).toISOString(), attempts: 1 };
        if (i % 7 === 3) await store.put(record(id, { ...fields, status: 'DEAD' }));
        else await store.addDelivered(record(id, { ...fields, status: 'DELIVERED', lastAttemptAt: fields.publishedAt }));
      }
      await store.addDelivered(record('dest-b.p00', { destinationId: 'dest-b', status: 'DELIVERED', publishedAt: at(3) }));
      const seen: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await store.log('dest-a', { limit: 4, ...(cursor ? { cursor: decodeLogCursor(cursor)! } : {}) });
        expect(page.deliveries.length).toBeLessThanOrEqual(4);
        seen.push(...page.deliveries.map((d) => d.id));
        cursor = page.nextCursor;
      } while (cursor);
      expect(seen).toEqual([...all].reverse());
      const delivered = await store.log('dest-a', { limit: 50, status: 'DELIVERED', from: new Date(T0.getTime() + 10 * 1500).toISOString() });
      expect(delivered.deliveries.map((d) => d.id)).toEqual(all.slice(10).filter((_, k) => (k + 10) % 7 !== 3).reverse());
      expect((await store.log('dest-a', { limit: 5, eventId: 'dest-a.p12' })).deliveries.map((d) => d.id)).toEqual(['dest-a.p12']);
    });

    test('tallies the records of an intake batch for some destinations (count and sum of id hashes), and tells which records exist', async () => {
      await store.put(record('dest-a.e1', { intake: 'i-1' }));
      await store.put(record('dest-b.e1', { destinationId: 'dest-b', intake: 'i-1' }));
      await store.put(record('dest-c.e1', { destinationId: 'dest-c', intake: 'i-1' }));
      await store.put(record('dest-a.e2', { intake: 'i-2' }));
      expect(await store.tallyFromIntake('i-1', ['dest-a', 'dest-b'])).toEqual(tallyOf(['dest-a.e1', 'dest-b.e1']));
      expect(await store.tallyFromIntake('i-1', ['dest-z'])).toEqual(tallyOf([]));
      // More destinations than one `in` filter takes.
      expect(await store.tallyFromIntake('i-1', ['dest-a', ...Array.from({ length: 40 }, (_, i) => `dest-x${i}`), 'dest-c'])).toEqual(tallyOf(['dest-a.e1', 'dest-c.e1']));
      expect(await store.existing(['dest-a.e1', 'dest-a.e9', 'dest-b.e1'])).toEqual(new Set(['dest-a.e1', 'dest-b.e1']));
      await store.put(record('dest-a.e3'));
      // The intake each record carries: none for one without (a producer's Pub/Sub publish, routed), none for one missing.
      expect(await store.intakesOf(['dest-a.e1', 'dest-a.e2', 'dest-a.e3', 'dest-a.e9'])).toEqual(new Map([['dest-a.e1', 'i-1'], ['dest-a.e2', 'i-2']]));
      expect(await store.tallyFromIntakes(['i-1', 'i-2'])).toEqual(tallyOf(['dest-a.e1', 'dest-b.e1', 'dest-c.e1', 'dest-a.e2']));
      expect(await store.tallyFromIntakes(['i-2', 'i-3'])).toEqual(tallyOf(['dest-a.e2']));
      expect(await store.tallyFromIntakes(['i-3', 'i-4'])).toEqual(tallyOf([]));
      // A batch whose id lies between those named is tallied too: the tally differs from the one expected.
      await store.put(record('dest-a.e3', { intake: 'i-15' }));
      expect(await store.tallyFromIntakes(['i-1', 'i-2'])).toEqual(tallyOf(['dest-a.e1', 'dest-b.e1', 'dest-c.e1', 'dest-a.e2', 'dest-a.e3']));
      // An extra record and a missing one do not balance: same count, another sum (issue 35 item 1).
      await store.put(record('dest-b.e2', { destinationId: 'dest-b', intake: 'i-2' }));
      const extra = await store.tallyFromIntake('i-2', ['dest-a', 'dest-b']);
      expect(extra.count).toBe(2);
      expect(sameTally(extra, tallyOf(['dest-a.e2', 'dest-b.e9']))).toBe(false);
      expect(sameTally(extra, tallyOf(['dest-b.e2', 'dest-a.e2']))).toBe(true);
      // Rewritten (an update), a record keeps its share of the sum.
      await store.update('dest-b.e2', (r) => r && { ...r, status: 'DEAD' });
      expect(await store.tallyFromIntake('i-2', ['dest-b'])).toEqual(tallyOf(['dest-b.e2']));
    });

    test('counts the records of some destinations in one status (what deleting a destination finds still to send)', async () => {
      await store.put(record('dest-a.q1', { status: 'QUEUED' }));
      await store.put(record('dest-a.q2', { status: 'QUEUED' }));
      await store.put(record('dest-a.p1', { status: 'PENDING' }));
      await store.put(record('dest-b.q1', { destinationId: 'dest-b', status: 'QUEUED' }));
      expect(await store.countByStatus(['dest-a'], 'QUEUED')).toBe(2);
      expect(await store.countByStatus(['dest-a'], 'IN_FLIGHT')).toBe(0);
      expect(await store.countByStatus(['dest-a', 'dest-b'], 'QUEUED')).toBe(3);
      // More destinations than one `in` filter takes.
      expect(await store.countByStatus([...Array.from({ length: 40 }, (_, i) => `dest-x${i}`), 'dest-b'], 'QUEUED')).toBe(1);
    });

    test('finds DEAD records whose dead letter is owed since a time, oldest first', async () => {
      await store.put(record('dest-a.d1', { status: 'DEAD', deadLetterDueAt: at(20) }));
      await store.put(record('dest-a.d2', { status: 'DEAD', deadLetterDueAt: at(5) }));
      await store.put(record('dest-a.d3', { status: 'DEAD', deadLetterDueAt: at(50) }));
      await store.put(record('dest-a.d4', { status: 'DEAD' }));
      expect(await store.deadLettersOwed(new Date(at(30)), 10)).toEqual(['dest-a.d2', 'dest-a.d1']);
      expect(await store.deadLettersOwed(new Date(at(30)), 1)).toEqual(['dest-a.d2']);
    });
  });
}
