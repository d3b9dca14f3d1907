import { PubSub } from '@google-cloud/pubsub';
import { HTTP } from 'cloudevents';
import { Webhook } from 'standardwebhooks';
import { createHmac } from 'node:crypto';
import { Receiver, ReceivedRequest } from '../support/receiver';
import { startTestStack, TestStack } from '../support/stack';
import { SubscriptionTap } from '../support/subscription-tap';
import { sharedLaneFor } from '../../shared/topology';

let stack: TestStack;
const receiver = new Receiver();
const secrets: Record<string, string> = {};

function verified(req: ReceivedRequest, destination: string) {
  const secret = secrets[destination]!;
  // What a receiver does with the standardwebhooks package; throws unless a signature matches.
  new Webhook(secret).verify(req.body, req.headers as Record<string, string>, { jsonParse: false });
  // And what one does by hand per the specification: HMAC over the raw body bytes.
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const prefix = `${req.headers['webhook-id']}.${req.headers['webhook-timestamp']}.`;
  const raw = `v1,${createHmac('sha256', key).update(prefix).update(req.body).digest('base64')}`;
  expect(String(req.headers['webhook-signature']).split(' ')).toContain(raw);
  const event = HTTP.toEvent({ headers: req.headers, body: req.body });
  if (Array.isArray(event)) throw new Error('binary mode delivers one event');
  return event;
}

function byId(path: string, id: string): ReceivedRequest[] {
  return receiver.on(path).filter((r) => r.headers['ce-id'] === id);
}

beforeAll(async () => {
  await receiver.start();
  stack = await startTestStack(`spine-test-${Date.now().toString(36)}`);
  for (const [id, eventTypes] of [
    ['orders', ['com.example.order.*']],
    ['users', ['com.example.user.created']],
  ] as const) {
    const res = await stack.admin('PUT', `/destinations/${id}`, { url: `${receiver.url}/${id}`, eventTypes });
    expect(res.status).toBe(201);
    secrets[id] = (res.body as { secret: string }).secret;
    expect(secrets[id]).toMatch(/^whsec_/);
  }
});

afterAll(async () => {
  await stack?.stop({ purge: true });
  await receiver.stop();
});

describe('an event reaches the destinations that subscribe to its type, signed and unchanged', () => {
  test('binary mode: headers, signature and the exact data bytes', async () => {
    const data = Buffer.from('{"orderId": 42,  "note": "spaces  kept"}');
    const res = await stack.ingest(
      { 'ce-id': 'bin-1', 'ce-source': '/shop', 'ce-type': 'com.example.order.created', 'ce-specversion': '1.0', 'ce-tenant': 'acme', 'content-type': 'application/json' },
      data,
    );
    expect(res).toEqual({ status: 202, body: { accepted: ['bin-1'] } });
    await receiver.waitFor(1, '/orders');
    const [req] = byId('/orders', 'bin-1');
    expect(req!.body.equals(data)).toBe(true);
    const event = verified(req!, 'orders');
    expect(event.id).toBe('bin-1');
    expect(event.source).toBe('/shop');
    expect(event.type).toBe('com.example.order.created');
    expect(event['tenant']).toBe('acme');
    expect(typeof event.time).toBe('string'); // stamped at ingest when the producer sent none
    expect(req!.headers['content-type']).toBe('application/json');
    expect(req!.headers['webhook-id']).toMatch(/^msg_/);
  });

  test('binary mode: JSON data that is a bare string or number is valid JSON and is delivered', async () => {
    for (const [id, data] of [['scalar-1', '"just text"'], ['scalar-2', '42']] as const) {
      const res = await stack.ingest({ 'ce-id': id, 'ce-source': '/shop', 'ce-type': 'com.example.order.noted', 'ce-specversion': '1.0', 'content-type': 'application/json' }, data);
      expect(res).toEqual({ status: 202, body: { accepted: [id] } });
    }
    await receiver.waitFor(3, '/orders');
    expect(byId('/orders', 'scalar-1')[0]!.body.toString()).toBe('"just text"');
    expect(byId('/orders', 'scalar-2')[0]!.body.toString()).toBe('42');
  });

  test('structured mode', async () => {
    const body = { specversion: '1.0', id: 'str-1', source: '/shop', type: 'com.example.order.paid', time: '2026-01-02T03:04:05Z', datacontenttype: 'text/plain', data: 'paid in full' };
    const res = await stack.ingest({ 'content-type': 'application/cloudevents+json' }, JSON.stringify(body));
    expect(res).toEqual({ status: 202, body: { accepted: ['str-1'] } });
    await receiver.waitFor(4, '/orders');
    const [req] = byId('/orders', 'str-1');
    verified(req!, 'orders');
    expect(req!.headers['ce-time']).toBe('2026-01-02T03:04:05Z');
    expect(req!.body.toString()).toBe('paid in full');
    expect(req!.headers['content-type']).toBe('text/plain');
  });

  test('batch mode: each event goes only to its own subscribers', async () => {
    const batch = [
      { specversion: '1.0', id: 'bat-1', source: '/shop', type: 'com.example.order.shipped', data: { parcel: 'P1' } },
      { specversion: '1.0', id: 'bat-2', source: '/accounts', type: 'com.example.user.created', data_base64: Buffer.from([0, 1, 2, 255]).toString('base64'), datacontenttype: 'application/octet-stream' },
    ];
    const res = await stack.ingest({ 'content-type': 'application/cloudevents-batch+json' }, JSON.stringify(batch));
    expect(res).toEqual({ status: 202, body: { accepted: ['bat-1', 'bat-2'] } });
    await receiver.waitFor(5, '/orders');
    await receiver.waitFor(1, '/users');
    const shipped = byId('/orders', 'bat-1')[0]!;
    verified(shipped, 'orders');
    expect(JSON.parse(shipped.body.toString())).toEqual({ parcel: 'P1' });
    expect(shipped.headers['content-type']).toBe('application/json');
    const user = byId('/users', 'bat-2')[0]!;
    verified(user, 'users');
    expect([...user.body]).toEqual([0, 1, 2, 255]);
  });

  test('a message published straight onto the events topic is delivered like an ingested one', async () => {
    const pubsub = new PubSub({ projectId: stack.config.projectId });
    const data = Buffer.from('{"userId":"u-7"}');
    await pubsub.topic(stack.runtime.topology.topics.events.name).publishMessage({
      data,
      attributes: { 'ce-id': 'direct-1', 'ce-source': '/accounts', 'ce-type': 'com.example.user.created', 'ce-specversion': '1.0', 'ce-time': '2026-03-04T05:06:07Z', 'content-type': 'application/json' },
    });
    await receiver.waitFor(2, '/users');
    const req = byId('/users', 'direct-1')[0]!;
    expect(req.body.equals(data)).toBe(true);
    const event = verified(req, 'users');
    expect(req.headers['ce-time']).toBe('2026-03-04T05:06:07Z');
    expect(event.id).toBeDefined();
    await pubsub.close();
  });

  test('no event reached a destination that does not subscribe to its type, and none twice', async () => {
    // Let any stray delivery arrive before counting.
    await new Promise((r) => setTimeout(r, 1500));
    expect(receiver.on('/orders').map((r) => r.headers['ce-id']).sort()).toEqual(['bat-1', 'bin-1', 'scalar-1', 'scalar-2', 'str-1']);
    expect(receiver.on('/users').map((r) => r.headers['ce-id']).sort()).toEqual(['bat-2', 'direct-1']);
  });

  test('each delivery is recorded DELIVERED with one attempt', async () => {
    // Through the store: a DELIVERED first attempt is a member of a group, not a document of its own.
    const records = await stack.runtime.deliveries.log('orders', { limit: 50 });
    expect(records.deliveries.map((d) => [d.eventId, d.status, d.attempts]).sort()).toEqual([
      ['bat-1', 'DELIVERED', 1],
      ['bin-1', 'DELIVERED', 1],
      ['scalar-1', 'DELIVERED', 1],
      ['scalar-2', 'DELIVERED', 1],
      ['str-1', 'DELIVERED', 1],
    ]);
  });
});

/** Registers `id` for events of type `com.example.<id>.created` and taps its shared first-attempt lane (what reaches the lane, as messages). */
async function registeredAndTapped(id: string): Promise<SubscriptionTap> {
  const res = await stack.admin('PUT', `/destinations/${id}`, { url: `${receiver.url}/${id}`, eventTypes: [`com.example.${id}.created`] });
  expect(res.status).toBe(201);
  secrets[id] = (res.body as { secret: string }).secret;
  return SubscriptionTap.create(stack.config.projectId, `spine-${id}-tap`, sharedLaneFor(id, 'first', stack.runtime.names));
}

describe("a request's several events for one destination", () => {
  test('travel in one message on its lane (one push), and each is delivered once, signed, and recorded DELIVERED', async () => {
    const tap = await registeredAndTapped('bulk');
    const ids = Array.from({ length: 40 }, (_, i) => `bulk-${i}`);
    const batch = ids.map((id, i) => ({ specversion: '1.0', id, source: '/shop', type: 'com.example.bulk.created', data: { i } }));
    expect(await stack.ingest({ 'content-type': 'application/cloudevents-batch+json' }, JSON.stringify(batch))).toEqual({ status: 202, body: { accepted: ids } });
    await receiver.waitFor(40, '/bulk');
    await new Promise((r) => setTimeout(r, 1000));
    const got = receiver.on('/bulk');
    expect(got.map((r) => r.headers['ce-id']).sort()).toEqual([...ids].sort());
    for (const r of got) expect(JSON.parse(verified(r, 'bulk').data === undefined ? 'null' : r.body.toString())).toEqual({ i: Number(String(r.headers['ce-id']).slice(5)) });
    const onLane = tap.received.filter((m) => m.attributes['herald-destination'] === 'bulk');
    expect(onLane.map((m) => m.attributes['herald-bundle'])).toEqual(['40']);
    await tap.close();
    const records = await stack.runtime.deliveries.log('bulk', { limit: 50 });
    expect(records.deliveries.map((d) => [d.eventId, d.status, d.attempts]).sort()).toEqual(ids.map((id) => [id, 'DELIVERED', 1]).sort());
  });
});

describe('single-event requests that come close together for one destination', () => {
  test('go onto its lane together (fewer messages than events), each delivered once', async () => {
    const tap = await registeredAndTapped('busy');
    const ids = Array.from({ length: 30 }, (_, i) => `busy-${i}`);
    // Thirty producers' requests at once: the destination is busy after the first (HERALD_LANE_LINGER_MS, 20 ms).
    const answers = await Promise.all(ids.map((id) => stack.ingest({ 'ce-id': id, 'ce-source': '/shop', 'ce-type': 'com.example.busy.created', 'ce-specversion': '1.0', 'content-type': 'application/json' }, JSON.stringify({ id }))));
    expect(answers.map((a) => a.status)).toEqual(ids.map(() => 202));
    await receiver.waitFor(30, '/busy');
    await new Promise((r) => setTimeout(r, 1000));
    const got = receiver.on('/busy');
    expect(got.map((r) => r.headers['ce-id']).sort()).toEqual([...ids].sort());
    for (const r of got) verified(r, 'busy');
    const onLane = tap.received.filter((m) => m.attributes['herald-destination'] === 'busy');
    // How many bundles depends on how the requests' arrivals spread (quiet: ~3; beside a chaos
    // run: 16); what coalescing promises is that events close together share one (the rules:
    // test/unit/lane-coalescer.test.ts). Without it, 30 messages of one each.
    expect(onLane.length).toBeLessThan(30);
    expect(Math.max(...onLane.map((m) => Number(m.attributes['herald-bundle'] ?? 1)))).toBeGreaterThan(1);
    expect(onLane.reduce((n, m) => n + Number(m.attributes['herald-bundle'] ?? 1), 0)).toBe(30);
    await tap.close();
  });
});
