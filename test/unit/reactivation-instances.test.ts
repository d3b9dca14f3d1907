import { MemoryDeliveryStore } from '../../shared/adapters/memory/delivery-store';
import { MemoryDestinationStore } from '../../shared/adapters/memory/destination-store';
import { postReactivate } from '../../shared/app/admin/suspension-admin';
import { deliverFromLane } from '../../shared/app/delivery/deliver';
import { DestinationDirectory } from '../../shared/app/destinations/destination-directory';
import { pumpOnce, PumpDeps } from '../../shared/app/retry/pump';
import { SuspensionDeps } from '../../shared/app/delivery/suspend-and-reactivate';
import { PubSubMessage } from '../../shared/domain/events/cloudevents-pubsub';
import { buildEvent } from '../../shared/domain/events/event';
import { toLaneMessage } from '../../shared/domain/intake/lane-message';
import { suspend } from '../../shared/domain/destinations/suspension';
import { createLogger } from '../../shared/log';
import { systemClock } from '../../shared/ports/clock';
import { webhookDestination } from '../support/destinations';
import { memoryDeliverDeps } from '../support/memory-deliver';

/**
 * Two instances over one store, each with its own directory cache (10 s, as deployed): the
 * destination is reactivated through instance 0 while instance 1 still sees it suspended.
 * Whatever instance 1 queues then must not stay QUEUED behind a reactivation that is over.
 */
const quiet = createLogger({ write: () => undefined });

async function world() {
  const destinations = new MemoryDestinationStore();
  const deliveries = new MemoryDeliveryStore();
  const suspended = suspend(webhookDestination('orders'), { cause: 'criteria', reason: 'HTTP 410', at: new Date(), window: { attempts: 1, successes: 0, failures: 1, recentErrors: [] } })!;
  await destinations.put(suspended);
  const directories = [0, 1].map(() => new DestinationDirectory(destinations, systemClock, 10_000));
  // Instance 1 has the destination cached, suspended.
  expect((await directories[1]!.get('orders'))?.status).toBe('suspended');
  const bus: { topic: string; message: PubSubMessage }[] = [];
  const publish = async (topic: string, message: PubSubMessage) => String(bus.push({ topic, message }));
  const instance0: SuspensionDeps = {
    destinations,
    deliveries,
    directory: directories[0]!,
    counters: { window: async () => ({ attempts: 0, successes: 0, failures: 0, recentErrors: [] }) } as unknown as SuspensionDeps['counters'],
    bus: { publish },
    notificationsTopic: 'herald-notifications',
    clock: systemClock,
    log: quiet,
    policy: { presetTimeoutMs: 5000, timeScale: 1 },
  };
  const sent: string[] = [];
  const instance1 = memoryDeliverDeps(
    destinations,
    {
      http: {
        send: async (req) => {
          sent.push(req.url);
          return { kind: 'response', status: 204, durationMs: 1, bodyExcerpt: '' };
        },
      },
    },
    { directory: directories[1]!, deliveries, bus: { publish }, log: quiet },
  ).deps;
  const pump1: PumpDeps = { ...instance1, lanes: instance1.lanes, batchSize: 100, claimTtlMs: 60_000 };
  return { destinations, deliveries, instance0, instance1, pump1, bus, sent };
}

function event(id: string) {
  const built = buildEvent({ specversion: '1.0', id, source: '/shop', type: 'com.example.order.created' }, Buffer.from('{}'), new Date());
  if (!built.ok) throw new Error('bad event');
  return built.value;
}

test('an event reaching an instance that still sees the destination suspended is not stranded QUEUED after the reactivation', async () => {
  const w = await world();
  expect(await postReactivate(w.instance0, 'orders')).toMatchObject({ kind: 'ok', body: { redelivered: 0 } });
  const push = { subscription: 's', messageId: 'm1', publishTime: new Date(), message: toLaneMessage({ kind: 'first', destinationId: 'orders', event: event('e1'), publishedAt: new Date().toISOString() }) };
  expect(await deliverFromLane(w.instance1, push)).toMatchObject({ kind: 'queued' });
  // Queued on a stale view, then found reactivated: PENDING, due now, for the retry pump.
  const [record] = (await w.deliveries.list('orders', { status: 'PENDING', limit: 10 })).deliveries;
  expect(record).toMatchObject({ status: 'PENDING' });
  expect((await w.deliveries.list('orders', { status: 'QUEUED', limit: 10 })).deliveries).toHaveLength(0);
  w.instance1.limiter.close();
});

test('a due retry the pump of a stale instance queues is PENDING again once the destination is found reactivated', async () => {
  const w = await world();
  const due = { id: 'orders.k1', destinationId: 'orders', eventId: 'e2', eventSource: '/shop', eventType: 'com.example.order.created', status: 'PENDING' as const, attempts: 1, availableAt: new Date(Date.now() - 1000).toISOString(), publishedAt: new Date().toISOString(), event: event('e2') };
  await w.deliveries.put(due);
  expect(await postReactivate(w.instance0, 'orders')).toMatchObject({ kind: 'ok' });
  const round = await pumpOnce(w.pump1);
  expect(round).toMatchObject({ due: 1, queued: 1 });
  expect(await w.deliveries.get('orders.k1')).toMatchObject({ status: 'PENDING' });
  w.instance1.limiter.close();
});

test('while the destination stays suspended, what is queued stays QUEUED', async () => {
  const w = await world();
  const push = { subscription: 's', messageId: 'm1', publishTime: new Date(), message: toLaneMessage({ kind: 'first', destinationId: 'orders', event: event('e3'), publishedAt: new Date().toISOString() }) };
  expect(await deliverFromLane(w.instance1, push)).toMatchObject({ kind: 'queued' });
  expect((await w.deliveries.list('orders', { status: 'QUEUED', limit: 10 })).deliveries).toHaveLength(1);
  expect(w.sent).toHaveLength(0);
  w.instance1.limiter.close();
});
