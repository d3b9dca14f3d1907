import { MemoryDeliveryStore } from '../../shared/adapters/memory/delivery-store';
import { MemoryDestinationStore } from '../../shared/adapters/memory/destination-store';
import { QueuedCheckDeps, recheckQueued } from '../../shared/app/delivery/queued-recheck';
import { DeliveryRecord } from '../../shared/domain/retry/delivery';
import { Destination } from '../../shared/domain/destinations/destination';
import { createLogger } from '../../shared/log';
import { webhookDestination } from '../support/destinations';

/**
 * Issue 51, item 7: a delivery written QUEUED because its destination looked suspended is
 * checked against the destination read again; when that read fails, a reactivation that raced
 * the write must not leave it QUEUED on an active destination.
 */

const NOW = new Date('2026-12-05T12:00:00.000Z');
const QUEUED: DeliveryRecord = {
  id: 'acme_orders.q1',
  destinationId: 'acme_orders',
  eventId: 'q1',
  eventSource: '/shop',
  eventType: 'com.example.order.created',
  status: 'QUEUED',
  attempts: 1,
  reason: 'destination suspended: 410 Gone',
  event: { attributes: { specversion: '1.0', id: 'q1', source: '/shop', type: 'com.example.order.created' }, data: Buffer.from('{}') },
};
const NO_PAUSE = { tries: 3, firstPauseMs: 0, sleep: async () => undefined, random: () => 0.5 };

/** The destination active again (reactivated on another instance), read through a store that fails `failures` times. */
async function setup(failures: number) {
  const destinations = new MemoryDestinationStore();
  await destinations.put({ ...(webhookDestination('acme_orders') as Destination), status: 'active' });
  const deliveries = new MemoryDeliveryStore();
  await deliveries.put(QUEUED);
  let left = failures;
  const logs: Record<string, unknown>[] = [];
  const deps: QueuedCheckDeps = {
    destinations: {
      get: async (id) => {
        if (left-- > 0) throw new Error('14 UNAVAILABLE: read failed');
        return destinations.get(id);
      },
    },
    deliveries,
    bus: { publish: async () => 'm' },
    deadLetterTopic: 'herald-dead-letter',
    clock: { now: () => NOW },
    log: createLogger({ level: 'DEBUG', write: (line) => logs.push(JSON.parse(line) as Record<string, unknown>) }),
  };
  return { deps, deliveries, logs };
}

test('a read that fails once is read again: the reactivation is seen, the delivery PENDING and due now', async () => {
  const h = await setup(1);
  await recheckQueued(h.deps, QUEUED, 'suspended', NO_PAUSE);
  expect(await h.deliveries.get(QUEUED.id)).toMatchObject({ status: 'PENDING', availableAt: NOW.toISOString() });
});

test('a read that keeps failing: PENDING after the back-off, for the pump to decide with the destination as it is then', async () => {
  const h = await setup(Infinity);
  await recheckQueued(h.deps, QUEUED, 'suspended', NO_PAUSE);
  const record = await h.deliveries.get(QUEUED.id);
  expect(record?.status).toBe('PENDING');
  expect(Date.parse(record!.availableAt!) - NOW.getTime()).toBe(10_000);
  expect(h.logs.some((l) => /PENDING again/.test(String(l.message)))).toBe(true);
});

test('queued by its own attempt (failureMode queue): a failed read leaves it QUEUED, as decided', async () => {
  const h = await setup(Infinity);
  await recheckQueued(h.deps, QUEUED, 'decided', NO_PAUSE);
  expect((await h.deliveries.get(QUEUED.id))?.status).toBe('QUEUED');
});
