import { PubSub } from '@google-cloud/pubsub';
import { shardOf } from '../../shared/topology';
import { eventually } from '../support/eventually';
import { Receiver } from '../support/receiver';
import { startTestStack, TestStack } from '../support/stack';

/**
 * Destinations share a fixed set of lanes (topology.ts): registering one costs no Pub/Sub
 * resource, and a slow destination does not stall the destinations on its lane, although
 * the emulator pushes a subscription only two requests at a time.
 */
const PROJECT = `shared-lanes-test-${Date.now().toString(36)}`;
const SOURCE = '/shared-lanes-test';
const SHARDS = 4;
/** Attempts time out after 1.5 s; 400 ms already makes a destination slow. */
const TIMEOUT_MS = 1500;

let stack: TestStack;
const receiver = new Receiver((req) => (req.path === '/slow' ? { status: 204, delayMs: TIMEOUT_MS + 1000 } : { status: 204 }));
const pubsub = new PubSub({ projectId: PROJECT });

/** A destination id that lands on the same first-attempt shard as `other`. */
function neighbourOf(other: string): string {
  for (let i = 0; ; i++) if (shardOf(`healthy-${i}`, SHARDS) === shardOf(other, SHARDS)) return `healthy-${i}`;
}

async function publish(id: string, type: string): Promise<void> {
  const res = await stack.ingest({ 'ce-id': id, 'ce-source': SOURCE, 'ce-type': type, 'ce-specversion': '1.0', 'content-type': 'application/json' }, '{}');
  expect(res.status).toBe(202);
}

async function names(): Promise<{ topics: string[]; subscriptions: string[] }> {
  const [topics] = await pubsub.getTopics();
  const [subscriptions] = await pubsub.getSubscriptions();
  return { topics: topics.map((t) => t.name.split('/').pop()!).sort(), subscriptions: subscriptions.map((s) => s.name.split('/').pop()!).sort() };
}

beforeAll(async () => {
  await receiver.start();
  stack = await startTestStack(PROJECT, {
    HERALD_LANE_SHARDS: String(SHARDS),
    HERALD_RETRY_SHARDS: '2',
    HERALD_DELIVERY_TIMEOUT_MS: String(TIMEOUT_MS),
    HERALD_SLOW_ATTEMPT_MS: '400',
    HERALD_PUMP_INTERVAL_MS: '100',
  });
});

afterAll(async () => {
  await pubsub.close();
  await stack?.stop({ purge: true });
  await receiver.stop();
});

test('registering destinations creates no topic or subscription; a dedicated lane is created and removed with its destination', async () => {
  const before = await names();
  expect(before.topics.filter((t) => /-shard-/.test(t))).toHaveLength(SHARDS + 2);
  for (let i = 0; i < 30; i++) expect((await stack.admin('PUT', `/destinations/many-${i}`, { url: `${receiver.url}/many`, eventTypes: [`test.many.${i}`] })).status).toBe(201);
  expect(await names()).toEqual(before);

  expect((await stack.admin('PUT', '/destinations/big', { url: `${receiver.url}/big`, eventTypes: ['test.big'], lane: 'dedicated' })).status).toBe(201);
  const withBig = await names();
  expect(withBig.topics).toEqual([...before.topics, 'herald-lane-big'].sort());
  expect(withBig.subscriptions).toEqual([...before.subscriptions, 'herald-lane-big-deliver'].sort());
  await publish('big-1', 'test.big');
  await eventually('big-1 to arrive on its dedicated lane', () => (receiver.on('/big').length > 0 ? true : undefined));

  expect((await stack.admin('DELETE', '/destinations/big')).status).toBe(204);
  expect(await names()).toEqual(before);
  for (let i = 0; i < 30; i++) await stack.admin('DELETE', `/destinations/many-${i}`);
});

test('a destination that times out leaves its shared lane: its neighbour on the lane is not held up', async () => {
  const healthy = neighbourOf('slow');
  expect((await stack.admin('PUT', '/destinations/slow', { url: `${receiver.url}/slow`, eventTypes: ['test.slow'] })).status).toBe(201);
  expect((await stack.admin('PUT', `/destinations/${healthy}`, { url: `${receiver.url}/healthy`, eventTypes: ['test.healthy'] })).status).toBe(201);

  // Two attempts show Herald the destination is slow (each holds a push slot until it times out).
  await publish('slow-learn-1', 'test.slow');
  await publish('slow-learn-2', 'test.slow');
  await eventually('the first attempts to time out', () => (receiver.on('/slow').length >= 2 ? true : undefined));
  await new Promise((r) => setTimeout(r, TIMEOUT_MS + 200));

  // Then slow and healthy events interleaved on the one shard. Before shared lanes knew slow
  // destinations, each slow event held one of the shard's two push slots for 1.5 s.
  const sentAt = new Map<string, number>();
  for (let i = 0; i < 10; i++) {
    await publish(`slow-${i}`, 'test.slow');
    sentAt.set(`healthy-${i}`, Date.now());
    await publish(`healthy-${i}`, 'test.healthy');
  }
  const arrivals = await eventually('every healthy event to arrive', () => {
    const got = receiver.on('/healthy');
    return got.length >= 10 ? got : undefined;
  });
  const latencies = arrivals.map((r) => r.at - sentAt.get(String(r.headers['ce-id']))!);
  expect(Math.max(...latencies)).toBeLessThan(TIMEOUT_MS);
  // The slow destination's events still went out, from the retry lanes.
  await eventually('every slow event to be attempted', () => {
    const ids = new Set(receiver.on('/slow').map((r) => String(r.headers['ce-id'])));
    return Array.from({ length: 10 }, (_, i) => `slow-${i}`).every((id) => ids.has(id)) ? true : undefined;
  }, 30_000);
  expect(stack.logs.filter((l) => l.message === 'slow destination: delivery handed to the retry lanes, its shared lane kept free').length).toBeGreaterThanOrEqual(10);
}, 60_000);
