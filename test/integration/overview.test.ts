import { eventually } from '../support/eventually';
import { Receiver } from '../support/receiver';
import { startTestStack, TestStack } from '../support/stack';

/**
 * The console's Overview panel's numbers (GET /admin/overview) in local mode: events published
 * to a loopback receiver, some to a destination that always fails until they are dead letters;
 * the overview counts what was accepted and delivered, and the dead letters, as the admin API
 * lists them. The operator's only.
 */

const PROJECT = `overview-test-${Date.now().toString(36)}`;
const EVENTS = 6;
const TYPE = 'com.example.overview';

const receiver = new Receiver((req) => ({ status: req.path === '/down' ? 503 : 204 }));
let stack: TestStack;

interface Overview {
  window: string;
  source: string;
  acceptedPerSecond: number | null;
  deliveredPerSecond: number | null;
  endToEndP99Ms: number | null;
  deadLettered: number | null;
  lanesOldestBacklogSeconds: number | null;
  lanesBacklogBasis?: string;
  counts?: { accepted: number; delivered: number };
  coveredSeconds?: number;
  asOf: string;
}

beforeAll(async () => {
  await receiver.start();
  stack = await startTestStack(PROJECT, { HERALD_TIME_SCALE: '300', HERALD_PUMP_INTERVAL_MS: '100' });
  for (const [id, policy] of [
    ['ok', 'event-platform'],
    ['down', 'adobe-best-effort'],
  ] as const) {
    expect((await stack.admin('PUT', `/destinations/${id}`, { url: `${receiver.url}/${id}`, eventTypes: [TYPE], policy })).status).toBe(201);
  }
});

afterAll(async () => {
  await stack?.stop({ purge: true });
  await receiver.stop();
});

async function counted(destination: string, status: 'delivered' | 'dead'): Promise<number> {
  const res = await stack.admin('GET', `/destinations/${destination}/deliveries?status=${status}&limit=100`);
  expect(res.status).toBe(200);
  return (res.body as { deliveries: unknown[] }).deliveries.length;
}

async function overview(window = '5m'): Promise<Overview> {
  const res = await stack.admin('GET', `/overview?window=${window}`);
  expect(res.status).toBe(200);
  return res.body as Overview;
}

test('GET /admin/overview counts the events accepted, the deliveries made and the dead letters', async () => {
  const before = await overview();
  expect(before).toMatchObject({ window: '5m', source: 'process', counts: { accepted: 0, delivered: 0 }, deadLettered: 0, endToEndP99Ms: null });
  for (let i = 0; i < EVENTS; i++) {
    const res = await stack.ingest({ 'ce-id': `o-${i}`, 'ce-source': '/overview-test', 'ce-type': TYPE, 'ce-specversion': '1.0', 'content-type': 'application/json' }, `{"n":${i}}`);
    expect(res.status).toBe(202);
  }
  await eventually('every delivery settled', async () => ((await counted('ok', 'delivered')) === EVENTS && (await counted('down', 'dead')) === EVENTS ? true : undefined), 60_000, 250);
  const dead = await counted('down', 'dead');
  const after = await eventually('the overview to count the dead letters', async () => {
    const o = await overview();
    return o.deadLettered === dead ? o : undefined;
  }, 10_000, 250);
  expect(after.counts).toEqual({ accepted: EVENTS, delivered: EVENTS });
  expect(after.deadLettered).toBe(EVENTS);
  expect(after.acceptedPerSecond).toBeGreaterThan(0);
  expect(after.acceptedPerSecond! * after.coveredSeconds!).toBeCloseTo(EVENTS, 0);
  expect(after.deliveredPerSecond! * after.coveredSeconds!).toBeCloseTo(EVENTS, 0);
  expect(after.endToEndP99Ms).toBeGreaterThan(0);
  // Every first attempt was taken from a lane: its age is what local mode shows of the backlog, said so.
  expect(after.lanesOldestBacklogSeconds).toEqual(expect.any(Number));
  expect(after.lanesBacklogBasis).toContain('first attempt');
  expect(Date.parse(after.asOf)).not.toBeNaN();
});

test('the operator only, and a window checked', async () => {
  expect((await stack.admin('GET', '/overview?window=2d')).status).toBe(400);
  const key = await stack.admin('POST', '/accounts/default/keys', { name: 'overview-reader' });
  expect(key.status).toBe(201);
  const token = (key.body as { key: string }).key;
  const refused = await stack.adminAs(token, 'GET', '/overview');
  expect(refused.status).toBe(403);
  expect(JSON.stringify(refused.body)).toContain('operator');
});
