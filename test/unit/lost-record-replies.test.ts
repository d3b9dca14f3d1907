import { MemoryDestinationStore } from '../../shared/adapters/memory/destination-store';
import { claimedBatch, ClaimedMember, FirstMember, firstBatch } from '../../shared/app/delivery/batch-attempt';
import { deliverFromLane } from '../../shared/app/delivery/deliver';
import { PushDelivery, toPubSubMessage } from '../../shared/domain/events/cloudevents-pubsub';
import { AttemptResult, deliveryId, DeliveryRecord } from '../../shared/domain/retry/delivery';
import { transition } from '../../shared/domain/retry/delivery-state';
import { applySpec, Destination, destinationSpecSchema } from '../../shared/domain/destinations/destination';
import { eventKey, HeraldEvent } from '../../shared/domain/events/event';
import { LANE_ATTRIBUTES } from '../../shared/domain/intake/lane-message';
import { suspend } from '../../shared/domain/destinations/suspension';
import { LosingWrite, loseRecordReplies, nthWrite } from '../support/lost-record-replies';
import { memoryDeliverDeps } from '../support/memory-deliver';

/**
 * Issue 51, item 1: a delivery record's write that lands and then loses its reply
 * (DEADLINE_EXCEEDED after the commit) is this attempt's own write, found again when it is tried
 * once more (by Herald, or by the Firestore client re-running a transaction): counted once, into
 * the log head once, dead-lettered, the suspension decided; never a duplicate that was not sent,
 * never "claim taken over".
 */

const event = (id: string): HeraldEvent => ({
  attributes: { specversion: '1.0', id, source: '/shop', type: 'com.example.order.created', datacontenttype: 'application/json' },
  data: Buffer.from(`{"id":"${id}"}`),
});
const ID = deliveryId('hook', eventKey(event('e1').attributes));
/** A retry an hour away: only the pushes a test makes attempt the delivery. */
const LATE_RETRY = { retryOn: { statuses: ['5xx'] }, backoff: { kind: 'fixed', delaysMs: [3_600_000] }, maxAttempts: 3 };

async function setup(statuses: number[], spec: Record<string, unknown>, lose: LosingWrite) {
  const destinations = new MemoryDestinationStore();
  await destinations.put(applySpec('hook', destinationSpecSchema.parse({ url: 'https://example.com/hook', ...spec }), undefined, new Date()));
  const sent: string[] = [];
  const h = memoryDeliverDeps(destinations, {
    http: {
      send: async (req): Promise<AttemptResult> => {
        sent.push(req.headers['webhook-id']!);
        const status = statuses[Math.min(sent.length, statuses.length) - 1]!;
        return { kind: 'response', status, durationMs: 3, bodyExcerpt: '' };
      },
    },
  });
  const faults = loseRecordReplies(h.deliveries, lose);
  const counted = async (destinationId = 'hook') => {
    await h.deps.counters.flush();
    const buckets = await h.rateStore.window(destinationId, 0);
    const sum = (f: (b: (typeof buckets)[number]) => number) => buckets.reduce((n, b) => n + f(b), 0);
    return { attempts: sum((b) => b.attempts), successes: sum((b) => b.successes), failures: sum((b) => b.failures), dead: sum((b) => b.settled?.dead ?? 0) };
  };
  const created: string[] = [];
  const addToHead = h.deps.logHead.created.bind(h.deps.logHead);
  jest.spyOn(h.deps.logHead, 'created').mockImplementation((destinationId, id, publishedAt, at) => {
    created.push(id);
    addToHead(destinationId, id, publishedAt, at);
  });
  const deadLetters = () => h.bus.filter((m) => m.topic === 'herald-dead-letter');
  const warned = (pattern: RegExp) => h.logs.filter((l) => pattern.test(String(l.message)));
  return { ...h, destinations, sent, faults, counted, created, deadLetters, warned };
}

function push(id = 'e1', attributes: Record<string, string> = {}): PushDelivery {
  return {
    subscription: 'projects/herald-local/subscriptions/herald-shard-0-deliver',
    messageId: `m-${id}`,
    publishTime: new Date(),
    message: toPubSubMessage(event(id), { [LANE_ATTRIBUTES.destination]: 'hook', [LANE_ATTRIBUTES.publishedAt]: new Date(Date.now() - 1000).toISOString(), ...attributes }),
  };
}

/** What the pump does to a due record: claims it (an hour on, past the late retry), and sends the claim on the lane. */
async function claimed(deliveries: { update: (id: string, f: (c: DeliveryRecord | undefined) => DeliveryRecord | undefined) => Promise<DeliveryRecord | undefined> }, id: string): Promise<string> {
  const now = new Date(Date.now() + 3_700_000);
  const record = await deliveries.update(id, (c) => {
    const next = c && transition(c, { type: 'claim', now, claimTtlMs: 60_000 });
    return next?.ok ? next.state : undefined;
  });
  return record!.claimedAt!;
}

afterEach(() => jest.restoreAllMocks());

describe('a first attempt whose record create landed and lost its reply', () => {
  test('DELIVERED: its own record, counted once, in the log head once, no duplicate that was never sent', async () => {
    const h = await setup([204], {}, nthWrite('create'));
    expect(await deliverFromLane(h.deps, push())).toEqual({ kind: 'attempted', deliveryId: ID, decision: 'delivered', status: 'DELIVERED' });
    expect(h.faults.lost).toBe(1);
    expect(h.sent).toHaveLength(1);
    const record = await h.deliveries.get(ID);
    expect(record).toMatchObject({ status: 'DELIVERED', attempts: 1 });
    expect(record).not.toHaveProperty('duplicates');
    expect(await h.counted()).toEqual({ attempts: 1, successes: 1, failures: 0, dead: 0 });
    expect(h.created).toEqual([ID]);
    expect(h.warned(/redelivered lane message/)).toEqual([]);
    h.deps.limiter.close();
  });

  test('DEAD: counted, with its dead letter', async () => {
    const h = await setup([400], { policy: 'adobe-best-effort' }, nthWrite('create'));
    expect(await deliverFromLane(h.deps, push())).toMatchObject({ kind: 'attempted', decision: 'dead', status: 'DEAD' });
    expect(h.deadLetters()).toHaveLength(1);
    expect(await h.counted()).toEqual({ attempts: 1, successes: 0, failures: 1, dead: 1 });
    expect(h.created).toEqual([ID]);
    h.deps.limiter.close();
  });

  test('a failure to retry: counted as the failure it was', async () => {
    const h = await setup([503], { policy: LATE_RETRY }, nthWrite('create'));
    expect(await deliverFromLane(h.deps, push())).toMatchObject({ kind: 'attempted', decision: 'retry', status: 'PENDING' });
    expect(await h.counted()).toEqual({ attempts: 1, successes: 0, failures: 1, dead: 0 });
    h.deps.limiter.close();
  });

  test('410 Gone: the destination is suspended as decided', async () => {
    const h = await setup([410], {}, nthWrite('create'));
    expect(await deliverFromLane(h.deps, push())).toMatchObject({ kind: 'attempted', decision: 'suspend', status: 'QUEUED' });
    expect((await h.destinations.get('hook'))?.status).toBe('suspended');
    h.deps.limiter.close();
  });

  test('a deferral: into the log head once', async () => {
    const h = await setup([204], {}, nthWrite('create'));
    // No turn of the destination's rate soon enough: deferred, its record created without a send.
    jest.spyOn(h.deps.limiter, 'acquire').mockResolvedValue({ kind: 'defer', until: Date.now() + 60_000 });
    expect(await deliverFromLane(h.deps, push())).toMatchObject({ kind: 'deferred' });
    expect(h.faults.lost).toBe(1);
    expect(h.created).toEqual([ID]);
    h.deps.limiter.close();
  });
});

test('a first push QUEUED on a suspended destination, its create landed and lost its reply: queued, into the log head once', async () => {
  const h = await setup([204], {}, nthWrite('create'));
  const destination = (await h.destinations.get('hook'))!;
  const window = { attempts: 0, successes: 0, failures: 0, recentErrors: [] };
  await h.destinations.put(suspend(destination, { cause: 'manual', reason: 'by an operator', at: new Date(), window })!);
  expect(await deliverFromLane(h.deps, push())).toEqual({ kind: 'queued', deliveryId: ID });
  expect(h.faults.lost).toBe(1);
  expect(h.sent).toHaveLength(0);
  expect(h.created).toEqual([ID]);
  h.deps.limiter.close();
});

describe('a claimed retry whose writes landed and lost their reply', () => {
  test('its start: the attempt is made under the claim it renewed', async () => {
    const h = await setup([503, 204], { policy: LATE_RETRY }, nthWrite('update', 2));
    await deliverFromLane(h.deps, push());
    const claim = await claimed(h.deliveries, ID);
    expect(await deliverFromLane(h.deps, push('e1', { [LANE_ATTRIBUTES.claim]: claim }))).toMatchObject({ kind: 'attempted', decision: 'delivered', status: 'DELIVERED' });
    expect(h.faults.lost).toBe(1);
    expect(await h.counted()).toEqual({ attempts: 2, successes: 1, failures: 1, dead: 0 });
    h.deps.limiter.close();
  });

  test('its outcome: not "claim taken over"; counted, dead-lettered', async () => {
    const h = await setup([503, 400], { policy: 'adobe-best-effort' }, nthWrite('update', 3));
    await deliverFromLane(h.deps, push());
    const claim = await claimed(h.deliveries, ID);
    expect(await deliverFromLane(h.deps, push('e1', { [LANE_ATTRIBUTES.claim]: claim }))).toMatchObject({ kind: 'attempted', decision: 'dead', status: 'DEAD' });
    expect(h.faults.lost).toBe(1);
    expect(h.warned(/claim was taken over/)).toEqual([]);
    expect(h.deadLetters()).toHaveLength(1);
    expect(await h.counted()).toEqual({ attempts: 2, successes: 0, failures: 2, dead: 1 });
    h.deps.limiter.close();
  });
});

describe('a redelivered push whose settling update landed and lost its reply', () => {
  test('on a DELIVERED delivery: one duplicate for the one send', async () => {
    const h = await setup([204], {}, nthWrite('update'));
    await deliverFromLane(h.deps, push());
    expect(await deliverFromLane(h.deps, push())).toEqual({ kind: 'duplicate', deliveryId: ID, status: 'DELIVERED' });
    expect(h.faults.lost).toBe(1);
    expect(await h.deliveries.get(ID)).toMatchObject({ duplicates: { count: 1 } });
    h.deps.limiter.close();
  });

  test('on a waiting retry it DELIVERED: counted once as that success, no duplicate', async () => {
    const h = await setup([503, 204], { policy: LATE_RETRY }, nthWrite('update'));
    await deliverFromLane(h.deps, push());
    expect(await deliverFromLane(h.deps, push())).toEqual({ kind: 'attempted', deliveryId: ID, decision: 'delivered', status: 'DELIVERED' });
    expect(await h.deliveries.get(ID)).not.toHaveProperty('duplicates');
    expect(await h.counted()).toEqual({ attempts: 2, successes: 1, failures: 1, dead: 0 });
    h.deps.limiter.close();
  });
});

describe('a batch whose members lost the replies to their record writes', () => {
  const first = (id: string): FirstMember => ({ kind: 'first', destinationId: 'hook', event: event(id), publishedAt: new Date(Date.now() - 1000).toISOString() });
  const BATCH = { batch: { maxEvents: 10, maxWaitMs: 500 } };
  const ids = ['a', 'b', 'c'];
  const idOf = (id: string) => deliveryId('hook', eventKey(event(id).attributes));

  test('a first attempt DELIVERED: every member recorded, counted and logged once', async () => {
    const h = await setup([204], BATCH, nthWrite('create'));
    const destination = (await h.destinations.get('hook')) as Destination;
    expect(await firstBatch(h.deps, destination, ids.map(first))).toMatchObject({ outcome: 'delivered', recorded: 3 });
    expect(h.faults.lost).toBe(3);
    expect(await h.counted()).toEqual({ attempts: 3, successes: 3, failures: 0, dead: 0 });
    expect(h.created.sort()).toEqual(ids.map(idOf).sort());
    h.deps.limiter.close();
  });

  test('a first attempt DEAD: every member counted, each with its dead letter', async () => {
    const h = await setup([400], { ...BATCH, policy: 'adobe-best-effort' }, nthWrite('create'));
    const destination = (await h.destinations.get('hook')) as Destination;
    expect(await firstBatch(h.deps, destination, ids.map(first))).toMatchObject({ outcome: 'dead', recorded: 3 });
    expect(h.deadLetters()).toHaveLength(3);
    expect(await h.counted()).toEqual({ attempts: 3, successes: 0, failures: 3, dead: 3 });
    h.deps.limiter.close();
  });

  test('a claimed retry: every member recorded under its claim, counted once', async () => {
    const h = await setup([503, 204], { ...BATCH, policy: LATE_RETRY }, nthWrite('update', 3));
    const destination = (await h.destinations.get('hook')) as Destination;
    await firstBatch(h.deps, destination, ids.map(first));
    const members = await Promise.all(
      ids.map(async (id): Promise<ClaimedMember> => {
        const claim = await claimed(h.deliveries, idOf(id));
        const record = (await h.deliveries.get(idOf(id)))!;
        return { kind: 'claimed', destinationId: 'hook', event: event(id), claim, publishedAt: record.publishedAt!, batch: record.batch! };
      }),
    );
    expect(await claimedBatch(h.deps, destination, members)).toMatchObject({ outcome: 'delivered', recorded: 3 });
    expect(h.faults.lost).toBe(3);
    expect(await h.counted()).toEqual({ attempts: 6, successes: 3, failures: 3, dead: 0 });
    h.deps.limiter.close();
  });
});
