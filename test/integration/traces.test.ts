import { InMemorySpanExporter, ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { DeliveryRecord, deliveryId } from '../../shared/domain/retry/delivery';
import { eventKey } from '../../shared/domain/events/event';
import { createTracing } from '../../shared/runtime/tracing';
import { Tracing } from '../../shared/ports/tracing';
import { useTracing } from '../../shared/tracing';
import { SPANS } from '../../shared/telemetry-catalogue';
import { PubSub } from '@google-cloud/pubsub';
import { eventually } from '../support/eventually';
import { SubscriptionTap } from '../support/subscription-tap';
import { Receiver } from '../support/receiver';
import { startTestStack, TestStack } from '../support/stack';

/**
 * Traces on the emulators with a real loopback receiver: every span Herald ends is kept in
 * memory (sampled whole: ratio 1), and what the receiver got is compared with them. Retries are
 * sped up by HERALD_TIME_SCALE as in retry.test.ts.
 */
const PROJECT = `traces-test-${Date.now().toString(36)}`;
const SOURCE = '/traces-test';
const SCALE = 300;
/** A topic destination's topic, in a project of its own (the emulator serves any). */
const TOPIC_PROJECT = `traces-topic-${Date.now().toString(36)}`;

const exporter = new InMemorySpanExporter();
let tracing: Tracing;
let previous: Tracing;
let stack: TestStack;
let topicTap: SubscriptionTap | undefined;
/** Per path: the statuses answered in order; the last repeats. */
const script: Record<string, number[]> = { '/ok': [204], '/flaky': [503, 200] };
const receiver: Receiver = new Receiver((req) => {
  const answers = script[req.path] ?? [204];
  return { status: answers[Math.min(receiver.on(req.path).length, answers.length) - 1]! };
});

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/;
const traceIdOf = (traceparent: unknown) => TRACEPARENT.exec(String(traceparent))?.[1];
const spans = (traceId: string): ReadableSpan[] => exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
const named = (traceId: string, name: string) => spans(traceId).filter((s) => s.name === name);

async function publish(id: string, type: string, headers: Record<string, string> = {}): Promise<void> {
  const res = await stack.ingest({ 'ce-id': id, 'ce-source': SOURCE, 'ce-type': type, 'ce-specversion': '1.0', 'content-type': 'application/json', ...headers }, `{"id":"${id}"}`);
  expect(res).toMatchObject({ status: 202 });
}

function settled(destination: string, id: string, status: DeliveryRecord['status']): Promise<DeliveryRecord> {
  return eventually(`${destination}/${id} to be ${status}`, async () => {
    const r = await stack.runtime.deliveries.get(deliveryId(destination, eventKey({ source: SOURCE, id })));
    return r?.status === status ? r : undefined;
  });
}

const received = (path: string, id: string) => receiver.on(path).filter((r) => r.headers['ce-id'] === id);

beforeAll(async () => {
  await receiver.start();
  tracing = createTracing({ telemetry: 'on', traceSampleRatio: 1, projectId: PROJECT, topicPrefix: 'herald' }, { local: true }, {}, [new SimpleSpanProcessor(exporter)]);
  previous = useTracing(tracing);
  stack = await startTestStack(PROJECT, { HERALD_TIME_SCALE: String(SCALE), HERALD_PUMP_INTERVAL_MS: '100', HERALD_DEFAULT_ACCOUNT_TOPICS: `projects/${TOPIC_PROJECT}/topics/*` });
  for (const [id, policy] of [
    ['ok', 'event-platform'],
    ['flaky', 'event-platform'],
  ] as const) {
    const res = await stack.admin('PUT', `/destinations/${id}`, { url: `${receiver.url}/${id}`, eventTypes: [`test.${id}`], policy });
    expect(res.status).toBe(201);
  }
});

afterAll(async () => {
  await topicTap?.close();
  const other = new PubSub({ projectId: TOPIC_PROJECT });
  await other.subscription('traced-tap').delete().catch(() => undefined);
  await other.topic('traced').delete().catch(() => undefined);
  await other.close();
  await stack?.stop({ purge: true });
  await receiver.stop();
  useTracing(previous);
  await tracing?.shutdown();
});

test('a published event is one trace: ingest → lane publish → attempt → send, whose context the receiver gets', async () => {
  await publish('one', 'test.ok');
  const record = await settled('ok', 'one', 'DELIVERED');
  const [request] = received('/ok', 'one');
  const traceId = traceIdOf(request!.headers.traceparent)!;
  expect(traceId).toBeDefined();
  // The event itself carries the ingest span's context (ce-traceparent), so a later attempt joins it too.
  expect(traceIdOf(request!.headers['ce-traceparent'])).toBe(traceId);
  const attempt = await eventually('the attempt span', () => named(traceId, SPANS.attempt)[0]);
  const [ingest] = named(traceId, SPANS.ingest);
  const [lane] = named(traceId, SPANS.lanePublish);
  const [send] = named(traceId, SPANS.send);
  expect(ingest!.parentSpanContext).toBeUndefined();
  expect(lane!.parentSpanContext?.spanId).toBe(ingest!.spanContext().spanId);
  expect(attempt.parentSpanContext?.spanId).toBe(ingest!.spanContext().spanId);
  expect(send!.parentSpanContext?.spanId).toBe(attempt.spanContext().spanId);
  // The receiver's request is the send span's child.
  expect(TRACEPARENT.exec(String(request!.headers.traceparent))![2]).toBe(send!.spanContext().spanId);
  expect(send!.attributes).toMatchObject({ 'http.response.status_code': 204, 'server.address': '127.0.0.1' });
  expect(attempt.attributes).toMatchObject({ 'cloudevents.event_id': 'one', 'herald.decision': 'delivered' });
  // The record's attempt detail names the trace.
  expect(record.attemptLog?.[0]?.traceId).toBe(traceId);
});

test("a producer's traceparent header is continued: same trace, the ingest span its child", async () => {
  const producer = { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7' };
  await publish('continued', 'test.ok', { traceparent: `00-${producer.traceId}-${producer.spanId}-01` });
  await settled('ok', 'continued', 'DELIVERED');
  expect(traceIdOf(received('/ok', 'continued')[0]!.headers.traceparent)).toBe(producer.traceId);
  const ingest = await eventually('the ingest span', () => named(producer.traceId, SPANS.ingest)[0]);
  expect(ingest.parentSpanContext?.spanId).toBe(producer.spanId);
});

test("an event's own ce-traceparent wins over the request's header, and is kept as it was", async () => {
  const own = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
  await publish('own', 'test.ok', { 'ce-traceparent': own, traceparent: '00-11111111111111111111111111111111-2222222222222222-01' });
  await settled('ok', 'own', 'DELIVERED');
  const [request] = received('/ok', 'own');
  expect(request!.headers['ce-traceparent']).toBe(own);
  expect(traceIdOf(request!.headers.traceparent)).toBe('0af7651916cd43dd8448eb211c80319c');
  const ingest = await eventually('the ingest span', () => named('0af7651916cd43dd8448eb211c80319c', SPANS.ingest)[0]);
  expect(ingest.parentSpanContext?.spanId).toBe('b7ad6b7169203331');
});

test('a malformed traceparent extension is refused, naming it', async () => {
  const res = await stack.ingest({ 'ce-id': 'bad', 'ce-source': SOURCE, 'ce-type': 'test.ok', 'ce-specversion': '1.0', 'ce-traceparent': '00-xyz-1-01' }, '{}');
  expect(res.status).toBe(400);
  expect(res.body).toMatchObject({ issues: [{ path: 'ce-traceparent', message: expect.stringMatching(/W3C traceparent/) }] });
});

test('a retry, sent by the pump after a failure, joins the same trace; the failure is on it', async () => {
  await publish('retried', 'test.flaky');
  await settled('flaky', 'retried', 'DELIVERED');
  const requests = received('/flaky', 'retried');
  expect(requests).toHaveLength(2);
  const [first, second] = requests.map((r) => traceIdOf(r.headers.traceparent));
  expect(second).toBe(first);
  const traceId = first!;
  const attempts = await eventually('two attempt spans', () => (named(traceId, SPANS.attempt).length === 2 ? named(traceId, SPANS.attempt) : undefined));
  expect(attempts.map((a) => a.status.code)).toEqual([2, 0]); // ERROR, then UNSET
  const claim = named(traceId, SPANS.pumpClaim)[0]!;
  expect(claim).toBeDefined();
  // The retry's lane publish is in the event's trace, after the claim: a round's claimed retries of
  // one destination go to its lane together once every claim is made (app/retry/pump.ts), so a
  // lone one takes its parent from the event's trace context, not from one claim's span.
  const notBefore = (a: [number, number], b: [number, number]) => a[0] > b[0] || (a[0] === b[0] && a[1] >= b[1]);
  expect(named(traceId, SPANS.lanePublish).some((l) => notBefore(l.startTime, claim.startTime))).toBe(true);
  const failedSend = named(traceId, SPANS.send).find((s) => s.attributes['http.response.status_code'] === 503)!;
  expect(failedSend.events.map((e) => e.name)).toContain('herald.send.failed');
});

test("log lines written during an attempt carry Cloud Logging's trace fields", async () => {
  await publish('logged', 'test.ok');
  await settled('ok', 'logged', 'DELIVERED');
  const traceId = traceIdOf(received('/ok', 'logged')[0]!.headers.traceparent)!;
  const attempt = await eventually('the attempt span', () => named(traceId, SPANS.attempt)[0]);
  const line = await eventually('the attempt log line', () => stack.logs.find((l) => l.eventId === 'logged' && l['logging.googleapis.com/spanId'] === attempt.spanContext().spanId));
  expect(line).toMatchObject({ 'logging.googleapis.com/trace': `projects/${PROJECT}/traces/${traceId}`, 'logging.googleapis.com/trace_sampled': true });
});

test("a topic destination's message carries the send span's context as its traceparent attribute", async () => {
  const pubsub = new PubSub({ projectId: TOPIC_PROJECT });
  await pubsub.createTopic('traced').finally(() => pubsub.close());
  topicTap = await SubscriptionTap.create(TOPIC_PROJECT, 'traced-tap', 'traced');
  const res = await stack.admin('PUT', '/destinations/to-topic', { topic: `projects/${TOPIC_PROJECT}/topics/traced`, eventTypes: ['test.topic'] });
  expect(res.status).toBe(201);
  await publish('topical', 'test.topic');
  const message = await topicTap.find('the message of topical', (m) => m.attributes['ce-id'] === 'topical');
  const traceId = traceIdOf(message.attributes['ce-traceparent'])!;
  expect(traceIdOf(message.attributes.traceparent)).toBe(traceId);
  const send = await eventually('the send span', () => named(traceId, SPANS.send)[0]);
  expect(message.attributes.traceparent).toBe(`00-${traceId}-${send.spanContext().spanId}-01`);
  expect(send.attributes).toMatchObject({ 'messaging.system': 'gcp_pubsub', 'messaging.destination.name': `projects/${TOPIC_PROJECT}/topics/traced` });
});

test("a batch's attempt is a span of its own, linked to each member's trace; its request carries its traceparent", async () => {
  const res = await stack.admin('PUT', '/destinations/batched', { url: `${receiver.url}/batched`, eventTypes: ['test.batched'], batch: { maxEvents: 2, maxWaitMs: 300 } });
  expect(res.status).toBe(201);
  await publish('b1', 'test.batched');
  await publish('b2', 'test.batched');
  await settled('batched', 'b1', 'DELIVERED');
  await settled('batched', 'b2', 'DELIVERED');
  const [request] = receiver.on('/batched');
  const members = JSON.parse(request!.body.toString()) as { id: string; traceparent?: string }[];
  // Each member keeps its own trace context inside the batch.
  const memberTraces = members.map((m) => traceIdOf(m.traceparent));
  expect(memberTraces.every((t) => t !== undefined)).toBe(true);
  const batchTrace = traceIdOf(request!.headers.traceparent)!;
  const batchSpan = await eventually('the batch span', () => named(batchTrace, SPANS.attempt)[0]);
  expect(batchSpan.attributes['herald.batch.id']).toEqual(expect.any(String));
  expect(batchSpan.links.map((l) => l.context.traceId).sort()).toEqual([...memberTraces].sort());
});
