import { MemoryTopicPublisher, TopicAnswer } from '../../shared/adapters/memory/topic-publisher';
import { deliverFromLane } from '../../shared/app/delivery/deliver';
import { FirstMember, firstBatch } from '../../shared/app/delivery/batch-attempt';
import { LANE_ATTRIBUTES } from '../../shared/domain/intake/lane-message';
import { toPubSubMessage } from '../../shared/domain/events/cloudevents-pubsub';
import { deliveryId } from '../../shared/domain/retry/delivery';
import { applySpec, destinationSpecSchema } from '../../shared/domain/destinations/destination';
import { eventKey, HeraldEvent } from '../../shared/domain/events/event';
import { MemoryDestinationStore } from '../../shared/adapters/memory/destination-store';
import { memoryDeliverDeps } from '../support/memory-deliver';

/** `deliver` to a Pub/Sub-topic destination, on memory adapters: the sender chosen by kind, outcomes recorded. */

const TOPIC = 'projects/acme-audit/topics/audit';
const EVENT: HeraldEvent = {
  attributes: { specversion: '1.0', id: 'e1', source: '/shop', type: 'com.example.order.created', time: '2026-11-23T14:00:00.000Z', datacontenttype: 'application/json' },
  data: Buffer.from('{"orderId":42}'),
};
const ID = deliveryId('audit', eventKey(EVENT.attributes));

async function setup(answer: TopicAnswer, spec: Record<string, unknown> = {}, maxRateWaitMs = 30_000) {
  const destinations = new MemoryDestinationStore();
  await destinations.put(applySpec('audit', destinationSpecSchema.parse({ topic: TOPIC, ...spec }), undefined, new Date()));
  const topics = new MemoryTopicPublisher(() => answer);
  const { deps, logHead, bus, logs, deliveries, rateStore } = memoryDeliverDeps(
    destinations,
    {
      http: {
        send: async () => {
          throw new Error('a topic destination must not be sent HTTP');
        },
      },
      topics,
    },
    { maxRateWaitMs },
  );
  const push = {
    subscription: 'projects/herald-local/subscriptions/herald-lane-audit-deliver',
    messageId: 'm1',
    publishTime: new Date(),
    message: toPubSubMessage(EVENT, { [LANE_ATTRIBUTES.destination]: 'audit', [LANE_ATTRIBUTES.publishedAt]: new Date().toISOString() }),
  };
  return { deps, logHead, push, topics, bus, logs, deliveries, destinations, rateStore };
}

/**
 * The log head proves a record published in the counter minute it was created in: one published
 * just before a minute's edge and recorded after it is left to the query (correctly), which is not
 * what this test looks at.
 */
async function clearOfMinuteEdge(): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < 2_000) await new Promise((r) => setTimeout(r, left + 10));
}

test('a topic destination gets the event published in the CloudEvents Pub/Sub binding, and the delivery is DELIVERED', async () => {
  await clearOfMinuteEdge();
  const h = await setup('ok');
  expect(await deliverFromLane(h.deps, h.push)).toEqual({ kind: 'attempted', deliveryId: ID, decision: 'delivered', status: 'DELIVERED' });
  expect(h.topics.published).toHaveLength(1);
  const sent = h.topics.published[0]!;
  expect(sent.topic).toBe(TOPIC);
  expect(sent.timeoutMs).toBe(5000);
  expect(sent.message.attributes).toEqual({
    'ce-specversion': '1.0',
    'ce-id': 'e1',
    'ce-source': '/shop',
    'ce-type': 'com.example.order.created',
    'ce-time': '2026-11-23T14:00:00.000Z',
    'content-type': 'application/json',
    'herald-delivery-id': ID,
  });
  expect(sent.message.data.equals(EVENT.data)).toBe(true);
  expect(await h.deliveries.get(ID)).toMatchObject({ status: 'DELIVERED', attempts: 1 });
  // The attempt as the log shows it: the message published, with its id; and the record at the head of the log.
  expect((await h.deliveries.get(ID))?.attemptLog).toEqual([
    expect.objectContaining({ target: TOPIC, messageId: sent.messageId, request: expect.objectContaining({ headers: sent.message.attributes, bodyBytes: EVENT.data.length }), decision: { kind: 'delivered' } }),
  ]);
  expect((await h.logHead.head('audit', 1))?.map((e) => e[1])).toEqual([ID]);
  expect(h.logs.find((l) => l.message === 'delivered')).toMatchObject({ deliveryId: ID, destinationId: 'audit', topic: TOPIC, topicMessageId: sent.messageId });
});

test('NOT_FOUND under event-platform suspends the destination, QUEUES the event and notifies', async () => {
  const h = await setup({ failure: { code: 5, message: '5 NOT_FOUND: Resource not found (resource=audit).' } }, { technicalEmail: 'ops@example.com' });
  expect(await deliverFromLane(h.deps, h.push)).toMatchObject({ kind: 'attempted', decision: 'suspend', status: 'QUEUED' });
  expect(await h.deliveries.get(ID)).toMatchObject({
    status: 'QUEUED',
    lastError: { error: 'Pub/Sub publish refused (not-found): 5 NOT_FOUND: Resource not found (resource=audit).' },
  });
  const destination = await h.destinations.get('audit');
  expect(destination).toMatchObject({ status: 'suspended', suspension: { cause: 'criteria', reason: expect.stringContaining('the topic does not exist') } });
  expect(h.bus.map((m) => m.topic)).toEqual(['herald-notifications']);
  expect(h.bus[0]!.message.attributes).toMatchObject({ 'herald-destination': 'audit', 'herald-to': 'ops@example.com' });
  await h.deps.counters.flush();
  expect((await h.rateStore.window('audit', 0)).map((b) => b.settled)).toEqual([{ queued: 1 }]);
});

test.each([
  [14, '14 UNAVAILABLE: Connection dropped'],
  [8, '8 RESOURCE_EXHAUSTED: quota exceeded'],
  [4, '4 DEADLINE_EXCEEDED: deadline'],
])('gRPC %s from Pub/Sub is Herald\'s overload: PENDING about 10 s later, no attempt counted, nothing dead', async (code, message) => {
  const h = await setup({ failure: { code, message } }, { policy: { retryOn: { statuses: ['5xx'], networkErrors: false }, backoff: { kind: 'immediate' }, maxAttempts: 1 } });
  const before = Date.now();
  expect(await deliverFromLane(h.deps, h.push)).toMatchObject({ kind: 'deferred' });
  const record = await h.deliveries.get(ID);
  expect(record).toMatchObject({ status: 'PENDING', attempts: 0 });
  expect(record).not.toHaveProperty('lastError');
  expect(record).not.toHaveProperty('rateDeferred');
  const wait = Date.parse(record!.availableAt!) - before;
  expect(wait).toBeGreaterThanOrEqual(7_900);
  expect(wait).toBeLessThanOrEqual(12_500);
  expect(h.bus.filter((m) => m.topic === 'herald-dead-letter')).toHaveLength(0);
  await h.deps.counters.flush();
  expect(h.logs.some((l) => String(l.message).startsWith("Herald's own service is overloaded"))).toBe(true);
});

test('a failure that is the topic\'s (INTERNAL) counts: a custom policy without network retries lets it die, with one dead letter', async () => {
  const strict = await setup({ failure: { code: 13, message: '13 INTERNAL: oops' } }, { policy: { retryOn: { statuses: ['5xx'], networkErrors: false }, backoff: { kind: 'immediate' }, maxAttempts: 2 } });
  expect(await deliverFromLane(strict.deps, strict.push)).toMatchObject({ decision: 'dead', status: 'DEAD' });
  const dead = strict.bus.filter((m) => m.topic === 'herald-dead-letter');
  expect(dead).toHaveLength(1);
  expect(dead[0]!.message.attributes).toMatchObject({ 'herald-destination': 'audit', 'herald-delivery-id': ID });
  // Published, then marked sent: the reconciler owes nothing.
  expect(await strict.deliveries.get(ID)).not.toHaveProperty('deadLetterDueAt');
  await strict.deps.counters.flush();
  expect((await strict.rateStore.window('audit', 0)).map((b) => b.settled)).toEqual([{ dead: 1 }]);
});

test('a publish with no answer within the attempt timeout is a timeout', async () => {
  const h = await setup({ timedOut: true }, { policy: 'eventarc' });
  expect(await deliverFromLane(h.deps, h.push)).toMatchObject({ decision: 'retry', status: 'PENDING' });
  expect(await h.deliveries.get(ID)).toMatchObject({ lastError: { error: 'timed out after 5000 ms' } });
});

test('a delivery whose turn under the rate is further off than it may wait is deferred unattempted, PENDING until about then', async () => {
  // 1/s at most: the first delivery waits about a second for its turn, the second would wait two.
  const h = await setup('ok', { rate: { min: 1, max: 1 } });
  h.deps.maxRateWaitMs = 1_500;
  h.deps.sharedLaneWaitMs = 1_500;
  const second: HeraldEvent = { ...EVENT, attributes: { ...EVENT.attributes, id: 'e2' } };
  const lane = { [LANE_ATTRIBUTES.destination]: 'audit', [LANE_ATTRIBUTES.publishedAt]: new Date().toISOString() };
  const push2 = { ...h.push, messageId: 'm2', message: toPubSubMessage(second, lane) };
  const started = Date.now();
  const [first, deferred] = await Promise.all([deliverFromLane(h.deps, h.push), deliverFromLane(h.deps, push2)]);
  expect(first).toMatchObject({ kind: 'attempted', decision: 'delivered' });
  expect(deferred).toMatchObject({ kind: 'deferred', deliveryId: deliveryId('audit', eventKey(second.attributes)) });
  expect(h.topics.published).toHaveLength(1);
  const record = await h.deliveries.get(deliveryId('audit', eventKey(second.attributes)));
  // Marked as waiting for its rate, so rate control may bring it forward; no claim left on it.
  expect(record).toMatchObject({ status: 'PENDING', attempts: 0, rateDeferred: true });
  expect(record).not.toHaveProperty('claimedAt');
  // Not a failure: no attempt, nothing counted; it comes back when its turn would have come.
  expect(Date.parse(record!.availableAt!)).toBeGreaterThan(started + 1_500);
  expect(record!.lastError).toBeUndefined();
});

describe('first attempts and rate control', () => {
  it('a deferral costs one write and no read: creating the record only if there is none is the duplicate check', async () => {
    // At 1/s and no wait allowed, every first attempt is deferred.
    const h = await setup('ok', { rate: { min: 1, max: 1 } }, 0);
    const get = jest.spyOn(h.deliveries, 'get');
    const first = await deliverFromLane(h.deps, h.push);
    expect(first).toMatchObject({ kind: 'deferred', deliveryId: ID });
    expect(get).not.toHaveBeenCalled();
    expect(await h.deliveries.get(ID)).toMatchObject({ status: 'PENDING', attempts: 0 });
    // The lane message again: deferred by the limiter too, and recognised by the create.
    expect(await deliverFromLane(h.deps, h.push)).toEqual({ kind: 'duplicate', deliveryId: ID });
    expect(h.topics.published).toHaveLength(0);
  });

  it('a policy with a long attempt timeout waits less for a turn: the wait and the attempt stay inside the push ack deadline', async () => {
    // 40 s to answer leaves 5 s of the 45 s a push may be handled in: a turn 5 s or more away is deferred.
    const policy = { retryOn: { statuses: ['5xx'] }, backoff: { kind: 'immediate' }, maxAttempts: 2, attemptTimeoutMs: 40_000 };
    const h = await setup('ok', { rate: { min: 1, max: 1 }, policy });
    const lane = { [LANE_ATTRIBUTES.destination]: 'audit', [LANE_ATTRIBUTES.publishedAt]: new Date().toISOString() };
    const outcomes = await Promise.all(
      Array.from({ length: 8 }, (_, i) => {
        const event: HeraldEvent = { ...EVENT, attributes: { ...EVENT.attributes, id: `e${i + 1}` } };
        return deliverFromLane(h.deps, { ...h.push, messageId: `m${i + 1}`, message: toPubSubMessage(event, lane) });
      }),
    );
    const kinds = outcomes.map((o) => o.kind);
    // At 1/s, 8 at once would all wait their turns under the default 30 s; here the later ones are deferred.
    expect(kinds.filter((k) => k === 'attempted').length).toBeLessThanOrEqual(6);
    expect(kinds.filter((k) => k === 'deferred').length).toBeGreaterThanOrEqual(2);
  }, 15_000);

  it('a delivery back from a deferral (claimed by the pump) and deferred again comes back near its turn, not behind the fresh deferrals', async () => {
    const h = await setup('ok', { rate: { min: 1, max: 1 } }, 0);
    const lane = { [LANE_ATTRIBUTES.destination]: 'audit', [LANE_ATTRIBUTES.publishedAt]: new Date().toISOString() };
    const fresh = [];
    for (let i = 2; i <= 21; i++) {
      const event: HeraldEvent = { ...EVENT, attributes: { ...EVENT.attributes, id: `e${i}` } };
      fresh.push(await deliverFromLane(h.deps, { ...h.push, messageId: `m${i}`, message: toPubSubMessage(event, lane) }));
    }
    // 20 deferred a second apart (1/s): the last about 20 s out.
    const last = Math.max(...fresh.map((o) => (o.kind === 'deferred' ? Date.parse(o.until) : NaN)));
    expect(last - Date.now()).toBeGreaterThan(18_000);
    // e1 was deferred before and is due: the pump claimed it and sent it to the lane.
    const claimedAt = new Date().toISOString();
    await h.deliveries.put({ id: ID, destinationId: 'audit', eventId: 'e1', eventSource: '/shop', eventType: EVENT.attributes.type, status: 'IN_FLIGHT', attempts: 0, availableAt: claimedAt, claimedAt, rateDeferred: true, event: EVENT });
    const again = await deliverFromLane(h.deps, { ...h.push, message: toPubSubMessage(EVENT, { ...lane, [LANE_ATTRIBUTES.claim]: claimedAt }) });
    expect(again).toMatchObject({ kind: 'deferred', deliveryId: ID });
    const until = Date.parse((again as { until: string }).until);
    expect(until - Date.now()).toBeLessThan(3_000);
    expect(await h.deliveries.get(ID)).toMatchObject({ status: 'PENDING', rateDeferred: true });
  });

  it('a push Pub/Sub marks as redelivered is found a duplicate before its turn: it sends nothing and takes no turn from the deliveries behind it', async () => {
    // At 1/s: a turn taken by the duplicate would put the next delivery a second later. deliveryAttempt > 1 (production Pub/Sub): read first.
    const h = await setup('ok', { rate: { min: 1, max: 1 } });
    expect(await deliverFromLane(h.deps, h.push)).toMatchObject({ kind: 'attempted', status: 'DELIVERED' });
    const firstAt = Date.now();
    const other: HeraldEvent = { ...EVENT, attributes: { ...EVENT.attributes, id: 'e2' } };
    const lane = { [LANE_ATTRIBUTES.destination]: 'audit', [LANE_ATTRIBUTES.publishedAt]: new Date().toISOString() };
    const push2 = { ...h.push, messageId: 'm2', message: toPubSubMessage(other, lane) };
    const done: number[] = [];
    const [duplicate, next] = await Promise.all([
      deliverFromLane(h.deps, { ...h.push, deliveryAttempt: 2 }).finally(() => done.push(Date.now())),
      deliverFromLane(h.deps, push2).finally(() => done.push(Date.now())),
    ]);
    expect(duplicate).toEqual({ kind: 'duplicate', deliveryId: ID, status: 'DELIVERED' });
    expect(next).toMatchObject({ kind: 'attempted', status: 'DELIVERED' });
    expect(h.topics.published).toHaveLength(2);
    // The duplicate left at once; the other took the next turn, about a second after the first.
    expect(done[0]! - firstAt).toBeLessThan(300);
    expect(done[1]! - firstAt).toBeLessThan(1_600);
  });
});

describe("the account's allowedTopics, checked again at every publish (issue 50)", () => {
  it('a topic taken off the list since registration is not published to: the destination is suspended (topic-not-allowed), the event QUEUED, the contact told', async () => {
    const h = await setup('ok', { technicalEmail: 'ops@example.com', policy: 'eventarc' });
    h.deps.allowedTopics = async () => ({ entries: ['projects/acme-audit/topics/other'] });
    expect(await deliverFromLane(h.deps, h.push)).toMatchObject({ kind: 'attempted', decision: 'suspend', status: 'QUEUED' });
    expect(h.topics.published).toHaveLength(0);
    const record = await h.deliveries.get(ID);
    expect(record?.lastError?.error).toMatch(/^not published, refused by Herald: topic projects\/acme-audit\/topics\/audit is not among the topics account default may publish to/);
    const destination = await h.destinations.get('audit');
    expect(destination).toMatchObject({ status: 'suspended', suspension: { cause: 'topic-not-allowed', reason: expect.stringContaining('PATCH /admin/accounts/default') } });
    expect(h.bus.map((m) => m.topic)).toEqual(['herald-notifications']);
    // Suspended, the next event is QUEUED without an attempt: no loop of refusals.
    const next = { ...h.push, messageId: 'm2', message: toPubSubMessage({ ...EVENT, attributes: { ...EVENT.attributes, id: 'e2' } }, { [LANE_ATTRIBUTES.destination]: 'audit', [LANE_ATTRIBUTES.publishedAt]: new Date().toISOString() }) };
    expect(await deliverFromLane(h.deps, next)).toMatchObject({ kind: 'queued' });
    expect(h.topics.published).toHaveLength(0);
  });

  it("a topic named like Herald's own is refused at publish too, whatever the list says", async () => {
    const h = await setup('ok');
    await h.destinations.put({ ...(await h.destinations.get('audit'))!, topic: 'projects/acme-audit/topics/herald-events' });
    h.deps.directory.changed('audit');
    expect(await deliverFromLane(h.deps, h.push)).toMatchObject({ decision: 'suspend' });
    expect(h.topics.published).toHaveLength(0);
    expect((await h.destinations.get('audit'))?.suspension?.reason).toContain("named like one of Herald's own topics");
  });

  it('a list that cannot be read is no attempt: the delivery waits PENDING, nothing published, nothing suspended', async () => {
    const h = await setup('ok');
    h.deps.allowedTopics = async () => ({ unreadable: 'firestore unavailable' });
    expect(await deliverFromLane(h.deps, h.push)).toMatchObject({ kind: 'deferred' });
    expect(h.topics.published).toHaveLength(0);
    expect(await h.deliveries.get(ID)).toMatchObject({ status: 'PENDING', attempts: 0 });
    expect((await h.destinations.get('audit'))?.status).toBe('active');
  });

  it('a batched topic destination off the list publishes no member of its batch', async () => {
    const h = await setup('ok', { batch: { maxEvents: 10, maxWaitMs: 500 } });
    h.deps.allowedTopics = async () => ({ entries: [] });
    const destination = (await h.destinations.get('audit'))!;
    const member = (id: string): FirstMember => ({ kind: 'first', destinationId: 'audit', event: { ...EVENT, attributes: { ...EVENT.attributes, id } }, publishedAt: new Date().toISOString() });
    expect(await firstBatch(h.deps, destination, [member('b1'), member('b2')])).toMatchObject({ outcome: 'suspend', recorded: 2 });
    expect(h.topics.published).toHaveLength(0);
    expect((await h.destinations.get('audit'))?.suspension?.cause).toBe('topic-not-allowed');
  });
});
