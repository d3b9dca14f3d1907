import { PubSub } from '@google-cloud/pubsub';
import { HTTP } from 'cloudevents';
import { Webhook } from 'standardwebhooks';
import { DeliveryRecord, deliveryId } from '../../shared/domain/retry/delivery';
import { eventKey } from '../../shared/domain/events/event';
import { eventually } from '../support/eventually';
import { Receiver, ReceivedRequest } from '../support/receiver';
import { startTestStack, TestStack } from '../support/stack';
import { runBatcher } from '../../shared/app/delivery/batcher';
import { batcherDeps } from '../../shared/runtime/delivery-deps';
import { SubscriptionTap } from '../support/subscription-tap';

/**
 * Batched delivery end to end on the emulators (issue 37): events of a batched destination go
 * to the batch lane, the batcher gathers them and sends each batch as one signed request in the
 * CloudEvents batched content mode; every event keeps its own record with its batch's id and place.
 */
const PROJECT = `batched-test-${Date.now().toString(36)}`;
const SOURCE = '/batched-test';
const SCALE = 300;

let stack: TestStack;
let tap: SubscriptionTap;
let deadLetters: SubscriptionTap;
const secrets: Record<string, string> = {};
/** Per path: the statuses it answers, in order; the last one repeats. */
const script: Record<string, number[]> = { '/flaky': [503, 200], '/rejects': [400] };
const receiver: Receiver = new Receiver((req) => {
  const answers = script[req.path] ?? [204];
  const n = receiver.on(req.path).length;
  return { status: answers[Math.min(n, answers.length) - 1]! };
});

/** What a stock receiver does: verify with the Standard Webhooks library, parse with the CloudEvents SDK. */
function parsed(req: ReceivedRequest, secret: string) {
  new Webhook(secret).verify(req.body.toString('utf8'), { 'webhook-id': String(req.headers['webhook-id']), 'webhook-timestamp': String(req.headers['webhook-timestamp']), 'webhook-signature': String(req.headers['webhook-signature']) });
  const events = HTTP.toEvent({ headers: req.headers as Record<string, string>, body: req.body.toString('utf8') });
  return Array.isArray(events) ? events : [events];
}

async function ingestBatch(ids: string[], type: string) {
  const body = JSON.stringify(ids.map((id) => ({ specversion: '1.0', id, source: SOURCE, type, datacontenttype: 'application/json', data: { id } })));
  const res = await fetch(`${stack.url}/ingest`, { method: 'POST', headers: { authorization: `Bearer ${stack.config.ingestToken}`, 'content-type': 'application/cloudevents-batch+json' }, body });
  expect(res.status).toBe(202);
}

const record = (destination: string, id: string): Promise<DeliveryRecord | undefined> => stack.runtime.deliveries.get(deliveryId(destination, eventKey({ source: SOURCE, id })));

beforeAll(async () => {
  await receiver.start();
  // Two instances, each with its own caches; local mode runs the batcher on the first, as the schedule runs one.
  stack = await startTestStack(PROJECT, { HERALD_TIME_SCALE: String(SCALE), HERALD_PUMP_INTERVAL_MS: '100', HERALD_DEFAULT_ACCOUNT_TOPICS: `projects/${PROJECT}/topics/batched-audit` }, { instances: 2 });
  for (const [id, batch, policy] of [
    ['orders', { maxEvents: 10, maxWaitMs: 400 }, 'event-platform'],
    ['flaky', { maxEvents: 5, maxWaitMs: 300 }, 'adobe-best-effort'],
    ['rejects', { maxEvents: 3, maxWaitMs: 200 }, 'adobe-best-effort'],
  ] as const) {
    const res = await stack.admin('PUT', `/destinations/${id}`, { url: `${receiver.url}/${id}`, eventTypes: [`test.${id}`], policy, batch });
    expect(res.status).toBe(201);
    secrets[id] = (res.body as { secret: string }).secret;
  }
  const pubsub = new PubSub({ projectId: PROJECT });
  await pubsub.createTopic('batched-audit').finally(() => pubsub.close());
  tap = await SubscriptionTap.create(PROJECT, 'batched-audit-tap', 'batched-audit');
  deadLetters = new SubscriptionTap(PROJECT, `${stack.runtime.names.prefix}-dead-letter-hold`);
  const res = await stack.admin('PUT', '/destinations/audit', { topic: `projects/${PROJECT}/topics/batched-audit`, eventTypes: ['test.audit'], batch: { maxEvents: 4, maxWaitMs: 300 } });
  expect(res.status).toBe(201);
}, 60_000);

afterAll(async () => {
  await tap?.close();
  await deadLetters?.close();
  await stack?.stop({ purge: true });
  await receiver.stop();
});

test('25 events leave as batches of 10, 10 and 5, each verified and parsed by the stock libraries; each event recorded with its place', async () => {
  const ids = Array.from({ length: 25 }, (_, i) => `o-${i}`);
  await ingestBatch(ids, 'test.orders');
  await eventually('every event at the receiver', async () => {
    const seen = receiver.on('/orders').flatMap((r) => parsed(r, secrets.orders!).map((e) => e.id));
    return seen.length >= 25 ? seen : undefined;
  });
  const requests = receiver.on('/orders');
  expect(requests.map((r) => r.headers['content-type'])).toEqual(requests.map(() => 'application/cloudevents-batch+json'));
  const received = requests.flatMap((r) => parsed(r, secrets.orders!));
  expect(received.map((e) => e.id).sort()).toEqual([...ids].sort());
  expect(received[0]!.data).toEqual({ id: received[0]!.id });
  // Ingested together: full batches first, the rest once it has waited maxWaitMs.
  expect(requests.map((r) => parsed(r, secrets.orders!).length).sort((a, b) => b - a)).toEqual([10, 10, 5]);
  const webhookIds = new Set(requests.map((r) => r.headers['webhook-id']));
  expect(webhookIds.size).toBe(3);
  const records = await eventually('every record DELIVERED', async () => {
    const all = await Promise.all(ids.map((id) => record('orders', id)));
    return all.every((r) => r?.status === 'DELIVERED') ? (all as DeliveryRecord[]) : undefined;
  });
  for (const r of records) {
    expect(r.batch).toBeDefined();
    expect(webhookIds.has(`msg_${r.batch!.id}`)).toBe(true);
    expect(r.batch!.position).toBeLessThan(r.batch!.size);
  }
});

test('a failed batch is retried as a unit under the destination policy: the same events, the same webhook-id', async () => {
  const ids = Array.from({ length: 5 }, (_, i) => `f-${i}`);
  await ingestBatch(ids, 'test.flaky');
  const records = await eventually('every record DELIVERED', async () => {
    const all = await Promise.all(ids.map((id) => record('flaky', id)));
    return all.every((r) => r?.status === 'DELIVERED') ? (all as DeliveryRecord[]) : undefined;
  }, 30_000);
  const requests = receiver.on('/flaky');
  expect(requests).toHaveLength(2);
  expect(requests[0]!.headers['webhook-id']).toBe(requests[1]!.headers['webhook-id']);
  expect(parsed(requests[1]!, secrets.flaky!).map((e) => e.id)).toEqual(parsed(requests[0]!, secrets.flaky!).map((e) => e.id));
  expect(records.every((r) => r.attempts === 2)).toBe(true);
}, 60_000);

test('a batched topic destination gets each event of a batch as its own message, in the CloudEvents Pub/Sub binding', async () => {
  const ids = Array.from({ length: 6 }, (_, i) => `a-${i}`);
  await ingestBatch(ids, 'test.audit');
  const got = await eventually('every event on the topic', () => {
    const seen = tap.received.map((m) => m.attributes['ce-id']!);
    return ids.every((id) => seen.includes(id)) ? tap.received : undefined;
  });
  expect(got.map((m) => m.attributes['ce-id']).sort()).toEqual([...ids].sort());
  expect(JSON.parse(got[0]!.data.toString('utf8'))).toEqual({ id: got[0]!.attributes['ce-id'] });
  // Recorded a moment after the publish (a batch's outcomes wait BATCH_OUTCOME_LINGER_MS for others to share their write).
  const records = await eventually('every record DELIVERED', async () => {
    const all = await Promise.all(ids.map((id) => record('audit', id)));
    return all.every((r) => r?.status === 'DELIVERED') ? all : undefined;
  });
  expect(new Set(records.map((r) => r?.batch?.id)).size).toBe(2);
  expect(records.map((r) => r?.batch?.size).sort()).toEqual([2, 2, 4, 4, 4, 4]);
});

test('a second batcher pulling beside the first (two scheduled runs overlapping) splits batches, never events: each once, no batch over maxEvents', async () => {
  const second = runBatcher(batcherDeps(stack.runtimes[1]!));
  try {
    const before = receiver.on('/orders').length;
    const ids = Array.from({ length: 60 }, (_, i) => `two-${i}`);
    // In posts of 5, apart: both batchers' pulls find messages.
    for (let i = 0; i < ids.length; i += 5) {
      await ingestBatch(ids.slice(i, i + 5), 'test.orders');
      await new Promise((r) => setTimeout(r, 100));
    }
    const requests = await eventually('every event at the receiver', () => {
      const mine = receiver.on('/orders').slice(before);
      const seen = mine.flatMap((r) => parsed(r, secrets.orders!).map((e) => e.id));
      return ids.every((id) => seen.includes(id)) ? mine : undefined;
    });
    const received = requests.flatMap((r) => parsed(r, secrets.orders!).map((e) => e.id));
    expect(received.sort()).toEqual([...ids].sort());
    expect(Math.max(...requests.map((r) => parsed(r, secrets.orders!).length))).toBeLessThanOrEqual(10);
  } finally {
    await second.stop();
  }
  expect((await second.done).pulled).toBeGreaterThan(0);
});

test('a batch that ends DEAD dead-letters every event of it, each on its own', async () => {
  const ids = ['r-0', 'r-1', 'r-2'];
  await ingestBatch(ids, 'test.rejects');
  for (const id of ids) await deadLetters.find(`the dead letter of ${id}`, (d) => d.attributes['ce-id'] === id);
  const records = await Promise.all(ids.map((id) => record('rejects', id)));
  expect(records.map((r) => r?.status)).toEqual(['DEAD', 'DEAD', 'DEAD']);
  expect(new Set(records.map((r) => r?.batch?.id)).size).toBe(1);
  expect(receiver.on('/rejects')).toHaveLength(1);
});

test('with a batcher running, publishing batch events wakes none; a wake-up pushed to the pump starts a run at once', async () => {
  // The in-process batcher pulls for good, and keeps its lease: every test above published onto the batch lane without a wake-up.
  expect((await stack.runtime.batcherLease.aliveUntil())!.getTime()).toBeGreaterThan(Date.now());
  expect(stack.logs.filter((l) => l.message === 'no batcher was running: a pump run woken to start one')).toEqual([]);
  // What ingest publishes when no batcher holds the lease: Pub/Sub pushes it to the pump, which runs (and says who woke it).
  const pubsub = new PubSub({ projectId: PROJECT });
  const id = await pubsub.topic(stack.runtime.topology.topics.batchWake.name).publishMessage({ data: Buffer.alloc(0), attributes: { 'herald-wake': 'batcher' } });
  await pubsub.close();
  const run = await eventually('the woken pump run', async () => stack.logs.find((l) => l.message === 'retry pump run finished' && l.wokenBy === id), 30_000);
  expect(run).toMatchObject({ severity: 'INFO', hold: false });
}, 60_000);
