import { MemoryDeliveryStore } from '../../shared/adapters/memory/delivery-store';
import { bringForward, pumpOnce, runPump, PumpDeps } from '../../shared/app/retry/pump';
import type { OperationalNotice } from '../../shared/domain/operational/operational-events';
import { DestinationDirectory } from '../../shared/app/destinations/destination-directory';
import { DeliveryRecord } from '../../shared/domain/retry/delivery';
import { createLogger } from '../../shared/log';
import { PubSubMessage } from '../../shared/domain/events/cloudevents-pubsub';
import { systemClock } from '../../shared/ports/clock';
import { MemoryDestinationStore } from '../../shared/adapters/memory/destination-store';
import { webhookDestination } from '../support/destinations';
import { sharedLaneFor } from '../../shared/topology';
import { unbundle } from '../../shared/app/lanes/lanes';

/** The pump loop on memory stores and the real clock: short runs, so each test takes well under a second. */

function pending(id: string, availableAt: Date): DeliveryRecord {
  return {
    id: `orders.${id}`,
    destinationId: 'orders',
    eventId: id,
    eventSource: '/shop',
    eventType: 'com.example.order.created',
    status: 'PENDING',
    attempts: 1,
    availableAt: availableAt.toISOString(),
    event: { attributes: { specversion: '1.0', id, source: '/shop', type: 'com.example.order.created' }, data: Buffer.from('{}') },
  };
}

async function setup() {
  const destinations = new MemoryDestinationStore();
  await destinations.put(webhookDestination('orders'));
  const deliveries = new MemoryDeliveryStore();
  const published: { topic: string; message: PubSubMessage; at: number }[] = [];
  const deps: PumpDeps = {
    bus: { publish: async (topic, message) => String(published.push({ topic, message, at: Date.now() })) },
    lanes: { ensureLane: async () => undefined, removeLane: async () => undefined },
    names: { prefix: 'herald' },
    directory: new DestinationDirectory(destinations, systemClock, 60_000),
    deliveries,
    deadLetterTopic: 'herald-dead-letter',
    clock: systemClock,
    log: createLogger({ write: () => undefined }),
    claimTtlMs: 60_000,
    batchSize: 10,
  };
  return { deps, deliveries, published };
}

test('a scheduled run with nothing due before its end stops after one round', async () => {
  const { deps } = await setup();
  const began = Date.now();
  // A run that went on to its end would take ten minutes: far past any slowness of this machine.
  const report = await runPump(deps, { intervalMs: 20, untilMs: 600_000 }).done;
  expect(report).toEqual({ due: 0, sent: 0, skipped: 0, abandoned: 0, queued: 0, ended: 'idle' });
  expect(Date.now() - began).toBeLessThan(60_000);
});

test('work due later in the run keeps it going until that work is sent, then it stops', async () => {
  const { deps, deliveries, published } = await setup();
  const dueAt = Date.now() + 300;
  await deliveries.put(pending('later', new Date(dueAt)));
  const report = await runPump(deps, { intervalMs: 20, untilMs: 5_000 }).done;
  expect(report).toMatchObject({ sent: 1, ended: 'idle' });
  expect(published).toHaveLength(1);
  expect(published[0]!.at).toBeGreaterThanOrEqual(dueAt);
  expect(published[0]!.message.attributes['herald-claim']).toBeDefined();
});

test('work due only after the run ends does not keep it going', async () => {
  const { deps, deliveries, published } = await setup();
  await deliveries.put(pending('next-minute', new Date(Date.now() + 60_000)));
  const report = await runPump(deps, { intervalMs: 20, untilMs: 500 }).done;
  expect(report).toMatchObject({ sent: 0, ended: 'idle' });
  expect(published).toHaveLength(0);
});

test('hold keeps polling to the end, and takes work that appears meanwhile', async () => {
  const { deps, deliveries, published } = await setup();
  const began = Date.now();
  setTimeout(() => void deliveries.put(pending('late-arrival', new Date())), 200);
  const report = await runPump(deps, { intervalMs: 20, untilMs: 500, hold: true }).done;
  expect(report).toMatchObject({ sent: 1, ended: 'time-up' });
  expect(published).toHaveLength(1);
  expect(Date.now() - began).toBeGreaterThanOrEqual(480);
});

test('an unbounded run (local mode) goes on with nothing due until stopped', async () => {
  const { deps, deliveries, published } = await setup();
  const loop = runPump(deps, { intervalMs: 20 });
  await new Promise((r) => setTimeout(r, 150));
  await deliveries.put(pending('now', new Date()));
  await new Promise((r) => setTimeout(r, 150));
  await loop.stop();
  expect(await loop.done).toMatchObject({ sent: 1, ended: 'stopped' });
  expect(published).toHaveLength(1);
});

test("bringing forward claims the destination's rate-deferred deliveries, earliest first, and sends them to its lane before their time", async () => {
  const { deps, deliveries, published } = await setup();
  const inAnHour = (s: number) => new Date(Date.now() + 3_600_000 + s * 1000);
  for (const [id, s] of [['third', 3], ['first', 1], ['second', 2]] as const) await deliveries.put({ ...pending(id, inAnHour(s)), attempts: 0, rateDeferred: true });
  // A retry waiting for its time, due sooner than all of them: not rate control's to bring.
  await deliveries.put(pending('retry', new Date(Date.now() + 60_000)));
  const report = await bringForward(deps, 'orders', 2);
  expect(report).toMatchObject({ due: 2, sent: 2, drained: false });
  // One push for both: a bundle on the destination's retry lane, each member under its claim.
  expect(published).toHaveLength(1);
  expect(published[0]!.topic).toBe(sharedLaneFor('orders', 'retry'));
  const bundle = await unbundle(published[0]!.message);
  if (!bundle?.ok) throw new Error('a bundle was published');
  expect(bundle.members.map((m) => m.attributes['ce-id'])).toEqual(['first', 'second']);
  expect(bundle.members.every((m) => m.attributes['herald-claim'] !== undefined)).toBe(true);
  expect(await deliveries.get('orders.first')).toMatchObject({ status: 'IN_FLIGHT' });
  // Still marked while claimed: deferred again, it goes near its turn.
  expect(await deliveries.get('orders.first')).toMatchObject({ rateDeferred: true });
  expect(await deliveries.get('orders.retry')).toMatchObject({ status: 'PENDING', attempts: 1 });
  // One left of the two asked for: drained, and the retry stays where it is.
  expect(await bringForward(deps, 'orders', 2)).toMatchObject({ sent: 1, drained: true });
  expect(await deliveries.get('orders.retry')).toMatchObject({ status: 'PENDING' });
});

test("a round's due deliveries go to their lanes one bundle a destination, not one push each, and a lone one as it is", async () => {
  const { deps, deliveries, published } = await setup();
  const destinations = new MemoryDestinationStore();
  await destinations.put(webhookDestination('orders'));
  await destinations.put(webhookDestination('billing'));
  const both = { ...deps, directory: new DestinationDirectory(destinations, systemClock, 60_000) };
  const past = new Date(Date.now() - 1000);
  for (const id of ['a', 'b', 'c']) await deliveries.put(pending(id, past));
  await deliveries.put({ ...pending('x', past), id: 'billing.x', destinationId: 'billing' });
  const loop = runPump(both, { intervalMs: 50, untilMs: 100 });
  expect(await loop.done).toMatchObject({ due: 4, sent: 4 });
  expect(published).toHaveLength(2);
  const orders = published.find((p) => p.message.attributes['herald-destination'] === 'orders')!;
  expect(orders.topic).toBe(sharedLaneFor('orders', 'retry'));
  const bundle = await unbundle(orders.message);
  if (!bundle?.ok) throw new Error('a bundle was published for orders');
  expect(bundle.members.map((m) => m.attributes['ce-id']).sort()).toEqual(['a', 'b', 'c']);
  // Alone, it goes as a lane message of its own.
  const billing = published.find((p) => p.message.attributes['herald-destination'] === 'billing')!;
  expect(billing.topic).toBe(sharedLaneFor('billing', 'retry'));
  expect(await unbundle(billing.message)).toBeUndefined();
  expect(billing.message.attributes['ce-id']).toBe('x');
  for (const id of ['orders.a', 'orders.b', 'orders.c', 'billing.x']) expect(await deliveries.get(id)).toMatchObject({ status: 'IN_FLIGHT' });
});

test('a due delivery whose destination is gone is made DEAD by the pump, dead-lettered, and its death announced like a first attempt’s', async () => {
  const { deps, deliveries, published } = await setup();
  const notices: OperationalNotice[] = [];
  const record = { ...pending('gone-1', new Date(Date.now() - 1000)), id: 'gone.gone-1', destinationId: 'gone' };
  await deliveries.put(record);
  const report = await pumpOnce({ ...deps, operational: { emit: async (n) => void notices.push(n) } });
  expect(report).toMatchObject({ due: 1, abandoned: 1 });
  expect((await deliveries.get(record.id))?.status).toBe('DEAD');
  expect(published.map((p) => p.topic)).toEqual(['herald-dead-letter']);
  expect(notices).toEqual([expect.objectContaining({ kind: 'delivery.dead', key: record.id, concerns: 'gone', data: expect.objectContaining({ destinationId: 'gone', deliveryId: record.id, eventId: 'gone-1', reason: 'the destination no longer exists' }) })]);
});
