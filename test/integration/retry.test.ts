import { PubSub } from '@google-cloud/pubsub';
import { toPubSubMessage } from '../../shared/domain/events/cloudevents-pubsub';
import { DeliveryRecord, deliveryId } from '../../shared/domain/retry/delivery';
import { eventKey } from '../../shared/domain/events/event';
import { sharedLaneFor } from '../../shared/topology';
import { SubscriptionTap } from '../support/subscription-tap';
import { eventually } from '../support/eventually';
import { Receiver, ReceivedRequest } from '../support/receiver';
import { startTestStack, TestStack } from '../support/stack';

/**
 * Herald's own retry schedule on the emulators, sped up by HERALD_TIME_SCALE: event-platform's
 * 5 / 10 / 20 min become 1 / 2 / 4 s, adobe-best-effort's 15 / 30 s become 50 / 100 ms.
 */
// A project of its own each run: a rerun on long-lived emulators (PUBSUB_/FIRESTORE_EMULATOR_HOST set) starts clean.
const PROJECT = `retry-test-${Date.now().toString(36)}`;
const SCALE = 300;
const SOURCE = '/retry-test';

let stack: TestStack;
let deadLetters: SubscriptionTap;
/** Per destination path: the statuses it answers, in order; the last one repeats. */
const script: Record<string, number[]> = {
  '/flaky': [503, 503, 200],
  '/down': [503],
  '/rejects': [400],
};
const receiver: Receiver = new Receiver((req) => {
  const answers = script[req.path] ?? [204];
  const n = receiver.on(req.path).length;
  return { status: answers[Math.min(n, answers.length) - 1]! };
});

async function publish(id: string, type: string, data = `{"n":"${id}"}`) {
  const res = await stack.ingest({ 'ce-id': id, 'ce-source': SOURCE, 'ce-type': type, 'ce-specversion': '1.0', 'content-type': 'application/json' }, data);
  expect(res.status).toBe(202);
}

function record(destination: string, id: string): Promise<DeliveryRecord | undefined> {
  return stack.runtime.deliveries.get(deliveryId(destination, eventKey({ source: SOURCE, id })));
}

function settled(destination: string, id: string, status: DeliveryRecord['status']): Promise<DeliveryRecord> {
  return eventually(`${destination}/${id} to be ${status}`, async () => {
    const r = await record(destination, id);
    return r?.status === status ? r : undefined;
  });
}

const attemptsOf = (path: string, id: string): ReceivedRequest[] => receiver.on(path).filter((r) => r.headers['ce-id'] === id);
const gaps = (reqs: ReceivedRequest[]) => reqs.slice(1).map((r, i) => r.at - reqs[i]!.at);
const pause = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

beforeAll(async () => {
  await receiver.start();
  stack = await startTestStack(PROJECT, { HERALD_TIME_SCALE: String(SCALE), HERALD_PUMP_INTERVAL_MS: '100' });
  deadLetters = new SubscriptionTap(PROJECT, `${stack.runtime.names.prefix}-dead-letter-hold`);
  for (const [id, policy] of [
    ['flaky', 'event-platform'],
    ['down', 'adobe-best-effort'],
    ['rejects', 'adobe-best-effort'],
  ] as const) {
    const res = await stack.admin('PUT', `/destinations/${id}`, { url: `${receiver.url}/${id}`, eventTypes: [`test.${id}`], policy });
    expect(res.status).toBe(201);
  }
});

afterAll(async () => {
  await deadLetters?.close();
  await stack?.stop({ purge: true });
  await receiver.stop();
});

test('a receiver that fails twice then succeeds gets exactly three attempts, spaced as event-platform says', async () => {
  await publish('flaky-1', 'test.flaky');
  const delivered = await settled('flaky', 'flaky-1', 'DELIVERED');
  const attempts = attemptsOf('/flaky', 'flaky-1');
  expect(attempts).toHaveLength(3);
  // 5 min and 10 min after the previous attempt, divided by 300: never early, at most a pump round and a push late.
  const [first, second] = gaps(attempts);
  expect(first).toBeGreaterThanOrEqual(1000 - 50);
  expect(first).toBeLessThan(1000 + 1500);
  expect(second).toBeGreaterThanOrEqual(2000 - 50);
  expect(second).toBeLessThan(2000 + 1500);
  // The same event keeps its webhook-id on every attempt, so receivers can deduplicate.
  expect(new Set(attempts.map((r) => r.headers['webhook-id'])).size).toBe(1);
  expect(delivered).toMatchObject({ attempts: 3, lastError: { status: 503, error: 'HTTP 503' } });
  expect(delivered.deliveredAt).toEqual(expect.any(String));
  // Not kept once delivered: the event's bytes leave the store.
  expect(delivered.event).toBeUndefined();
  await pause(1500);
  expect(attemptsOf('/flaky', 'flaky-1')).toHaveLength(3);
});

test('a receiver that always fails ends DEAD, on the dead-letter topic with the attributes that explain it', async () => {
  const data = '{"order": 17, "note": "kept  exactly"}';
  await publish('down-1', 'test.down', data);
  const dead = await settled('down', 'down-1', 'DEAD');
  expect(dead).toMatchObject({ attempts: 3, lastError: { status: 503 } });
  expect(dead.reason).toMatch(/allows 2 retries/);
  const attempts = attemptsOf('/down', 'down-1');
  expect(attempts).toHaveLength(3);
  const [first, second] = gaps(attempts);
  expect(first).toBeGreaterThanOrEqual(50 - 20);
  expect(second).toBeGreaterThanOrEqual(100 - 20);

  const letter = await deadLetters.find('the dead letter of down-1', (d) => d.attributes['ce-id'] === 'down-1');
  expect(letter.data.toString()).toBe(data);
  expect(letter.attributes).toMatchObject({
    'ce-source': SOURCE,
    'ce-type': 'test.down',
    'herald-destination': 'down',
    'herald-attempts': '3',
    'herald-last-error': 'HTTP 503',
    'herald-last-status': '503',
    'herald-reason': dead.reason,
    'herald-first-attempt-at': dead.firstAttemptAt,
    'herald-last-attempt-at': dead.lastAttemptAt,
  });
  // Never retried automatically.
  await pause(1000);
  expect(attemptsOf('/down', 'down-1')).toHaveLength(3);
});

test('a 400 under adobe-best-effort is dead at once', async () => {
  await publish('rejects-1', 'test.rejects');
  const dead = await settled('rejects', 'rejects-1', 'DEAD');
  expect(dead).toMatchObject({ attempts: 1, lastError: { status: 400 } });
  expect(dead.reason).toBe('HTTP 400 is not retried under adobe-best-effort');
  const letter = await deadLetters.find('the dead letter of rejects-1', (d) => d.attributes['ce-id'] === 'rejects-1');
  expect(letter.attributes['herald-attempts']).toBe('1');
  expect(attemptsOf('/rejects', 'rejects-1')).toHaveLength(1);
});

/** What a Pub/Sub redelivery of a first push looks like to `deliver`: the same lane message again (the emulator sends no deliveryAttempt). */
async function pushAgain(destination: string, id: string, type: string): Promise<void> {
  const pubsub = new PubSub({ projectId: PROJECT });
  const again = toPubSubMessage(
    { attributes: { id, source: SOURCE, type, specversion: '1.0', datacontenttype: 'application/json' }, data: Buffer.from(`{"n":"${id}"}`) },
    { destination },
  );
  await pubsub.topic(sharedLaneFor(destination, 'first', stack.runtime.names)).publishMessage(again);
  await pubsub.close();
}

async function attemptsCounted(destination: string): Promise<{ attempts: number; successes: number; failures: number }> {
  await stack.runtime.counters.flush();
  const res = await stack.admin('GET', `/stats?window=1h&destination=${destination}&counts=false`);
  expect(res.status).toBe(200);
  const series = (res.body as { series: { attempts: number; successes: number; failures: number }[] }).series;
  return series.reduce((sum, p) => ({ attempts: sum.attempts + p.attempts, successes: sum.successes + p.successes, failures: sum.failures + p.failures }), { attempts: 0, successes: 0, failures: 0 });
}

test('a lane message Pub/Sub brings again after its success was recorded is sent again, recorded as a duplicate, each send counted', async () => {
  const put = await stack.admin('PUT', '/destinations/dup', { url: `${receiver.url}/dup`, eventTypes: ['test.dup'] });
  expect(put.status).toBe(201);
  await publish('dup-1', 'test.dup');
  await settled('dup', 'dup-1', 'DELIVERED');
  await pushAgain('dup', 'dup-1', 'test.dup');
  const recorded = await eventually('the duplicate to be recorded', async () => {
    const r = await record('dup', 'dup-1');
    return r?.duplicates ? r : undefined;
  });
  // At least once: the receiver got it twice, under one webhook-id.
  const got = attemptsOf('/dup', 'dup-1');
  expect(got).toHaveLength(2);
  expect(got[1]!.headers['webhook-id']).toBe(got[0]!.headers['webhook-id']);
  expect(recorded).toMatchObject({ status: 'DELIVERED', attempts: 1, duplicates: { count: 1 } });
  // The stats count what the receiver answered: two requests, two 2xx.
  expect(await attemptsCounted('dup')).toEqual({ attempts: 2, successes: 2, failures: 0 });
  // The duplicate was acked (204): the emulator, which pushes an unacked message again about every second, brings it no more.
  await pause(2000);
  expect(attemptsOf('/dup', 'dup-1')).toHaveLength(2);
  expect(await record('dup', 'dup-1')).toMatchObject({ duplicates: { count: 1 } });
});

test('a lane message Pub/Sub brings again after a failed first attempt delivers the PENDING retry', async () => {
  // A retry 6 h away (72 s at this time scale): only the redelivered push can deliver it within the test.
  const policy = { retryOn: { statuses: ['5xx'] }, backoff: { kind: 'fixed', delaysMs: [6 * 3_600_000] }, maxAttempts: 3 };
  script['/late'] = [503, 204];
  const put = await stack.admin('PUT', '/destinations/late', { url: `${receiver.url}/late`, eventTypes: ['test.late'], policy });
  expect(put.status).toBe(201);
  await publish('late-1', 'test.late');
  const pending = await settled('late', 'late-1', 'PENDING');
  expect(pending.attempts).toBe(1);
  await pushAgain('late', 'late-1', 'test.late');
  const delivered = await settled('late', 'late-1', 'DELIVERED');
  expect(delivered).toMatchObject({ attempts: 2 });
  expect(delivered).not.toHaveProperty('availableAt');
  expect(attemptsOf('/late', 'late-1')).toHaveLength(2);
  expect(await attemptsCounted('late')).toEqual({ attempts: 2, successes: 1, failures: 1 });
});
