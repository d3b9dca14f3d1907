import { deliverFromLane } from '../../shared/app/delivery/deliver';
import { LANE_ATTRIBUTES } from '../../shared/domain/intake/lane-message';
import { PushDelivery, toPubSubMessage } from '../../shared/domain/events/cloudevents-pubsub';
import { AttemptResult, deliveryId } from '../../shared/domain/retry/delivery';
import { applySpec, destinationSpecSchema } from '../../shared/domain/destinations/destination';
import { eventKey, HeraldEvent } from '../../shared/domain/events/event';
import { MemoryDestinationStore } from '../../shared/adapters/memory/destination-store';
import { memoryDeliverDeps } from '../support/memory-deliver';

/**
 * A first push sends without reading its record (SPEC "Delivery contract"); a redelivered
 * push is sent again and settled against the record it finds: a duplicate recorded on a
 * DELIVERED delivery, a waiting retry DELIVERED, a DEAD or QUEUED one left alone; never an
 * attempt counted twice or a second dead letter.
 */

const EVENT: HeraldEvent = {
  attributes: { specversion: '1.0', id: 'e1', source: '/shop', type: 'com.example.order.created', datacontenttype: 'application/json' },
  data: Buffer.from('{"orderId":42}'),
};
const ID = deliveryId('hook', eventKey(EVENT.attributes));
/** A retry an hour away: only the redelivered push can settle the delivery in these tests. */
const LATE_RETRY = { retryOn: { statuses: ['5xx'] }, backoff: { kind: 'fixed', delaysMs: [3_600_000] }, maxAttempts: 3 };

async function setup(statuses: number[], spec: Record<string, unknown> = {}) {
  const destinations = new MemoryDestinationStore();
  await destinations.put(applySpec('hook', destinationSpecSchema.parse({ url: 'https://example.com/hook', ...spec }), undefined, new Date()));
  const sent: string[] = [];
  const { deps, bus, logs, deliveries, rateStore } = memoryDeliverDeps(destinations, {
    http: {
      send: async (req): Promise<AttemptResult> => {
        sent.push(req.headers['webhook-id']!);
        const status = statuses[Math.min(sent.length, statuses.length) - 1]!;
        return { kind: 'response', status, durationMs: 3, bodyExcerpt: '' };
      },
    },
  });
  const push: PushDelivery = {
    subscription: 'projects/herald-local/subscriptions/herald-shard-0-deliver',
    messageId: 'm1',
    publishTime: new Date(),
    message: toPubSubMessage(EVENT, { [LANE_ATTRIBUTES.destination]: 'hook', [LANE_ATTRIBUTES.publishedAt]: new Date().toISOString() }),
  };
  const counted = async () => {
    await deps.counters.flush();
    const buckets = await rateStore.window('hook', 0);
    return {
      attempts: buckets.reduce((n, b) => n + b.attempts, 0),
      successes: buckets.reduce((n, b) => n + b.successes, 0),
      failures: buckets.reduce((n, b) => n + b.failures, 0),
      dead: buckets.reduce((n, b) => n + (b.settled?.dead ?? 0), 0),
    };
  };
  const deadLetters = () => bus.filter((m) => m.topic === 'herald-dead-letter');
  // What went into the destination's log head (each record once, when it is created).
  const created: string[] = [];
  const addToHead = deps.logHead.created.bind(deps.logHead);
  jest.spyOn(deps.logHead, 'created').mockImplementation((destinationId, id, publishedAt, at) => {
    created.push(id);
    addToHead(destinationId, id, publishedAt, at);
  });
  return { deps, push, deliveries, sent, logs, counted, deadLetters, created };
}

afterEach(() => jest.restoreAllMocks());

test('a first push that succeeds reads no delivery record: one write, the create', async () => {
  const h = await setup([204]);
  const get = jest.spyOn(h.deliveries, 'get');
  const update = jest.spyOn(h.deliveries, 'update');
  expect(await deliverFromLane(h.deps, h.push)).toEqual({ kind: 'attempted', deliveryId: ID, decision: 'delivered', status: 'DELIVERED' });
  expect(get).not.toHaveBeenCalled();
  expect(update).not.toHaveBeenCalled();
  expect(await h.deliveries.get(ID)).toMatchObject({ status: 'DELIVERED', attempts: 1 });
  h.deps.limiter.close();
});

test('redelivered after its success was recorded: sent again, recorded as a duplicate, each send counted', async () => {
  const h = await setup([204]);
  await deliverFromLane(h.deps, h.push);
  const again = await deliverFromLane(h.deps, { ...h.push, messageId: 'm1' });
  expect(again).toEqual({ kind: 'duplicate', deliveryId: ID, status: 'DELIVERED' });
  // At least once: the destination got it twice, with one webhook-id to deduplicate on.
  expect(h.sent).toHaveLength(2);
  expect(new Set(h.sent).size).toBe(1);
  const record = await h.deliveries.get(ID);
  expect(record).toMatchObject({ status: 'DELIVERED', attempts: 1, duplicates: { count: 1 } });
  expect(record?.attemptLog).toHaveLength(1);
  // The stats count what the receiver answered: two requests, two 2xx.
  expect(await h.counted()).toEqual({ attempts: 2, successes: 2, failures: 0, dead: 0 });
  // Once in the log head.
  expect(h.created).toEqual([ID]);
  // A third push adds to the count.
  await deliverFromLane(h.deps, h.push);
  expect(await h.deliveries.get(ID)).toMatchObject({ duplicates: { count: 2 } });
  h.deps.limiter.close();
});

test('redelivered after a failed first attempt: the send that succeeds makes the PENDING retry DELIVERED', async () => {
  const h = await setup([503, 204], { policy: LATE_RETRY });
  expect(await deliverFromLane(h.deps, h.push)).toMatchObject({ kind: 'attempted', decision: 'retry', status: 'PENDING' });
  expect(await deliverFromLane(h.deps, h.push)).toEqual({ kind: 'attempted', deliveryId: ID, decision: 'delivered', status: 'DELIVERED' });
  const record = await h.deliveries.get(ID);
  expect(record).toMatchObject({ status: 'DELIVERED', attempts: 2 });
  expect(record).not.toHaveProperty('availableAt');
  expect(record).not.toHaveProperty('event');
  expect(record?.attemptLog?.map((a) => a.decision.kind)).toEqual(['delivered', 'retry']);
  // Two attempts, each counted once: the failure, then the success.
  expect(await h.counted()).toEqual({ attempts: 2, successes: 1, failures: 1, dead: 0 });
  expect(h.created).toEqual([ID]);
  h.deps.limiter.close();
});

test('redelivered after its success was recorded, and failing: the delivery stays DELIVERED, the copy a duplicate, no retry opened', async () => {
  const h = await setup([204, 503], { policy: LATE_RETRY });
  await deliverFromLane(h.deps, h.push);
  expect(await deliverFromLane(h.deps, h.push)).toEqual({ kind: 'duplicate', deliveryId: ID, status: 'DELIVERED' });
  const record = await h.deliveries.get(ID);
  expect(record).toMatchObject({ status: 'DELIVERED', attempts: 1, duplicates: { count: 1 } });
  expect(record).not.toHaveProperty('availableAt');
  expect(await h.counted()).toEqual({ attempts: 2, successes: 1, failures: 1, dead: 0 });
  h.deps.limiter.close();
});

test('redelivered after a failed first attempt and failing again: the retry keeps its schedule, the second send counted as a failure', async () => {
  const h = await setup([503], { policy: LATE_RETRY });
  await deliverFromLane(h.deps, h.push);
  const before = await h.deliveries.get(ID);
  expect(await deliverFromLane(h.deps, h.push)).toEqual({ kind: 'duplicate', deliveryId: ID, status: 'PENDING' });
  expect(h.sent).toHaveLength(2);
  expect(await h.deliveries.get(ID)).toEqual(before);
  expect(await h.counted()).toEqual({ attempts: 2, successes: 0, failures: 2, dead: 0 });
  h.deps.limiter.close();
});

test('redelivered after it went DEAD: left DEAD, one dead letter, dead once, each send counted', async () => {
  const h = await setup([400, 204], { policy: 'adobe-best-effort' });
  expect(await deliverFromLane(h.deps, h.push)).toMatchObject({ kind: 'attempted', decision: 'dead', status: 'DEAD' });
  const before = await h.deliveries.get(ID);
  expect(await deliverFromLane(h.deps, h.push)).toEqual({ kind: 'duplicate', deliveryId: ID, status: 'DEAD' });
  expect(await h.deliveries.get(ID)).toEqual(before);
  expect(h.deadLetters()).toHaveLength(1);
  expect(await h.counted()).toEqual({ attempts: 2, successes: 1, failures: 1, dead: 1 });
  h.deps.limiter.close();
});

test('a push production Pub/Sub marks as redelivered (deliveryAttempt > 1) reads first and is not sent again', async () => {
  const h = await setup([204]);
  await deliverFromLane(h.deps, h.push);
  const get = jest.spyOn(h.deliveries, 'get');
  expect(await deliverFromLane(h.deps, { ...h.push, deliveryAttempt: 2 })).toEqual({ kind: 'duplicate', deliveryId: ID, status: 'DELIVERED' });
  expect(get).toHaveBeenCalledTimes(1);
  expect(h.sent).toHaveLength(1);
  expect(await h.deliveries.get(ID)).not.toHaveProperty('duplicates');
  // deliveryAttempt 1 is a first push: no read.
  get.mockClear();
  const other: HeraldEvent = { ...EVENT, attributes: { ...EVENT.attributes, id: 'e2' } };
  await deliverFromLane(h.deps, { ...h.push, deliveryAttempt: 1, message: toPubSubMessage(other, { [LANE_ATTRIBUTES.destination]: 'hook' }) });
  expect(get).not.toHaveBeenCalled();
  h.deps.limiter.close();
});

test('a lane message of an event its producer resent (Herald-Resend) reads first: not sent again where it was delivered, sent where it was not', async () => {
  const h = await setup([204]);
  await deliverFromLane(h.deps, h.push);
  const get = jest.spyOn(h.deliveries, 'get');
  const resent = (event: HeraldEvent): PushDelivery => ({ ...h.push, message: toPubSubMessage(event, { [LANE_ATTRIBUTES.destination]: 'hook', [LANE_ATTRIBUTES.resent]: '1' }) });
  expect(await deliverFromLane(h.deps, resent(EVENT))).toEqual({ kind: 'duplicate', deliveryId: ID, status: 'DELIVERED' });
  expect(h.sent).toHaveLength(1);
  expect(await h.deliveries.get(ID)).not.toHaveProperty('duplicates');
  // Its first try never reached this lane: the resend is its first attempt.
  const other: HeraldEvent = { ...EVENT, attributes: { ...EVENT.attributes, id: 'e2' } };
  get.mockClear();
  expect(await deliverFromLane(h.deps, resent(other))).toMatchObject({ kind: 'attempted', status: 'DELIVERED' });
  expect(get).toHaveBeenCalledTimes(1);
  expect(h.sent).toHaveLength(2);
  h.deps.limiter.close();
});

test('a redelivered push whose record cannot be updated is acked all the same: the record owns the delivery, nothing is lost', async () => {
  const h = await setup([204]);
  await deliverFromLane(h.deps, h.push);
  jest.spyOn(h.deliveries, 'update').mockRejectedValue(new Error('10 ABORTED: Transaction lock timeout.'));
  // Resolves (the push is acked, 204) instead of throwing (500: Pub/Sub would push it, and it would be sent, again).
  expect(await deliverFromLane(h.deps, h.push)).toEqual({ kind: 'duplicate', deliveryId: ID });
  expect(h.sent).toHaveLength(2);
  expect(await h.deliveries.get(ID)).toMatchObject({ status: 'DELIVERED', attempts: 1 });
  expect(h.logs.find((l) => l.severity === 'WARNING' && /recording it failed/.test(String(l.message)))).toMatchObject({ deliveryId: ID, error: '10 ABORTED: Transaction lock timeout.' });
  expect(await h.counted()).toEqual({ attempts: 2, successes: 2, failures: 0, dead: 0 });
  h.deps.limiter.close();
});

test('a redelivered push whose create fails (its document held by another transaction) is acked when a plain read finds the record', async () => {
  const h = await setup([204]);
  await deliverFromLane(h.deps, h.push);
  // Another millisecond: a record with this send's time would be taken for its own, written by a create whose answer was lost.
  await new Promise((r) => setTimeout(r, 5));
  const create = jest.spyOn(h.deliveries, 'create').mockRejectedValue(new Error('10 ABORTED: Transaction lock timeout.'));
  expect(await deliverFromLane(h.deps, h.push)).toEqual({ kind: 'duplicate', deliveryId: ID });
  expect(h.logs.find((l) => /could not be written to/.test(String(l.message)))).toMatchObject({ deliveryId: ID, status: 'DELIVERED' });
  // No record: the failure stands (500), and Pub/Sub brings the push again.
  const other: HeraldEvent = { ...EVENT, attributes: { ...EVENT.attributes, id: 'e2' } };
  await expect(deliverFromLane(h.deps, { ...h.push, message: toPubSubMessage(other, { [LANE_ATTRIBUTES.destination]: 'hook' }) })).rejects.toThrow('Transaction lock timeout');
  // A create that wrote before it failed: its own record, found by the read, counts as created.
  create.mockImplementation(async (record) => {
    await h.deliveries.put(record);
    throw new Error('4 DEADLINE_EXCEEDED: the answer was lost');
  });
  const third: HeraldEvent = { ...EVENT, attributes: { ...EVENT.attributes, id: 'e3' } };
  expect(await deliverFromLane(h.deps, { ...h.push, message: toPubSubMessage(third, { [LANE_ATTRIBUTES.destination]: 'hook' }) })).toMatchObject({ kind: 'attempted', status: 'DELIVERED' });
  expect(h.created).toEqual([ID, deliveryId('hook', eventKey(third.attributes))]);
  h.deps.limiter.close();
});

describe('a first push that ends after the reconciler may have recovered its delivery', () => {
  const GRACE = 60_000;
  const pushAt = (acceptedAgoMs: number): PushDelivery => ({
    subscription: 'projects/herald-local/subscriptions/herald-shard-0-deliver',
    messageId: 'm-late',
    publishTime: new Date(),
    message: toPubSubMessage(EVENT, { [LANE_ATTRIBUTES.destination]: 'hook', [LANE_ATTRIBUTES.publishedAt]: new Date(Date.now() - acceptedAgoMs).toISOString() }),
  });

  async function withRecovered() {
    const h = await setup([204]);
    h.deps.reconcileGraceMs = GRACE;
    // What the reconciler writes for a missing record: PENDING, due now, never attempted.
    await h.deliveries.put({ id: ID, destinationId: 'hook', eventId: 'e1', eventSource: '/shop', eventType: EVENT.attributes.type, status: 'PENDING', attempts: 0, availableAt: new Date().toISOString(), recoveredAt: new Date().toISOString(), event: EVENT });
    const meter = jest.spyOn(h.deps.counters, 'meter');
    const delivered = () => meter.mock.calls.filter(([, , counts]) => counts.delivered !== undefined).length;
    return { h, delivered };
  }

  test('late (past the grace less its margin): its success is settled against the recovered record, delivered counted once', async () => {
    const { h, delivered } = await withRecovered();
    const addDelivered = jest.spyOn(h.deliveries, 'addDelivered');
    expect(await deliverFromLane(h.deps, pushAt(GRACE - 10_000))).toMatchObject({ kind: 'attempted', decision: 'delivered', status: 'DELIVERED' });
    // No grouped copy beside the reconciler's record: the one record, now DELIVERED.
    expect(addDelivered).not.toHaveBeenCalled();
    expect(await h.deliveries.get(ID)).toMatchObject({ status: 'DELIVERED', attempts: 1 });
    expect(delivered()).toBe(1);
    h.deps.limiter.close();
  });

  test('early, the success is grouped unchecked as ever: no read, no update', async () => {
    const h = await setup([204]);
    h.deps.reconcileGraceMs = GRACE;
    const get = jest.spyOn(h.deliveries, 'get');
    const addDelivered = jest.spyOn(h.deliveries, 'addDelivered');
    expect(await deliverFromLane(h.deps, pushAt(1_000))).toMatchObject({ kind: 'attempted', status: 'DELIVERED' });
    expect(addDelivered).toHaveBeenCalledTimes(1);
    expect(get).not.toHaveBeenCalled();
    h.deps.limiter.close();
  });
});
