import { startTestStack, TestStack } from '../support/stack';
import { SubscriptionTap } from '../support/subscription-tap';
import { Receiver } from '../support/receiver';
import { eventually } from '../support/eventually';
import { catalogueNow } from '../support/event-types';
import { patient } from '../support/patience';

/**
 * A lone UTF-16 surrogate (`"\ud800"`: valid JSON, but no UTF-8 text can carry it) on every
 * surface of a real local stack: refused at the edge with a 400 naming the field, at once,
 * never a 500 from Firestore or Pub/Sub failing the write (which took 8 s of retries first);
 * an event pushed to /route with one goes to the dead-letter topic, not into a retry loop.
 */

const PROJECT = `surrogates-${Date.now().toString(36)}`;
/** At once, not after Firestore's or Pub/Sub's retries (8 s): 2 s, more on a loaded machine (test/support/patience.ts). */
const FAST_MS = patient(2_000);
const SINK_TYPE = 'com.example.surrogates';

let stack: TestStack;
const sink = new Receiver();
let deadLetters: SubscriptionTap | undefined;

type Reply = { status: number; ms: number; contentType: string | null; body: unknown };

/** The body as bytes exactly as written: JSON.stringify would keep `\ud800` as an escape too, but a template says it plainly. */
async function call(method: string, path: string, headers: Record<string, string>, body?: string): Promise<Reply> {
  const started = Date.now();
  const res = await fetch(`${stack.url}${path}`, { method, headers, ...(body !== undefined ? { body } : {}) });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    /* the assertions say what was wrong */
  }
  return { status: res.status, ms: Date.now() - started, contentType: res.headers.get('content-type'), body: parsed };
}

const admin = (method: string, path: string, body?: string) =>
  call(method, `/admin${path}`, { authorization: `Bearer ${stack.config.adminToken}`, 'content-type': 'application/json' }, body);
const ingest = (headers: Record<string, string>, body: string) => call('POST', '/ingest', { authorization: `Bearer ${stack.config.ingestToken}`, ...headers }, body);

/** 400 at once, an issue at the field's path, and `error` naming it too (ingest's counts the problems instead, as it always has). */
function expectRefused(reply: Reply, path: string, error: RegExp | string = path): void {
  expect({ status: reply.status, contentType: reply.contentType }).toEqual({ status: 400, contentType: expect.stringMatching(/^application\/json/) as string });
  expect(reply.body).toEqual(
    expect.objectContaining({
      error: typeof error === 'string' ? (expect.stringContaining(error) as string) : (expect.stringMatching(error) as string),
      issues: expect.arrayContaining([{ path, message: expect.stringMatching(/lone UTF-16 surrogate/) as string }]) as unknown,
    }),
  );
  expect(reply.ms).toBeLessThan(FAST_MS);
}

beforeAll(async () => {
  await sink.start();
  stack = await startTestStack(PROJECT);
  const account = await admin('POST', '/accounts', JSON.stringify({ id: 'acme', name: 'Acme' }));
  expect(account.status).toBe(201);
  const destination = await admin('PUT', '/destinations/surrogates', JSON.stringify({ url: `${sink.url}/hook`, eventTypes: [SINK_TYPE] }));
  expect(destination.status).toBe(201);
});

afterAll(async () => {
  await deadLetters?.close();
  await stack?.stop({ purge: true });
  await sink.stop();
});

describe('the admin API: 400 naming the field, at once (was 500, after 8 s for a PUT or PATCH)', () => {
  test.each<[string, string, string, string]>([
    ['POST /accounts, name', 'POST', '/accounts', '{"name":"\\ud800"}'],
    ['POST /accounts/{id}/keys, name', 'POST', '/accounts/acme/keys', '{"name":"ci\\udfff"}'],
    ['PATCH /accounts/{id}, name', 'PATCH', '/accounts/acme', '{"name":"\\ud83d"}'],
    ['PUT /destinations/{id}, eventTypes[0]', 'PUT', '/destinations/surrogates', `{"url":"http://127.0.0.1:1/x","eventTypes":["\\ud800"]}`],
    ['POST …/suspend, reason', 'POST', '/destinations/surrogates/suspend', '{"reason":"maintenance \\udc00"}'],
    ['POST /replays, eventTypes[1]', 'POST', '/replays', '{"dryRun":true,"eventTypes":["a.b","\\ud800.c"]}'],
  ])('%s', async (name, method, path, body) => {
    expectRefused(await admin(method, path, body), name.split(', ')[1]!);
  });

  test('a field name holding one is refused at the object that holds it', async () => {
    expectRefused(await admin('PUT', '/destinations/surrogates', `{"url":"http://127.0.0.1:1/x","policy":{"\\ud800":1}}`), 'policy');
  });

  test('nothing was written: the account and the destination are as they were', async () => {
    expect((await admin('GET', '/accounts/acme')).body).toEqual(expect.objectContaining({ name: 'Acme' }));
    expect((await admin('GET', '/destinations/surrogates')).body).toEqual(expect.objectContaining({ eventTypes: [SINK_TYPE], status: 'active' }));
  });

  test('a key id Firestore reserves (__x__) is answered 4xx at once (was 500 after ~7 s of read retries)', async () => {
    const reply = await admin('DELETE', '/accounts/acme/keys/__x__');
    expect(reply.status).toBeGreaterThanOrEqual(400);
    expect(reply.status).toBeLessThan(500);
    expect(reply.body).toEqual(expect.objectContaining({ error: expect.any(String) as string }));
    expect(reply.ms).toBeLessThan(FAST_MS);
  });
});

describe('ingest: 400 naming the field', () => {
  const event = `"specversion":"1.0","source":"/surrogates","type":"${SINK_TYPE}"`;

  test.each<[string, string, string, string]>([
    ['structured, an attribute', 'application/cloudevents+json', `{${event},"id":"s-1","subject":"\\ud800"}`, 'subject'],
    ['structured, the JSON data', 'application/cloudevents+json', `{${event},"id":"s-2","data":{"name":"\\ud800"}}`, 'data.name'],
    ['structured, an extension attribute', 'application/cloudevents+json', `{${event},"id":"s-3","tenant":"\\udc00"}`, 'tenant'],
    ['batch, the data of the second event', 'application/cloudevents-batch+json', `[{${event},"id":"b-1"},{${event},"id":"b-2","data":["\\ud800"]}]`, '[1].data[0]'],
  ])('%s', async (_, contentType, body, path) => {
    expectRefused(await ingest({ 'content-type': contentType }, body), path, /^invalid CloudEvent( batch)?: 1 problem/);
  });

  test('binary mode, a header percent-encoding a surrogate (ED A0 80 is not UTF-8)', async () => {
    const reply = await ingest({ 'ce-specversion': '1.0', 'ce-id': 'bin-1', 'ce-source': '/surrogates', 'ce-type': SINK_TYPE, 'ce-subject': 'a%ED%A0%80b', 'content-type': 'application/json' }, '{}');
    expect(reply.status).toBe(400);
    expect(reply.body).toEqual(expect.objectContaining({ issues: expect.arrayContaining([{ path: 'ce-subject', message: expect.stringMatching(/not UTF-8/) as string }]) as unknown }));
  });

  test("binary mode's JSON data is the producer's bytes: accepted, delivered as sent, its sample kept as data_base64", async () => {
    const data = '{"name":"\\ud800"}';
    const reply = await ingest({ 'ce-specversion': '1.0', 'ce-id': 'bin-2', 'ce-source': '/surrogates', 'ce-type': SINK_TYPE, 'content-type': 'application/json' }, data);
    expect(reply.status).toBe(202);
    const delivered = await eventually('the event at the sink', () => sink.requests.find((r) => r.headers['ce-id'] === 'bin-2'));
    expect(delivered.body.toString()).toBe(data);
    const sample = await eventually('its sample', async () => {
      await catalogueNow(stack);
      const types = (await admin('GET', '/event-types')).body as { eventTypes?: { type: string; sample: Record<string, unknown> }[] };
      return types.eventTypes?.find((t) => t.type === SINK_TYPE && t.sample.id === 'bin-2')?.sample;
    });
    expect(sample).toEqual(expect.objectContaining({ data_base64: Buffer.from(data).toString('base64') }));
    expect(stack.logs.filter((l) => /catalogue could not be/.test(String(l.message)))).toEqual([]);
  });
});

describe('an event pushed to /route with one (only a forged push can: Pub/Sub cannot publish it)', () => {
  test('is acked (204) and goes to the dead-letter topic, the surrogate as U+FFFD, never retried', async () => {
    deadLetters = new SubscriptionTap(PROJECT, `${stack.config.topicPrefix}-dead-letter-hold`);
    const attributes = { 'ce-id': 'route-\ud800', 'ce-source': '/surrogates', 'ce-type': SINK_TYPE, 'ce-specversion': '1.0', 'herald-intake': '\udc00' };
    const envelope = { subscription: `projects/${PROJECT}/subscriptions/herald-events-route`, message: { messageId: 'surrogate-1', publishTime: new Date().toISOString(), attributes, data: '' } };
    const started = Date.now();
    const reply = await call('POST', `/route?token=${encodeURIComponent(stack.config.pushToken!)}`, { 'content-type': 'application/json' }, JSON.stringify(envelope));
    expect(reply.status).toBe(204);
    expect(Date.now() - started).toBeLessThan(FAST_MS);
    const dead = await deadLetters.find('the dead letter', (m) => m.attributes['herald-message-id'] === 'surrogate-1');
    expect(dead.attributes).toEqual(
      expect.objectContaining({ 'ce-id': 'route-\ufffd', 'herald-intake': '\ufffd', 'herald-reason': 'invalid-event', 'herald-error': expect.stringMatching(/attributes\.ce-id.*attributes\.herald-intake/) as string }),
    );
  });
});
