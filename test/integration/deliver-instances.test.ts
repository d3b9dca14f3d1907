import { FirestoreCounterStore } from '../../shared/adapters/firestore/counters';
import { putDestination } from '../../shared/app/admin/destinations-admin';
import { deliverFromLane, DeliverDeps, DeliverOutcome } from '../../shared/app/delivery/deliver';
import { loadConfig } from '../../shared/config';
import { PushDelivery, toPubSubMessage } from '../../shared/domain/events/cloudevents-pubsub';
import { deliveryId } from '../../shared/domain/retry/delivery';
import { eventKey, HeraldEvent } from '../../shared/domain/events/event';
import { LANE_ATTRIBUTES } from '../../shared/domain/intake/lane-message';
import { createLogger } from '../../shared/log';
import { MessageBus } from '../../shared/ports/messaging';
import { adminApiDeps } from '../../shared/runtime/admin-deps';
import { createRuntime, Runtime } from '../../shared/runtime/runtime';
import { deliverDeps } from '../../shared/runtime/delivery-deps';
import { Receiver } from '../support/receiver';
import { testSecretsKey } from '../support/stack';

/**
 * Issue 35, items 3, 4 and 5, on the Firestore emulator with a real loopback receiver: two
 * instances (two runtimes, each with its own caches) over one project, and deliver's handler
 * driven with the lane push Pub/Sub would make, pushed again while the handler fails, as
 * Pub/Sub does.
 * - 3: an instance whose cached destination lacks an event type another instance just added
 *   delivers the event (on the old code: dead-lettered, no record);
 * - 4: a send whose record cannot be written is not sent again at each redelivery (on the old
 *   code: once per push, 6 requests for 6 pushes);
 * - 5: a push is answered while the counters' write hangs (on the old code: after it, ≥ 5 s).
 */
const PROJECT = `deliver-inst-${Date.now().toString(36)}`;
const TYPE_A = 'com.example.order.created';
const TYPE_B = 'com.example.order.shipped';

const receiver = new Receiver(() => ({ status: 204 }));
const instances: Runtime[] = [];
/** Dead letters each instance published (its bus): none is expected in these tests. */
const deadLetters: string[] = [];

function instance(): Runtime {
  const config = loadConfig({
    ...process.env,
    HERALD_PROJECT_ID: PROJECT,
    HERALD_SECRETS_KEY: testSecretsKey(PROJECT),
    HERALD_ADMIN_TOKEN: 'deliver-instances-admin-token',
    HERALD_INGEST_TOKEN: 'deliver-instances-ingest-token',
    HERALD_ALLOW_LOOPBACK: 'true',
    // Nothing here is pushed: the handler is called as a push would call it.
    HERALD_PUSH_BASE_URL: 'http://127.0.0.1:9',
    // A minute: every instance keeps what it read for the whole test, as one would for up to this long.
    HERALD_DESTINATION_CACHE_MS: '60000',
  });
  const rt = createRuntime(config, { log: createLogger({ level: 'ERROR' }) });
  instances.push(rt);
  return rt;
}

/** The instance's deliver dependencies, its dead letters noted instead of published (no topology in this project). */
function depsOf(rt: Runtime): DeliverDeps {
  const bus: MessageBus = {
    publish: async (topic, message) => {
      deadLetters.push(`${topic}: ${message.attributes?.['herald-reject-reason'] ?? JSON.stringify(message.attributes)}`);
      return 'noted';
    },
  };
  return { ...deliverDeps(rt), bus };
}

let sequence = 0;
function eventOf(type: string): HeraldEvent {
  return {
    attributes: { specversion: '1.0', id: `e${++sequence}`, source: '/deliver-instances', type, datacontenttype: 'application/json' },
    data: Buffer.from('{"orderId":42}'),
  };
}

function pushOf(destinationId: string, event: HeraldEvent): PushDelivery {
  const now = new Date();
  return {
    subscription: 'projects/herald-local/subscriptions/herald-shard-0-deliver',
    messageId: `m${sequence}`,
    publishTime: now,
    message: toPubSubMessage(event, { [LANE_ATTRIBUTES.destination]: destinationId, [LANE_ATTRIBUTES.publishedAt]: now.toISOString() }),
  };
}

/**
 * Pushes `push` to the instances in turn until one answers (acks), as Pub/Sub redelivers a
 * failed push; `before` is told each push's number first.
 */
async function pushUntilAcked(to: DeliverDeps[], push: PushDelivery, before: (push: number) => void = () => undefined): Promise<{ outcome: DeliverOutcome; pushes: number }> {
  for (let pushes = 1; pushes <= 20; pushes++) {
    before(pushes);
    const outcome = await deliverFromLane(to[(pushes - 1) % to.length]!, push).catch(() => undefined);
    if (outcome) return { outcome, pushes };
  }
  throw new Error('not acked after 20 pushes');
}

/** The instance's record writes (create, addDelivered) fail with UNAVAILABLE while `down()` says so. */
function writesFailWhile(rt: Runtime, down: () => boolean): void {
  const create = rt.deliveries.create.bind(rt.deliveries);
  const addDelivered = rt.deliveries.addDelivered.bind(rt.deliveries);
  jest.spyOn(rt.deliveries, 'create').mockImplementation(async (...args) => (down() ? Promise.reject(unavailable()) : create(...args)));
  jest.spyOn(rt.deliveries, 'addDelivered').mockImplementation(async (record) => (down() ? Promise.reject(unavailable()) : addDelivered(record)));
}

async function destination(rt: Runtime, id: string, eventTypes: string[]): Promise<void> {
  const put = await putDestination(adminApiDeps(rt), id, { url: `${receiver.url}/${id}`, eventTypes });
  expect(['ok', 'created']).toContain(put.kind);
}

/** UNAVAILABLE, as the Firestore client throws it when the service cannot take the call. */
function unavailable(): Error {
  return Object.assign(new Error('14 UNAVAILABLE: the store is down'), { code: 14 });
}

beforeAll(async () => {
  await receiver.start();
});

afterEach(() => {
  jest.restoreAllMocks();
  expect(deadLetters.splice(0)).toEqual([]);
});

afterAll(async () => {
  await Promise.all(instances.map((rt) => rt.close()));
  await receiver.stop();
});

test('item 3: an instance whose cached destination lacks a type added on another instance delivers the event, no dead letter', async () => {
  const [zero, one] = [instance(), instance()];
  await destination(zero, 'retyped', [TYPE_A]);
  // Instance 1 reads the destination (types [a]) and keeps it for HERALD_DESTINATION_CACHE_MS.
  expect(await deliverFromLane(depsOf(one), pushOf('retyped', eventOf(TYPE_A)))).toMatchObject({ kind: 'attempted', decision: 'delivered' });
  // Instance 0 subscribes it to b too; an event of type b, routed by instance 0, reaches instance 1.
  await destination(zero, 'retyped', [TYPE_A, TYPE_B]);
  const shipped = eventOf(TYPE_B);
  expect(await deliverFromLane(depsOf(one), pushOf('retyped', shipped))).toMatchObject({ kind: 'attempted', decision: 'delivered', status: 'DELIVERED' });
  expect(receiver.on('/retyped')).toHaveLength(2);
  expect(await one.deliveries.get(deliveryId('retyped', eventKey(shipped.attributes)))).toMatchObject({ status: 'DELIVERED', attempts: 1 });
  // Its cache took the store's copy: the next event of type b is delivered without a read first.
  expect((await one.directory.get('retyped'))?.eventTypes).toEqual([TYPE_A, TYPE_B]);
});

test('item 3: what the store still refuses is rejected, after one fresh read', async () => {
  const [zero, one] = [instance(), instance()];
  await destination(zero, 'narrowed', [TYPE_A]);
  const get = jest.spyOn(one.destinations, 'get');
  const outcome = await deliverFromLane({ ...depsOf(one), bus: { publish: async () => 'dead letter' } }, pushOf('narrowed', eventOf(TYPE_B)));
  expect(outcome).toEqual({ kind: 'rejected', reason: 'type-unsubscribed' });
  expect(get.mock.calls.filter(([id]) => id === 'narrowed').length).toBeLessThanOrEqual(2);
  expect(receiver.on('/narrowed')).toHaveLength(0);
});

test('item 4: a send whose record write fails on five pushes is sent once; the sixth push records it without sending', async () => {
  const rt = instance();
  await destination(rt, 'unrecorded', [TYPE_A]);
  let push = 0;
  writesFailWhile(rt, () => push <= 5);
  const event = eventOf(TYPE_A);
  const acked = await pushUntilAcked([depsOf(rt)], pushOf('unrecorded', event), (n) => (push = n));
  expect(acked).toEqual({ pushes: 6, outcome: expect.objectContaining({ kind: 'attempted', decision: 'delivered', status: 'DELIVERED' }) });
  expect(receiver.on('/unrecorded')).toHaveLength(1);
  expect(await rt.deliveries.get(deliveryId('unrecorded', eventKey(event.attributes)))).toMatchObject({ status: 'DELIVERED', attempts: 1 });
});

test('item 4: redeliveries spread over two instances are sent once per instance; a later copy on the other is settled as a duplicate', async () => {
  const [zero, one] = [instance(), instance()];
  await destination(zero, 'spread', [TYPE_A]);
  let push = 0;
  for (const rt of [zero, one]) writesFailWhile(rt, () => push <= 5);
  const event = eventOf(TYPE_A);
  const lane = pushOf('spread', event);
  const deps = [depsOf(zero), depsOf(one)];
  const acked = await pushUntilAcked(deps, lane, (n) => (push = n));
  expect(acked).toEqual({ pushes: 6, outcome: expect.objectContaining({ kind: 'attempted', status: 'DELIVERED' }) });
  // Instance 0 sent on push 1, instance 1 on push 2; the later pushes tried to record what each had sent, without a send.
  expect(receiver.on('/spread')).toHaveLength(2);
  const id = deliveryId('spread', eventKey(event.attributes));
  expect(await zero.deliveries.get(id)).toMatchObject({ status: 'DELIVERED', attempts: 1 });
  // A lost ack brings the push to instance 0 again: its own send is settled against the record as a duplicate, not made a third time.
  expect(await deliverFromLane(deps[0]!, lane)).toMatchObject({ kind: 'duplicate', status: 'DELIVERED' });
  expect(receiver.on('/spread')).toHaveLength(2);
  expect(await zero.deliveries.get(id)).toMatchObject({ status: 'DELIVERED', attempts: 1, duplicates: { count: 1 } });
});

test('item 5: a push is answered while the counters write hangs', async () => {
  const rt = instance();
  await destination(rt, 'counted', [TYPE_A]);
  const add = FirestoreCounterStore.prototype.add;
  let writes = 0;
  // The write hangs until the pushes are answered: a push that waited for it would never be (no clock to race).
  let release = (): void => undefined;
  const hanging = new Promise<void>((r) => (release = r));
  jest.spyOn(FirestoreCounterStore.prototype, 'add').mockImplementation(async function (this: FirestoreCounterStore, ...args) {
    writes++;
    await hanging;
    return add.apply(this, args);
  });
  const deps = depsOf(rt);
  expect(await deliverFromLane(deps, pushOf('counted', eventOf(TYPE_A)))).toMatchObject({ kind: 'attempted', decision: 'delivered' });
  expect(await deliverFromLane(deps, pushOf('counted', eventOf(TYPE_A)))).toMatchObject({ kind: 'attempted', decision: 'delivered' });
  // The flush was started by the first push and is still writing: one write, the second push's count waits for the next.
  expect(writes).toBe(1);
  release();
  await rt.counters.flush();
  const window = await rt.counters.window('counted');
  expect(window.attempts).toBe(2);
}, 30_000);
