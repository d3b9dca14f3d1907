import { deliverPush } from '../../shared/app/delivery/deliver';
import { publishBundled } from '../../shared/app/lanes/lanes';
import { pumpOnce } from '../../shared/app/retry/pump';
import { LANE_ATTRIBUTES } from '../../shared/domain/intake/lane-message';
import { PubSubMessage, PushDelivery } from '../../shared/domain/events/cloudevents-pubsub';
import { AttemptResult, deliveryId } from '../../shared/domain/retry/delivery';
import { applySpec, destinationSpecSchema } from '../../shared/domain/destinations/destination';
import { eventKey, HeraldEvent } from '../../shared/domain/events/event';
import { PUSHED_BUNDLE_LIMITS } from '../../shared/domain/intake/lane-bundle';
import { MemoryDestinationStore } from '../../shared/adapters/memory/destination-store';
import { sharedLaneFor } from '../../shared/topology';
import { memoryDeliverDeps } from '../support/memory-deliver';

/**
 * One push carrying the events one ingest request sends to a destination (lanes.ts
 * publishBundled; app/delivery/deliver.ts deliverPush): each member attempted as if pushed alone, the push
 * acked once every outcome is durable, a member that fails on a Herald fault published again
 * alone (its neighbours not sent again), the whole push failed only when nothing could be done.
 */

const names = { prefix: 'herald' };
const eventOf = (id: string): HeraldEvent => ({
  attributes: { specversion: '1.0', id, source: '/shop', type: 'com.example.order.created', datacontenttype: 'application/json' },
  data: Buffer.from(`{"order":"${id}"}`),
});
const idOf = (id: string) => deliveryId('hook', eventKey(eventOf(id).attributes));

async function setup() {
  const destinations = new MemoryDestinationStore();
  await destinations.put(applySpec('hook', destinationSpecSchema.parse({ url: 'https://example.com/hook', eventTypes: ['com.example.order.created'] }), undefined, new Date()));
  const sent: string[] = [];
  const h = memoryDeliverDeps(
    destinations,
    {
      http: {
        send: async (req): Promise<AttemptResult> => {
          sent.push(JSON.parse(req.body.toString()).order as string);
          return { kind: 'response', status: 204, durationMs: 2, bodyExcerpt: '' };
        },
      },
    },
    { maxRateWaitMs: 30_000, sharedLaneWaitMs: 1_000 },
  );
  /** The message(s) ingest publishes for `ids` to the destination, taken off the bus. */
  const bundled = async (ids: string[]): Promise<PubSubMessage[]> => {
    const before = h.bus.length;
    await publishBundled(
      h.deps,
      { id: 'hook' },
      ids.map((id) => ({ kind: 'first' as const, destinationId: 'hook', event: eventOf(id), publishedAt: new Date().toISOString(), intake: 'in-1' })),
    );
    return h.bus.splice(before).map((p) => p.message);
  };
  const pushOf = (message: PubSubMessage, messageId = 'm1'): PushDelivery => ({ subscription: 'projects/herald-local/subscriptions/herald-shard-0-deliver', messageId, publishTime: new Date(), message });
  return { ...h, sent, bundled, pushOf };
}

test("a request's events for one pushed destination travel as one bundle on its shared first-attempt lane, at most PUSHED_BUNDLE_LIMITS.members a message", async () => {
  const h = await setup();
  const published: { topic: string; message: PubSubMessage }[] = [];
  h.deps.bus.publish = async (topic, message) => String(published.push({ topic, message }));
  const ids = Array.from({ length: PUSHED_BUNDLE_LIMITS.members + 3 }, (_, i) => `e${i}`);
  await publishBundled(h.deps, { id: 'hook' }, ids.map((id) => ({ kind: 'first' as const, destinationId: 'hook', event: eventOf(id), publishedAt: new Date().toISOString() })));
  // Compressed side by side: in either order.
  expect(published.map((p) => [p.topic, Number(p.message.attributes['herald-bundle'])]).sort((a, b) => Number(b[1]) - Number(a[1]))).toEqual([
    [sharedLaneFor('hook', 'first', names), PUSHED_BUNDLE_LIMITS.members],
    [sharedLaneFor('hook', 'first', names), 3],
  ]);
});

test('every member of a pushed bundle is sent once and recorded DELIVERED with its intake batch, in one push', async () => {
  const h = await setup();
  const [message] = await h.bundled(['a', 'b', 'c']);
  const outcomes = await deliverPush(h.deps, h.pushOf(message!));
  expect(outcomes).toEqual(['a', 'b', 'c'].map((id) => ({ kind: 'attempted', deliveryId: idOf(id), decision: 'delivered', status: 'DELIVERED' })));
  expect(h.sent.sort()).toEqual(['a', 'b', 'c']);
  for (const id of ['a', 'b', 'c']) expect(await h.deliveries.get(idOf(id))).toMatchObject({ status: 'DELIVERED', attempts: 1, intake: 'in-1' });
  expect(h.bus).toEqual([]);
});

test('the same bundle pushed again (a lost ack) sends its members again and records each as a duplicate, never a second delivery', async () => {
  const h = await setup();
  const [message] = await h.bundled(['a', 'b']);
  await deliverPush(h.deps, h.pushOf(message!));
  const again = await deliverPush(h.deps, h.pushOf(message!));
  expect(again.map((o) => o.kind)).toEqual(['duplicate', 'duplicate']);
  expect(h.sent.sort()).toEqual(['a', 'a', 'b', 'b']);
  expect(await h.deliveries.get(idOf('a'))).toMatchObject({ status: 'DELIVERED', attempts: 1, duplicates: { count: 1 } });
});

test("a member whose outcome cannot be recorded is published again alone and the bundle acked; that push records it without sending it again", async () => {
  const h = await setup();
  const [message] = await h.bundled(['a', 'b', 'c']);
  const addDelivered = h.deliveries.addDelivered.bind(h.deliveries);
  const refuse = jest.spyOn(h.deliveries, 'addDelivered').mockImplementation((record) => (record.id === idOf('b') ? Promise.reject(new Error('14 UNAVAILABLE: firestore down')) : addDelivered(record)));
  const outcomes = await deliverPush(h.deps, h.pushOf(message!));
  expect(outcomes.map((o) => o.kind)).toEqual(['attempted', 'published-again', 'attempted']);
  expect(h.bus.map((p) => [p.topic, p.message.attributes['ce-id'], p.message.attributes['herald-bundle'], p.message.attributes[`herald-${LANE_ATTRIBUTES.intake}`]])).toEqual([[sharedLaneFor('hook', 'first', names), 'b', undefined, 'in-1']]);
  expect(await h.deliveries.get(idOf('b'))).toBeUndefined();
  expect(h.logs).toContainEqual(expect.objectContaining({ severity: 'WARNING', message: "a bundle's member failed; published again alone, the rest of the bundle acked", deliveryId: idOf('b'), eventId: 'b' }));

  refuse.mockRestore();
  const [alone] = await deliverPush(h.deps, h.pushOf(h.bus[0]!.message, 'm2'));
  expect(alone).toMatchObject({ kind: 'attempted', decision: 'delivered' });
  expect(h.sent.sort()).toEqual(['a', 'b', 'c']);
  expect(await h.deliveries.get(idOf('b'))).toMatchObject({ status: 'DELIVERED', attempts: 1 });
});

test('a bundle none of whose members could be recorded fails its push (Pub/Sub brings it again) and publishes nothing', async () => {
  const h = await setup();
  const [message] = await h.bundled(['a', 'b']);
  jest.spyOn(h.deliveries, 'addDelivered').mockRejectedValue(new Error('14 UNAVAILABLE: firestore down'));
  jest.spyOn(h.deliveries, 'create').mockRejectedValue(new Error('14 UNAVAILABLE: firestore down'));
  await expect(deliverPush(h.deps, h.pushOf(message!))).rejects.toThrow('firestore down');
  expect(h.bus).toEqual([]);
  jest.restoreAllMocks();
});

test('a bundle that cannot be read goes to the dead-letter topic as it came, with why', async () => {
  const h = await setup();
  const forged: PubSubMessage = { data: Buffer.from('not gzip'), attributes: { 'herald-destination': 'hook', 'herald-bundle': '2' } };
  expect(await deliverPush(h.deps, h.pushOf(forged))).toEqual([{ kind: 'rejected', reason: 'invalid-lane-message' }]);
  expect(h.bus).toEqual([{ topic: 'herald-dead-letter', message: { data: forged.data, attributes: expect.objectContaining({ 'herald-bundle': '2', 'herald-reason': 'invalid-lane-message', 'herald-message-id': 'm1' }) } }]);
  expect(h.sent).toEqual([]);
});

test("a bundle's members wait for their rate turn as long as on a dedicated lane; the same event pushed alone on a shared lane, briefly", async () => {
  const h = await setup();
  const acquire = jest.spyOn(h.deps.limiter, 'acquire');
  const [message] = await h.bundled(['a', 'b']);
  await deliverPush(h.deps, h.pushOf(message!));
  expect(acquire.mock.calls.map((c) => c[2])).toEqual([h.deps.maxRateWaitMs, h.deps.maxRateWaitMs]);
  acquire.mockClear();
  const [alone] = await h.bundled(['c']);
  expect(alone!.attributes['herald-bundle']).toBeUndefined();
  await deliverPush(h.deps, h.pushOf(alone!, 'm2'));
  expect(acquire.mock.calls.map((c) => c[2])).toEqual([h.deps.sharedLaneWaitMs]);
  jest.restoreAllMocks();
});

test("the retry pump's round goes as one bundle on the retry lane: each member attempted under its own claim, one whose claim moved on not sent", async () => {
  const h = await setup();
  const past = new Date(Date.now() - 1000).toISOString();
  for (const id of ['r1', 'r2', 'r3']) {
    await h.deliveries.put({ id: idOf(id), destinationId: 'hook', eventId: id, eventSource: '/shop', eventType: 'com.example.order.created', status: 'PENDING', attempts: 1, availableAt: past, publishedAt: past, event: eventOf(id) });
  }
  const report = await pumpOnce({ ...h.deps, deadLetterTopic: 'herald-dead-letter', claimTtlMs: 60_000, batchSize: 10 });
  expect(report).toMatchObject({ due: 3, sent: 3 });
  const [pushed, ...more] = h.bus.splice(0);
  expect(more).toEqual([]);
  expect(pushed!.topic).toBe(sharedLaneFor('hook', 'retry', names));
  expect(pushed!.message.attributes[`herald-${LANE_ATTRIBUTES.bundle}`]).toBe('3');
  // r3's claim expired and another round took it over meanwhile: its member here is stale.
  await h.deliveries.update(idOf('r3'), (r) => r && { ...r, claimedAt: new Date(Date.now() + 1).toISOString() });
  const outcomes = await deliverPush(h.deps, h.pushOf(pushed!.message));
  expect(outcomes).toEqual([
    { kind: 'attempted', deliveryId: idOf('r1'), decision: 'delivered', status: 'DELIVERED' },
    { kind: 'attempted', deliveryId: idOf('r2'), decision: 'delivered', status: 'DELIVERED' },
    { kind: 'duplicate', deliveryId: idOf('r3') },
  ]);
  expect(h.sent.sort()).toEqual(['r1', 'r2']);
  for (const id of ['r1', 'r2']) expect(await h.deliveries.get(idOf(id))).toMatchObject({ status: 'DELIVERED', attempts: 2 });
  expect(await h.deliveries.get(idOf('r3'))).toMatchObject({ status: 'IN_FLIGHT', attempts: 1 });
});
