import { MemoryDeliveryStore } from '../../shared/adapters/memory/delivery-store';
import { DeletionDeps, deleteDestination } from '../../shared/app/admin/destination-deletion';
import { recheckQueued } from '../../shared/app/delivery/queued-recheck';
import { DeliveryRecord, DeliveryStatus } from '../../shared/domain/retry/delivery';
import { MemoryDestinationStore } from '../../shared/adapters/memory/destination-store';
import { webhookDestination } from '../support/destinations';

/**
 * Issue 32 item 5 over the memory stores: DELETE of a destination with deliveries still to
 * send is refused (409, with the counts) unless `?deliveries=dead`, which makes each DEAD with
 * its dead letter; a delivery queued as its destination is deleted is made DEAD too.
 */

const NOW = new Date('2026-11-25T12:00:00.000Z');

function record(destinationId: string, key: string, status: DeliveryStatus): DeliveryRecord {
  return {
    id: `${destinationId}.${key}`,
    destinationId,
    eventId: key,
    eventSource: '/shop',
    eventType: 'com.example.order.created',
    status,
    attempts: status === 'PENDING' ? 0 : 1,
    ...(status === 'IN_FLIGHT' ? { claimedAt: NOW.toISOString() } : {}),
    ...(status === 'PENDING' ? { availableAt: NOW.toISOString() } : {}),
    ...(status === 'DELIVERED' ? {} : { event: { attributes: { specversion: '1.0', id: key, source: '/shop', type: 'com.example.order.created' }, data: Buffer.from(`{"k":"${key}"}`) } }),
  } as DeliveryRecord;
}

async function setup(records: [string, string, DeliveryStatus][]) {
  const destinations = new MemoryDestinationStore();
  const deliveries = new MemoryDeliveryStore();
  const published: { topic: string; attributes: Record<string, string> }[] = [];
  const changed: string[] = [];
  const removedLanes: string[] = [];
  const deps = {
    destinations,
    deliveries,
    directory: { changed: (id: string) => changed.push(id) },
    lanes: { ensureLane: async () => undefined, removeLane: async (id: string) => void removedLanes.push(id) },
    bus: {
      publish: async (topic: string, m: { attributes?: Record<string, string> }) => {
        published.push({ topic, attributes: m.attributes ?? {} });
        return `m${published.length}`;
      },
    },
    deadLetterTopic: 'herald-dead-letter',
    clock: { now: () => NOW },
    log: { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined },
  } as unknown as DeletionDeps;
  for (const id of ['acme_orders', 'acme_other']) await destinations.put(webhookDestination(id));
  for (const [destination, key, status] of records) await deliveries.put(record(destination, key, status));
  return { deps, destinations, deliveries, published, changed, removedLanes };
}

const OPEN: [string, string, DeliveryStatus][] = [
  ['acme_orders', 'q1', 'QUEUED'],
  ['acme_orders', 'q2', 'QUEUED'],
  ['acme_orders', 'q3', 'QUEUED'],
  ['acme_orders', 'p1', 'PENDING'],
  ['acme_orders', 'f1', 'IN_FLIGHT'],
  ['acme_orders', 'ok', 'DELIVERED'],
  ['acme_orders', 'gone', 'DEAD'],
  ['acme_other', 'q9', 'QUEUED'],
];

describe('DELETE …/destinations/{id}', () => {
  test('with deliveries still to send: 409 naming how many of each and the ways out; nothing changes', async () => {
    const { deps, destinations, deliveries, published } = await setup(OPEN);
    const r = await deleteDestination(deps, 'acme_orders');
    expect(r).toMatchObject({ kind: 'conflict', body: { deliveries: { PENDING: 1, IN_FLIGHT: 1, QUEUED: 3 } } });
    const error = (r as { body: { error: string } }).body.error;
    expect(error).toContain('destination orders still has 5 deliveries to send (1 PENDING, 1 IN_FLIGHT, 3 QUEUED)');
    expect(error).toContain('POST …/redeliver');
    expect(error).toContain('?deliveries=dead');
    expect(await destinations.get('acme_orders')).toBeDefined();
    expect((await deliveries.get('acme_orders.q1'))!.status).toBe('QUEUED');
    expect(published).toEqual([]);
  });

  test('a suspended one is told to reactivate, not to redeliver', async () => {
    const { deps, destinations } = await setup([['acme_orders', 'q1', 'QUEUED']]);
    await destinations.update('acme_orders', (d) => d && { ...d, status: 'suspended' });
    const r = await deleteDestination(deps, 'acme_orders');
    expect((r as { body: { error: string } }).body.error).toContain('reactivate it (POST …/reactivate)');
  });

  test('with nothing left to send: 204, as before', async () => {
    const { deps, destinations, changed, removedLanes } = await setup([['acme_orders', 'ok', 'DELIVERED'], ['acme_orders', 'gone', 'DEAD']]);
    expect(await deleteDestination(deps, 'acme_orders')).toEqual({ kind: 'done' });
    expect(await destinations.get('acme_orders')).toBeUndefined();
    expect(changed).toEqual(['acme_orders']);
    expect(removedLanes).toEqual(['acme_orders']);
  });

  test('?deliveries=dead: deleted, every PENDING, IN_FLIGHT and QUEUED one DEAD (reason destination-deleted) with its dead letter; others untouched', async () => {
    const { deps, destinations, deliveries, published } = await setup(OPEN);
    const r = await deleteDestination(deps, 'acme_orders', { deliveries: 'dead' });
    expect(r).toEqual({ kind: 'ok', body: { id: 'orders', deleted: true, dead: 5, byStatus: { PENDING: 1, IN_FLIGHT: 1, QUEUED: 3 }, reason: 'destination-deleted' } });
    expect(await destinations.get('acme_orders')).toBeUndefined();
    for (const key of ['q1', 'q2', 'q3', 'p1', 'f1']) {
      const dead = (await deliveries.get(`acme_orders.${key}`))!;
      expect(dead).toMatchObject({ status: 'DEAD', reason: expect.stringMatching(/^destination-deleted: /) as unknown });
      // The dead letter is out: nothing owed to the reconciler.
      expect(dead.deadLetterDueAt).toBeUndefined();
      expect(dead.claimedAt).toBeUndefined();
    }
    expect((await deliveries.get('acme_orders.ok'))!.status).toBe('DELIVERED');
    expect((await deliveries.get('acme_other.q9'))!.status).toBe('QUEUED');
    expect(published).toHaveLength(5);
    for (const letter of published) {
      expect(letter.topic).toBe('herald-dead-letter');
      expect(letter.attributes).toMatchObject({ 'herald-destination': 'acme_orders', 'herald-reason': expect.stringMatching(/^destination-deleted/) as unknown });
    }
  });

  test('?deliveries=dead again on a destination already gone sweeps what is left of it (200), then answers 404', async () => {
    const { deps, destinations, deliveries } = await setup(OPEN);
    await destinations.delete('acme_orders');
    expect(await deleteDestination(deps, 'acme_orders', { deliveries: 'dead' })).toMatchObject({ kind: 'ok', body: { deleted: false, dead: 5 } });
    expect((await deliveries.get('acme_orders.q2'))!.status).toBe('DEAD');
    expect(await deleteDestination(deps, 'acme_orders', { deliveries: 'dead' })).toMatchObject({ kind: 'not-found' });
    expect(await deleteDestination(deps, 'acme_orders')).toMatchObject({ kind: 'not-found' });
  });

  test('a bad switch is a 400 naming it', async () => {
    const { deps } = await setup([]);
    expect(await deleteDestination(deps, 'acme_orders', { deliveries: 'keep' })).toMatchObject({ kind: 'invalid', body: { issues: [{ path: 'deliveries' }] } });
    expect(await deleteDestination(deps, 'acme_orders', { force: 'true' })).toMatchObject({ kind: 'invalid', body: { issues: [{ message: expect.stringContaining('unknown query parameter force') as unknown }] } });
  });
});

describe('a delivery QUEUED as its destination is deleted', () => {
  test('is made DEAD with its dead letter when the destination is gone; left QUEUED while it exists', async () => {
    const { deps, destinations, deliveries, published } = await setup([['acme_orders', 'q1', 'QUEUED'], ['acme_other', 'q9', 'QUEUED']]);
    await destinations.delete('acme_orders');
    await recheckQueued(deps, (await deliveries.get('acme_orders.q1'))!, 'suspended');
    await recheckQueued(deps, (await deliveries.get('acme_other.q9'))!, 'decided');
    expect((await deliveries.get('acme_orders.q1'))!).toMatchObject({ status: 'DEAD', reason: expect.stringMatching(/^destination-deleted/) as unknown });
    expect((await deliveries.get('acme_other.q9'))!.status).toBe('QUEUED');
    expect(published.map((p) => p.attributes['herald-delivery-id'])).toEqual(['acme_orders.q1']);
  });
});
