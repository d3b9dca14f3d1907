import { MemoryDeliveryStore } from '../../shared/adapters/memory/delivery-store';
import { MemoryOrderedKeyStore } from '../../shared/adapters/memory/ordered-key-store';
import { admitOrdered, OrderedDeps, repairStalledKeys, resequenceOrdered, settleOrdered } from '../../shared/app/ordering/ordered-delivery';
import { PubSubMessage } from '../../shared/domain/events/cloudevents-pubsub';
import { DeliveryRecord } from '../../shared/domain/retry/delivery';
import { transition } from '../../shared/domain/retry/delivery-state';
import { Destination } from '../../shared/domain/destinations/destination';
import { HeraldEvent } from '../../shared/domain/events/event';
import { PARKED_AT } from '../../shared/domain/modes/ordering';
import { createLogger } from '../../shared/log';

let t = Date.parse('2026-11-27T10:00:00.000Z');
const clock = { now: () => new Date(t) };
const destination = { id: 'orders', ordering: { by: 'key', onFailure: 'skip' }, status: 'active' } as unknown as Destination;
const event = (id: string, key: string): HeraldEvent => ({ attributes: { specversion: '1.0', id, source: '/t', type: 't', partitionkey: key }, data: Buffer.from(id) }) as HeraldEvent;

function setup() {
  const deliveries = new MemoryDeliveryStore();
  const keys = new MemoryOrderedKeyStore(deliveries);
  const sent: PubSubMessage[] = [];
  const deps: OrderedDeps = {
    bus: { publish: async (_topic, message) => String(sent.push(message)) },
    lanes: { ensureLane: async () => undefined, removeLane: async () => undefined },
    names: { prefix: 'herald' },
    keys,
    clock,
    log: createLogger({ level: 'ERROR', write: () => undefined }),
  };
  const ids = () => sent.map((m) => m.attributes['ce-id']);
  const byEvent = async (id: string) => deliveries.all().find((r) => r.eventId === id)!;
  /** The head attempted and DELIVERED, then its key settled. */
  const deliver = async (id: string, status: 'DELIVERED' | 'DEAD' = 'DELIVERED') => {
    const r = await byEvent(id);
    const done = { ...r, status, attempts: 1 } as DeliveryRecord;
    await deliveries.put(done);
    await settleOrdered(deps, destination, done, 'skip', false);
  };
  return { deps, deliveries, keys, sent, ids, byEvent, deliver };
}

test('intake places a key\'s events in order: the first is sent claimed, the rest parked; each settle sends the next', async () => {
  const s = setup();
  await admitOrdered(s.deps, destination, ['a1', 'a2', 'a3'].map((id) => ({ event: event(id, 'a'), publishedAt: clock.now().toISOString() })));
  await admitOrdered(s.deps, destination, [{ event: event('b1', 'b'), publishedAt: clock.now().toISOString() }]);
  expect(s.ids()).toEqual(['a1', 'b1']);
  expect((await s.byEvent('a1')).status).toBe('IN_FLIGHT');
  expect(await s.byEvent('a2')).toMatchObject({ status: 'PENDING', availableAt: PARKED_AT, order: { key: 'a', seq: 2 } });
  await s.deliver('a1');
  expect(s.ids()).toEqual(['a1', 'b1', 'a2']);
  // A copy of a1 settling again moves nothing.
  await s.deliver('a1');
  expect(s.ids()).toEqual(['a1', 'b1', 'a2']);
  await s.deliver('a2', 'DEAD');
  expect(s.ids()).toEqual(['a1', 'b1', 'a2', 'a3']);
  // A resend of an event already placed keeps its place: nothing new is sent or made.
  await admitOrdered(s.deps, destination, [{ event: event('a1', 'a'), publishedAt: clock.now().toISOString() }]);
  expect(s.deliveries.all()).toHaveLength(4);
  expect((await s.keys.get('orders', 'a'))?.last).toBe(3);
});

test('a head that settled but never moved its key (the push lost for good) is found stalled and the key moved on', async () => {
  const s = setup();
  await admitOrdered(s.deps, destination, ['c1', 'c2'].map((id) => ({ event: event(id, 'c'), publishedAt: clock.now().toISOString() })));
  const head = await s.byEvent('c1');
  await s.deliveries.put({ ...head, status: 'DELIVERED', attempts: 1 } as DeliveryRecord);
  const directory = { get: async () => destination };
  expect(await repairStalledKeys({ ...s.deps, directory }, 60_000)).toBe(0);
  t += 120_000;
  expect(await repairStalledKeys({ ...s.deps, directory }, 60_000)).toBe(1);
  expect(s.ids()).toEqual(['c1', 'c2']);
  expect((await s.keys.get('orders', 'c'))?.done).toBe(1);
});

test('redelivered deliveries of a key go to its end in their old order, and the first of them is sent', async () => {
  const s = setup();
  await admitOrdered(s.deps, destination, ['d1', 'd2', 'd3'].map((id) => ({ event: event(id, 'd'), publishedAt: clock.now().toISOString() })));
  await s.deliver('d1', 'DEAD');
  await s.deliver('d2', 'DEAD');
  await s.deliver('d3');
  s.sent.length = 0;
  // An operator redelivers d2, then d1 (the state machine marks them again).
  for (const id of ['d2', 'd1']) {
    const r = await s.byEvent(id);
    const next = transition(r, { type: 'redeliver', now: clock.now() });
    if (!next.ok) throw new Error(next.error.message);
    await s.deliveries.put(next.state);
  }
  expect(await resequenceOrdered(s.deps, destination, await s.byEvent('d2'))).toBe(2);
  expect(s.ids()).toEqual(['d1']);
  expect(await s.byEvent('d1')).toMatchObject({ status: 'IN_FLIGHT', order: { key: 'd', seq: 4 } });
  expect(await s.byEvent('d2')).toMatchObject({ status: 'PENDING', availableAt: PARKED_AT, order: { key: 'd', seq: 5 } });
  await s.deliver('d1');
  expect(s.ids()).toEqual(['d1', 'd2']);
});

test("a head's slow lane publish does not hold its key: the key's later events are placed meanwhile", async () => {
  const s = setup();
  let release: () => void = () => undefined;
  const held = new Promise<void>((r) => (release = r));
  let publishes = 0;
  // Pub/Sub answering the head's publish late (the client waits up to 60 s an RPC).
  s.deps.bus = { publish: async () => (++publishes === 1 ? held.then(() => '1') : String(publishes)) };
  const first = admitOrdered(s.deps, destination, [{ event: event('a1', 'a'), publishedAt: clock.now().toISOString() }]);
  let firstDone = false;
  void first.then(() => (firstDone = true));
  // a1 placed and its publish under way (events arriving before then would join its group).
  while (publishes === 0) await new Promise((r) => setImmediate(r));
  const later = admitOrdered(s.deps, destination, ['a2', 'a3'].map((id) => ({ event: event(id, 'a'), publishedAt: clock.now().toISOString() }))).then(() => 'placed');
  expect(await Promise.race([later, new Promise((r) => setTimeout(() => r('still waiting for the head'), 1000))])).toBe('placed');
  expect(await s.byEvent('a3')).toMatchObject({ status: 'PENDING', order: { key: 'a', seq: 3 } });
  // The request that made the head still waits for its publish: a 202 means it is on its way.
  expect(firstDone).toBe(false);
  release();
  await first;
  expect(publishes).toBe(1);
});
