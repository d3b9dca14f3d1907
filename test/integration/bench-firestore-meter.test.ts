/**
 * The bench's Firestore meter (test/bench/firestore-meter.ts) against the emulator: it counts
 * what each call sends as Firestore bills it, and the stores' own OperationCounter (which the
 * bench used to judge its targets by) agrees with it.
 */
import { Firestore } from '@google-cloud/firestore';
import { OperationCounter } from '../../shared/adapters/firestore/stores';
import { FirestoreDestinationStore } from '../../shared/adapters/firestore/destinations';
import { FirestoreDeliveryStore } from '../../shared/adapters/firestore/deliveries/delivery-store';
import { DeliveryRecord } from '../../shared/domain/retry/delivery';
import { applySpec } from '../../shared/domain/destinations/destination';
import { FirestoreMeter, meterFirestore, Ops, totalOps } from '../bench/firestore-meter';

const projectId = 'bench-firestore-meter-test';
const meter = new FirestoreMeter();
meterFirestore(meter);
const db = new Firestore({ projectId, ignoreUndefinedProperties: true });

afterAll(() => db.terminate());

beforeAll(async () => {
  const res = await fetch(`http://${process.env.FIRESTORE_EMULATOR_HOST}/emulator/v1/projects/${projectId}/databases/(default)/documents`, { method: 'DELETE' });
  if (!res.ok) throw new Error(`could not clear the Firestore emulator: ${res.status}`);
});

const record = (id: string, fields: Partial<DeliveryRecord> = {}): DeliveryRecord => ({ id, destinationId: 'd', eventId: id, eventSource: '/s', eventType: 't', status: 'PENDING', attempts: 0, ...fields });

/** What `run` billed, by the meter (by collection and in all) and by the stores' counter. */
async function measure(ops: OperationCounter, run: () => Promise<unknown>): Promise<{ wire: Ops; store: Ops; by: Record<string, Ops> }> {
  const before = structuredClone(meter.byCollection);
  const storeBefore = { reads: ops.reads, writes: ops.writes, deletes: ops.deletes };
  await run();
  const by: Record<string, Ops> = {};
  for (const [c, o] of Object.entries(meter.byCollection)) {
    const b = before[c] ?? { reads: 0, writes: 0, deletes: 0 };
    const d = { reads: o.reads - b.reads, writes: o.writes - b.writes, deletes: o.deletes - b.deletes };
    if (d.reads || d.writes || d.deletes) by[c] = d;
  }
  return { wire: totalOps(by), store: { reads: ops.reads - storeBefore.reads, writes: ops.writes - storeBefore.writes, deletes: ops.deletes - storeBefore.deletes }, by };
}

describe('the bench Firestore meter', () => {
  const ops = new OperationCounter();
  const deliveries = new FirestoreDeliveryStore(db, ops);

  test('a transaction that reads one record and sets it bills one read and one write, and the store counts the same', async () => {
    await deliveries.put(record('u1'));
    const m = await measure(ops, () => deliveries.update('u1', (r) => (r ? { ...r, attempts: r.attempts + 1 } : undefined)));
    expect(m.by).toEqual({ deliveries: { reads: 1, writes: 1, deletes: 0 } });
    expect(m.store).toEqual(m.wire);
  });

  test('a get of a missing record bills two reads (its document, the query of groups); a create one write; a DELIVERED outcome alone one write', async () => {
    expect(await measure(ops, () => deliveries.get('absent'))).toMatchObject({ wire: { reads: 2, writes: 0, deletes: 0 }, store: { reads: 2, writes: 0, deletes: 0 } });
    // Alone in its commit: a document of its own (destination 'e', so the query below still finds two).
    const alone = await measure(ops, () => deliveries.addDelivered(record('g1', { destinationId: 'e', status: 'DELIVERED', attempts: 1, publishedAt: '2026-11-26T12:00:00.000Z' })));
    expect(alone.by).toEqual({ deliveries: { reads: 0, writes: 1, deletes: 0 } });
    expect(alone.store).toEqual(alone.wire);
    // Three that commit together: one write, one group.
    const together = await measure(ops, () => Promise.all([1, 2, 3].map((n) => deliveries.addDelivered(record(`g${n + 1}`, { destinationId: 'e', status: 'DELIVERED', attempts: 1, publishedAt: '2026-11-26T12:00:00.000Z' })))));
    expect(together.by['delivery-groups']).toEqual({ reads: 0, writes: 1, deletes: 0 });
    expect(together.store).toEqual(together.wire);
    const m = await measure(ops, () => deliveries.create(record('c1', { status: 'DELIVERED', attempts: 1 })));
    expect(m.by).toEqual({ deliveries: { reads: 0, writes: 1, deletes: 0 } });
    expect(m.store).toEqual(m.wire);
  });

  test('a query that finds nothing bills one read, one that finds n bills n', async () => {
    const empty = await measure(ops, () => db.collection('deliveries').where('destinationId', '==', 'nobody').get());
    expect(empty.by).toEqual({ deliveries: { reads: 1, writes: 0, deletes: 0 } });
    const two = await measure(ops, () => db.collection('deliveries').where('destinationId', '==', 'd').get());
    expect(two.wire.reads).toBe(2);
  });

  test('a count bills one read per 1,000 entries, at least one', async () => {
    const m = await measure(ops, () => db.collection('deliveries').count().get());
    expect(m.by).toEqual({ deliveries: { reads: 1, writes: 0, deletes: 0 } });
  });

  test("a destination put writes it, its change log entry and its account's count; its delete bills a delete and two writes", async () => {
    const destinations = new FirestoreDestinationStore(db, ops);
    const dest = applySpec('m1', { url: 'https://example.com/hook', eventTypes: ['t'] }, undefined, new Date());
    const put = await measure(ops, () => destinations.put(dest));
    expect(put.by).toEqual({ destinations: { reads: 0, writes: 1, deletes: 0 }, 'destination-changes': { reads: 0, writes: 1, deletes: 0 }, 'destination-counts': { reads: 0, writes: 1, deletes: 0 } });
    expect(put.store).toEqual(put.wire);
    const del = await measure(ops, () => destinations.delete('m1'));
    expect(del.by.destinations).toMatchObject({ deletes: 1, writes: 0 });
    expect(del.by['destination-changes']).toMatchObject({ writes: 1 });
    expect(del.by['destination-counts']).toMatchObject({ writes: 1 });
    expect(del.store).toEqual(del.wire);
  });
});
