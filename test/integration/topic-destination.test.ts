import { PubSub } from '@google-cloud/pubsub';
import { CloudEvent } from 'cloudevents';
import { CliRun, runCli } from '../support/cli-harness';
import { fromPubSubMessage } from '../../shared/domain/events/cloudevents-pubsub';
import { DeliveryRecord, deliveryId } from '../../shared/domain/retry/delivery';
import { eventKey } from '../../shared/domain/events/event';
import type { ReplayView } from '../../shared/domain/replay/replay';
import type { Suspension, SuspensionNotification } from '../../shared/domain/destinations/suspension';
import { eventually } from '../support/eventually';
import { startTestStack, TestStack } from '../support/stack';
import { SubscriptionTap, TappedMessage } from '../support/subscription-tap';

/**
 * Issue 8 on the emulators: Pub/Sub-topic destinations. Events reach a topic in another
 * project in the CloudEvents Pub/Sub binding, read back from a subscription on it; a topic
 * that does not exist suspends its destination under event-platform (NOT_FOUND), with the
 * notification; a delivery that died on a missing topic is replayed once the topic exists;
 * every attempt is counted in the destination's stats.
 *
 * HERALD_TIME_SCALE=10: the custom policy's 1 s retry is 100 ms, and the rolling hour of the
 * counters 6 minutes, longer than this file runs.
 */
const RUN = Date.now().toString(36);
const PROJECT = `topicdest-${RUN}`;
/** Where the audit topic lives: any project works, the emulator serves every project id. */
const OTHER_PROJECT = `topic-other-${RUN}`;
const SOURCE = '/topic-test';
const AUDIT_TOPIC = `projects/${OTHER_PROJECT}/topics/audit`;
const MISSING = `missing-${RUN}`;
const LATE = `late-${RUN}`;
/** Two attempts, 1 s apart (scaled): a missing topic is retried like a network error, then DEAD. */
const DIE_FAST = { retryOn: { statuses: ['5xx'] }, backoff: { kind: 'fixed', delaysMs: [1000] }, maxAttempts: 2 };

let stack: TestStack;
let audit: SubscriptionTap;
let notifications: SubscriptionTap;
const taps: SubscriptionTap[] = [];

const pause = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const deliveryOf = (destination: string, id: string) => deliveryId(destination, eventKey({ source: SOURCE, id }));
const record = (destination: string, id: string) => stack.runtime.deliveries.get(deliveryOf(destination, id));
const withId = (tap: SubscriptionTap, id: string): TappedMessage[] => tap.received.filter((m) => m.attributes['ce-id'] === id);

function settled(destination: string, id: string, status: DeliveryRecord['status']): Promise<DeliveryRecord> {
  return eventually(`${destination}/${id} to be ${status}`, async () => {
    const r = await record(destination, id);
    return r?.status === status ? r : undefined;
  });
}

interface DestinationBody {
  topic?: string;
  url?: string;
  status: 'active' | 'suspended';
  suspension?: Suspension;
  stats: { attempts1h: number; successRate1h?: number; lastErrors: { error: string }[] };
}

async function destination(id: string): Promise<DestinationBody> {
  const res = await stack.admin('GET', `/destinations/${id}`);
  expect(res.status).toBe(200);
  return res.body as DestinationBody;
}

/** The destination's stats once its counters show `attempts` (they are flushed every second). */
function counted(id: string, attempts: number): Promise<DestinationBody> {
  return eventually(`${id} to count ${attempts} attempts`, async () => {
    const d = await destination(id);
    return d.stats.attempts1h >= attempts ? d : undefined;
  });
}

async function put(id: string, spec: Record<string, unknown>): Promise<void> {
  const res = await stack.admin('PUT', `/destinations/${id}`, { eventTypes: [`test.${id}`], ...spec });
  expect(res.status).toBe(201);
}

async function publish(id: string, type: string, headers: Record<string, string> = {}, data: string | Buffer = `{"n":"${id}"}`): Promise<void> {
  const res = await stack.ingest({ 'ce-id': id, 'ce-source': SOURCE, 'ce-type': type, 'ce-specversion': '1.0', 'content-type': 'application/json', ...headers }, data);
  expect(res.status).toBe(202);
}

/** A topic (and a tap on it), as the destination's owner creates it. */
async function createTopic(projectId: string, topic: string): Promise<SubscriptionTap> {
  const pubsub = new PubSub({ projectId });
  try {
    await pubsub.createTopic(topic);
  } finally {
    await pubsub.close();
  }
  const tap = await SubscriptionTap.create(projectId, `${topic}-tap`, topic);
  taps.push(tap);
  return tap;
}

async function replay(request: Record<string, unknown>): Promise<ReplayView> {
  const res = await stack.admin('POST', '/replays', request);
  expect(res.status).toBe(202);
  const id = (res.body as { id: string }).id;
  return eventually(`replay ${id} to end`, async () => {
    const r = await stack.admin('GET', `/replays/${id}`);
    const body = r.body as ReplayView;
    return r.status === 200 && ['done', 'incomplete', 'failed', 'rejected'].includes(body.status) ? body : undefined;
  }, 40_000, 200);
}

function herald(argv: string[]): Promise<CliRun> {
  return runCli(argv, { HERALD_URL: stack.url, HERALD_ADMIN_TOKEN: stack.config.adminToken, HERALD_INGEST_TOKEN: stack.config.ingestToken });
}

beforeAll(async () => {
  stack = await startTestStack(PROJECT, {
    HERALD_TIME_SCALE: '10',
    HERALD_PUMP_INTERVAL_MS: '100',
    // The operator allows the default account these projects' topics (docs/what-a-destination-receives.md#iam).
    HERALD_DEFAULT_ACCOUNT_TOPICS: `projects/${OTHER_PROJECT}/topics/*,projects/${PROJECT}/topics/*`,
  });
  notifications = new SubscriptionTap(PROJECT, `${stack.runtime.names.prefix}-notifications-outbox`);
  audit = await createTopic(OTHER_PROJECT, 'audit');
});

afterAll(async () => {
  for (const tap of [notifications, ...taps]) await tap?.close();
  const other = new PubSub({ projectId: OTHER_PROJECT });
  await other.subscription('audit-tap').delete().catch(() => undefined);
  await other.topic('audit').delete().catch(() => undefined);
  await other.close();
  await stack?.stop({ purge: true });
});

test('a topic destination in another project gets each event as a CloudEvents Pub/Sub message: attributes and data exact', async () => {
  const res = await stack.admin('PUT', '/destinations/audit', { topic: AUDIT_TOPIC, eventTypes: ['test.audit.*'] });
  expect(res.status).toBe(201);
  expect(res.body).toMatchObject({ id: 'audit', topic: AUDIT_TOPIC, status: 'active', policy: 'event-platform' });

  const json = Buffer.from('{"orderId": 42,  "note": "spaces  kept"}');
  await publish('a1', 'test.audit.created', { 'ce-subject': 'orders/42', 'ce-tenant': 'acme', 'ce-time': '2026-11-23T14:00:00.000Z' }, json);
  const bytes = Buffer.from([0xff, 0x00, 0xfe, 0x80]);
  await publish('a2', 'test.audit.blob', { 'content-type': 'application/octet-stream', 'ce-time': '2026-11-23T14:00:01.000Z' }, bytes);
  await publish('a3', 'test.other', {}, '{}'); // not subscribed

  const first = await audit.find('a1 on the audit topic', (m) => m.attributes['ce-id'] === 'a1');
  expect(first.attributes).toEqual({
    'ce-specversion': '1.0',
    'ce-id': 'a1',
    'ce-source': SOURCE,
    'ce-type': 'test.audit.created',
    'ce-time': '2026-11-23T14:00:00.000Z',
    'ce-subject': 'orders/42',
    'ce-tenant': 'acme',
    'content-type': 'application/json',
    'herald-delivery-id': deliveryOf('audit', 'a1'),
  });
  expect(first.data.equals(json)).toBe(true);

  const second = await audit.find('a2 on the audit topic', (m) => m.attributes['ce-id'] === 'a2');
  expect(second.data.equals(bytes)).toBe(true);
  // What a subscriber does: decode the binding, and hand the event to the cloudevents SDK.
  const decoded = fromPubSubMessage(second, new Date());
  if (!decoded.ok) throw new Error(`not a CloudEvent: ${JSON.stringify(decoded.issues)}`);
  const event = new CloudEvent({ ...decoded.value.attributes, data: decoded.value.data }, true);
  expect(event).toMatchObject({ id: 'a2', source: SOURCE, type: 'test.audit.blob', datacontenttype: 'application/octet-stream', time: '2026-11-23T14:00:01.000Z' });
  expect(Buffer.from(event.data as Uint8Array).equals(bytes)).toBe(true);

  await settled('audit', 'a1', 'DELIVERED');
  await settled('audit', 'a2', 'DELIVERED');
  await pause(500);
  expect(audit.received.map((m) => m.attributes['ce-id']).sort()).toEqual(['a1', 'a2']);
  expect(audit.errors).toEqual([]);

  // Counted like any attempt, shown by the admin API and the CLI.
  const shown = await counted('audit', 2);
  expect(shown.stats).toMatchObject({ attempts1h: 2, successRate1h: 1, lastErrors: [] });
  const listed = await herald(['destinations', 'list']);
  expect(listed.code).toBe(0);
  expect(listed.stdout).toMatch(new RegExp(`^audit +active +event-platform +account +test\\.audit\\.\\* +${AUDIT_TOPIC}$`, 'm'));
  const cli = await herald(['destinations', 'show', 'audit', '--json']);
  expect(cli.code).toBe(0);
  expect(JSON.parse(cli.stdout)).toMatchObject({ id: 'audit', topic: AUDIT_TOPIC, stats: { attempts1h: 2 } });

  const log = stack.logs.find((l) => l.message === 'delivered' && l.deliveryId === deliveryOf('audit', 'a1'));
  expect(log).toMatchObject({ destinationId: 'audit', eventId: 'a1', topic: AUDIT_TOPIC, topicMessageId: expect.any(String) });
});

test("Herald's own topics are refused as destinations", async () => {
  const events = `projects/${PROJECT}/topics/${stack.runtime.topology.topics.events.name}`;
  const res = await stack.admin('PUT', '/destinations/loop', { topic: events });
  expect(res.status).toBe(400);
  expect(res.body).toMatchObject({ issues: [{ path: 'topic', message: expect.stringContaining("one of Herald's own topics") }] });
  expect((await stack.admin('GET', '/destinations/loop')).status).toBe(404);
  // In any project: no spelling of Herald's project gets its topic names through.
  const elsewhere = await stack.admin('PUT', '/destinations/loop', { topic: `projects/${OTHER_PROJECT}/topics/${stack.runtime.topology.topics.events.name}` });
  expect(elsewhere.status).toBe(400);
});

test('a topic that does not exist suspends its destination under event-platform (NOT_FOUND), with the notification; reactivated once it exists', async () => {
  const topic = `projects/${PROJECT}/topics/${MISSING}`;
  await put('missing', { topic, policy: 'event-platform', technicalEmail: 'ops@example.com' });

  await publish('m1', 'test.missing');
  const queued = await settled('missing', 'm1', 'QUEUED');
  expect(queued).toMatchObject({ attempts: 1, lastError: { error: expect.stringMatching(/^Pub\/Sub publish refused \(not-found\): 5 NOT_FOUND/) } });
  const suspended = await eventually('missing to be suspended', async () => {
    const d = await destination('missing');
    return d.status === 'suspended' ? d : undefined;
  });
  expect(suspended.suspension).toMatchObject({ cause: 'criteria', reason: expect.stringContaining('the topic does not exist'), lastError: { error: expect.stringContaining('NOT_FOUND') } });

  const message = await notifications.find('the suspension notice of missing', (m) => m.attributes['herald-destination'] === 'missing');
  expect(message.attributes).toMatchObject({ 'herald-type': 'herald.destination.suspended', 'herald-to': 'ops@example.com' });
  const notice = JSON.parse(message.data.toString()) as SuspensionNotification;
  expect(notice).toMatchObject({ destinationId: 'missing', cause: 'criteria', reason: suspended.suspension!.reason, to: 'ops@example.com' });
  expect(notice.text).toContain(topic);

  // Suspended: later events wait QUEUED without an attempt.
  await publish('m2', 'test.missing');
  expect(await settled('missing', 'm2', 'QUEUED')).toMatchObject({ attempts: 0 });
  const stats = (await counted('missing', 1)).stats;
  expect(stats).toMatchObject({ attempts1h: 1, successRate1h: 0, lastErrors: [{ error: expect.stringContaining('NOT_FOUND') }] });

  // The owner creates the topic; the operator reactivates; both events arrive.
  const tap = await createTopic(PROJECT, MISSING);
  const reactivated = await stack.admin('POST', '/destinations/missing/reactivate');
  expect(reactivated).toMatchObject({ status: 200, body: { redelivered: 2 } });
  await settled('missing', 'm1', 'DELIVERED');
  await settled('missing', 'm2', 'DELIVERED');
  await eventually('m1 and m2 on the topic', () => (withId(tap, 'm1').length && withId(tap, 'm2').length ? true : undefined));
  expect((await destination('missing')).status).toBe('active');
});

test('a delivery that died on a missing topic is replayed once the topic exists, and arrives once', async () => {
  await put('late', { topic: `projects/${PROJECT}/topics/${LATE}`, policy: DIE_FAST });
  await publish('l1', 'test.late');
  const dead = await settled('late', 'l1', 'DEAD');
  expect(dead).toMatchObject({ attempts: 2, lastError: { error: expect.stringContaining('NOT_FOUND') } });
  expect(dead.reason).toMatch(/^Pub\/Sub not-found on attempt 2: custom allows 1 retry/);
  // Without suspendOnTopicRefusal, a missing topic fails the attempts; it does not suspend.
  expect((await destination('late')).status).toBe('active');
  expect((await counted('late', 2)).stats).toMatchObject({ attempts1h: 2, successRate1h: 0 });

  const tap = await createTopic(PROJECT, LATE);
  const report = await replay({ destination: 'late' });
  expect(report).toMatchObject({ status: 'done', matched: 1, redelivered: 1, skipped: 0, failed: 0 });
  const delivered = await settled('late', 'l1', 'DELIVERED');
  expect(delivered).toMatchObject({ attempts: 1, replays: [{ replayId: report.id, attempts: 2 }] });

  const message = await tap.find('l1 on the late topic', (m) => m.attributes['ce-id'] === 'l1');
  expect(message.attributes).toMatchObject({ 'ce-source': SOURCE, 'ce-type': 'test.late', 'herald-delivery-id': deliveryOf('late', 'l1') });
  expect(message.data.toString()).toBe('{"n":"l1"}');
  expect((await counted('late', 3)).stats).toMatchObject({ attempts1h: 3, successRate1h: 1 / 3 });

  // Safe to run twice: nothing is left to replay, and the topic got the event once.
  expect(await replay({ destination: 'late' })).toMatchObject({ status: 'done', matched: 0, redelivered: 0 });
  await pause(1000);
  expect(withId(tap, 'l1')).toHaveLength(1);
});
