import { PubSub } from '@google-cloud/pubsub';
import { deliveryId, DeliveryRecord } from '../../shared/domain/retry/delivery';
import { eventKey } from '../../shared/domain/events/event';
import { eventually } from '../support/eventually';
import { startTestStack, TestStack } from '../support/stack';
import { SubscriptionTap } from '../support/subscription-tap';

/**
 * Issue 50 (2) on the emulators, through the admin API: a topic destination may publish only to
 * a topic its account was allowed, by the operator alone. Account globex's key (with write)
 * cannot register a destination at account acme's topic, nor widen its own list; acme's can,
 * once the operator allowed it; and once the operator takes the topic off acme's list, the next
 * event is not published: the destination is suspended and the event waits QUEUED, until the
 * topic is allowed again and the destination reactivated.
 *
 * HERALD_DESTINATION_CACHE_MS=200: each instance re-reads an account's list that often.
 */
const RUN = Date.now().toString(36);
const PROJECT = `topic-allow-${RUN}`;
/** acme's own project, where its topic lives. */
const ACME_PROJECT = `acme-topics-${RUN}`;
const ACME_TOPIC = `projects/${ACME_PROJECT}/topics/orders`;
const SOURCE = '/topic-allow-list';

let stack: TestStack;
let tap: SubscriptionTap;
const keys = {} as Record<'acme' | 'globex', string>;

const as = (token: string, method: string, path: string, body?: unknown) => stack.adminAs(token, method, path, body);
const operator = (method: string, path: string, body?: unknown) => as(stack.config.adminToken, method, path, body);

async function publish(id: string): Promise<void> {
  const res = await fetch(`${stack.url}/ingest`, {
    method: 'POST',
    headers: { authorization: `Bearer ${keys.acme}`, 'content-type': 'application/json', 'ce-id': id, 'ce-source': SOURCE, 'ce-type': 'test.orders', 'ce-specversion': '1.0' },
    body: `{"id":"${id}"}`,
  });
  expect(res.status).toBe(202);
}

const recordOf = (id: string) => stack.runtime.deliveries.get(deliveryId('acme_orders', eventKey({ source: SOURCE, id })));

beforeAll(async () => {
  stack = await startTestStack(PROJECT, { HERALD_DESTINATION_CACHE_MS: '200', HERALD_PUMP_INTERVAL_MS: '100' });
  for (const id of ['acme', 'globex']) {
    expect((await operator('POST', '/accounts', { id, name: id })).status).toBe(201);
    const key = await operator('POST', `/accounts/${id}/keys`, { name: `${id} all` });
    expect(key.status).toBe(201);
    keys[id as 'acme' | 'globex'] = (key.body as { key: string }).key;
  }
  const pubsub = new PubSub({ projectId: ACME_PROJECT });
  await pubsub.createTopic('orders');
  await pubsub.close();
  tap = await SubscriptionTap.create(ACME_PROJECT, 'orders-tap', 'orders');
});

afterAll(async () => {
  await tap?.close();
  const pubsub = new PubSub({ projectId: ACME_PROJECT });
  await pubsub.subscription('orders-tap').delete().catch(() => undefined);
  await pubsub.topic('orders').delete().catch(() => undefined);
  await pubsub.close();
  await stack?.stop({ purge: true });
});

test('a new account may publish to no topic: even its own key is refused, with what the operator must do', async () => {
  const res = await as(keys.acme, 'PUT', '/destinations/orders', { topic: ACME_TOPIC, eventTypes: ['test.orders'] });
  expect(res.status).toBe(403);
  expect((res.body as { error: string }).error).toBe(
    `topic ${ACME_TOPIC} is not among the topics account acme may publish to (it has no allowedTopics); the operator allows it with PATCH /admin/accounts/acme {"allowedTopics": [...]} (herald accounts update acme --allowed-topic ${ACME_TOPIC})`,
  );
  expect((await as(keys.acme, 'GET', '/destinations/orders')).status).toBe(404);
});

test('an account key cannot widen its allowedTopics (403), nor touch another account (404); the operator sets them', async () => {
  expect(await as(keys.acme, 'PATCH', '/accounts/acme', { allowedTopics: [ACME_TOPIC] })).toMatchObject({ status: 403, body: { error: expect.stringContaining('for the operator (the admin token) only') } });
  expect((await as(keys.globex, 'PATCH', '/accounts/acme', { allowedTopics: [ACME_TOPIC] })).status).toBe(404);
  expect((await operator('GET', '/accounts/acme')).body).not.toHaveProperty('allowedTopics');
  const set = await operator('PATCH', '/accounts/acme', { allowedTopics: [`projects/${ACME_PROJECT}/topics/*`] });
  expect(set).toMatchObject({ status: 200, body: { allowedTopics: [`projects/${ACME_PROJECT}/topics/*`], allowedTopicsInForce: [`projects/${ACME_PROJECT}/topics/*`] } });
  // The account sees its list.
  expect(await as(keys.acme, 'GET', '/accounts/acme')).toMatchObject({ status: 200, body: { allowedTopics: [`projects/${ACME_PROJECT}/topics/*`] } });
});

test("globex's key (with write) cannot register a destination at acme's topic, or at any topic off its list", async () => {
  for (const path of ['/destinations/steal', '/accounts/globex/destinations/steal']) {
    const res = await as(keys.globex, 'PUT', path, { topic: ACME_TOPIC, eventTypes: ['test.orders'] });
    expect([path, res.status]).toEqual([path, 403]);
    expect(res.body).toMatchObject({ error: expect.stringContaining(`topic ${ACME_TOPIC} is not among the topics account globex may publish to`), issues: [{ path: 'topic' }] });
  }
  expect((await as(keys.globex, 'PUT', '/destinations/anywhere', { topic: `projects/${PROJECT}/topics/anything` })).status).toBe(403);
  // Not through acme's path either: another account is 404 to a key.
  expect((await as(keys.globex, 'PUT', '/accounts/acme/destinations/steal', { topic: ACME_TOPIC })).status).toBe(404);
  expect((await operator('GET', '/accounts/globex/destinations')).body).toEqual({ destinations: [] });
});

test("Herald's own topics are refused in any project, whatever the list", async () => {
  await operator('PATCH', '/accounts/globex', { allowedTopics: [`projects/${PROJECT}/topics/*`, `projects/${ACME_PROJECT}/topics/*`] });
  for (const topic of [`projects/${PROJECT}/topics/herald-events`, `projects/${ACME_PROJECT}/topics/herald-dead-letter`, `projects/${PROJECT}/topics/herald%2Dshard-0`]) {
    const res = await as(keys.globex, 'PUT', '/destinations/loop', { topic });
    expect([topic, res.status]).toEqual([topic, 400]);
  }
  await operator('PATCH', '/accounts/globex', { allowedTopics: null });
});

test('acme registers its allowed topic and gets its events there; taken off the list, the next event is not published and the destination is suspended', async () => {
  const put = await as(keys.acme, 'PUT', '/destinations/orders', { topic: ACME_TOPIC, eventTypes: ['test.orders'], technicalEmail: 'ops@acme.example' });
  expect(put.status).toBe(201);
  await publish('o1');
  await tap.find('o1 on acme’s topic', (m) => m.attributes['ce-id'] === 'o1');

  expect((await operator('PATCH', '/accounts/acme', { allowedTopics: null })).status).toBe(200);
  // Past every instance's cache of the list.
  await new Promise((r) => setTimeout(r, 400));
  await publish('o2');
  const queued = await eventually('o2 QUEUED', async () => {
    const r = await recordOf('o2');
    return r?.status === 'QUEUED' ? r : undefined;
  });
  expect(queued.lastError?.error).toMatch(/^not published, refused by Herald: topic .* is not among the topics account acme may publish to/);
  // The record is written QUEUED first, the suspension right after it (attempt.ts).
  const destination = await eventually('orders suspended', async () => {
    const d = await as(keys.acme, 'GET', '/destinations/orders');
    return (d.body as { status?: string }).status === 'suspended' ? d : undefined;
  });
  expect(destination.body).toMatchObject({ status: 'suspended', suspension: { cause: 'topic-not-allowed' } });
  expect(tap.received.filter((m) => m.attributes['ce-id'] === 'o2')).toEqual([]);

  // Allowed again and reactivated, the queued event goes out.
  await operator('PATCH', '/accounts/acme', { allowedTopics: [ACME_TOPIC] });
  await new Promise((r) => setTimeout(r, 400));
  expect((await as(keys.acme, 'POST', '/destinations/orders/reactivate')).status).toBe(200);
  await tap.find('o2 on acme’s topic after reactivation', (m) => m.attributes['ce-id'] === 'o2');
  expect(await eventually('o2 DELIVERED', async () => ((await recordOf('o2'))?.status === 'DELIVERED' ? true : undefined))).toBe(true);
  const delivered: DeliveryRecord | undefined = await recordOf('o1');
  expect(delivered?.status).toBe('DELIVERED');
});
