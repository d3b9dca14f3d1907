import { Firestore } from '@google-cloud/firestore';
import { eventually } from '../support/eventually';
import { Receiver } from '../support/receiver';
import { startTestStack, TestStack } from '../support/stack';

/**
 * Destination filters on the real emulators: 1,000 events of one type with mixed data reach
 * exactly the destinations whose filter takes them; a dropped event creates no record (the
 * reconciler, which runs here within seconds, expects none either); the filter's outcomes are
 * counted in the destination's stats.
 */
const PROJECT = `filters-test-${Date.now().toString(36)}`;
const TYPE = 'test.filter.order';
const EVENTS = 1000;

interface Order {
  amount: number;
  customer: { name: string; country: string; vip?: true };
  nested?: { x: number };
}

/** Event i: its id, its extension siteid and its data, mixed so each filter takes a different share. */
function orderOf(i: number): { id: string; siteid: string; data: Order } {
  const data: Order = { amount: (i * 37) % 2000, customer: { name: i % 3 === 0 ? `Acme ${i}` : `Bolt ${i}`, country: ['DE', 'FR', 'US', 'JP'][i % 4]! } };
  if (i % 10 === 0) data.customer.vip = true;
  if (i % 2 === 0) data.nested = { x: i % 5 };
  return { id: `o-${i}`, siteid: String(i % 6 === 0 ? 42 : i % 11), data };
}

/** Each destination's filter, and which events it takes, computed here independently of CEL. */
const DESTINATIONS: Record<string, { filter?: string; takes: (o: ReturnType<typeof orderOf>) => boolean }> = {
  all: { takes: () => true },
  big: { filter: 'data.amount > 1000', takes: (o) => o.data.amount > 1000 },
  acme: { filter: 'data.customer.name.startsWith("Acme")', takes: (o) => o.data.customer.name.startsWith('Acme') },
  eu: { filter: 'data.customer.country in ["DE", "FR"] && has(data.customer.vip)', takes: (o) => ['DE', 'FR'].includes(o.data.customer.country) && o.data.customer.vip === true },
  site42: { filter: 'ce.siteid == "42"', takes: (o) => o.siteid === '42' },
  // Half the events have no `nested`: an evaluation error for each, counted and dropped.
  nested: { filter: 'data.nested.x >= 3', takes: (o) => o.data.nested !== undefined && o.data.nested.x >= 3 },
};

let stack: TestStack;
const receiver = new Receiver();

beforeAll(async () => {
  await receiver.start();
  stack = await startTestStack(PROJECT, { HERALD_RECONCILE_AFTER_MS: '10000', HERALD_RECONCILE_INTERVAL_MS: '500', HERALD_RATE_FLUSH_MS: '200', HERALD_PUMP_INTERVAL_MS: '200' });
});

afterAll(async () => {
  await stack?.stop({ purge: true });
  await receiver.stop();
});

test('an invalid filter is refused at save with its position; a valid one is tried on a given event', async () => {
  const bad = await stack.admin('PUT', '/destinations/bad', { url: `${receiver.url}/bad`, eventTypes: [TYPE], filter: 'data.amount >' });
  expect(bad).toMatchObject({ status: 400, body: { issues: [{ path: 'filter', message: expect.stringContaining('at line 1, column 14') }] } });
  const costly = await stack.admin('PUT', '/destinations/bad', { url: `${receiver.url}/bad`, eventTypes: [TYPE], filter: 'data.items.exists(i, data.items.exists(j, i < j))' });
  expect(costly).toMatchObject({ status: 400, body: { issues: [{ path: 'filter', message: expect.stringContaining('inside another comprehension') }] } });
  const tried = await stack.admin('POST', '/destinations/bad/filter-test', { filter: 'data.amount > 1000', event: { specversion: '1.0', id: 'x', source: '/t', type: TYPE, data: { amount: 1500 } } });
  expect(tried).toEqual({ status: 200, body: { filter: 'data.amount > 1000', results: [{ type: TYPE, id: 'x', from: 'given', pass: true }] } });
});

test('1,000 events with mixed data reach exactly the destinations whose filter takes them', async () => {
  for (const [id, d] of Object.entries(DESTINATIONS)) {
    expect((await stack.admin('PUT', `/destinations/${id}`, { url: `${receiver.url}/${id}`, eventTypes: [TYPE], ...(d.filter ? { filter: d.filter } : {}) })).status).toBe(201);
  }
  const orders = Array.from({ length: EVENTS }, (_, i) => orderOf(i));
  for (let start = 0; start < EVENTS; start += 100) {
    const batch = orders.slice(start, start + 100).map((o) => ({ specversion: '1.0', id: o.id, source: '/filters-test', type: TYPE, siteid: o.siteid, datacontenttype: 'application/json', data: o.data }));
    const res = await stack.ingest({ 'content-type': 'application/cloudevents-batch+json' }, JSON.stringify(batch));
    expect(res.status).toBe(202);
  }
  const expected = Object.fromEntries(Object.entries(DESTINATIONS).map(([id, d]) => [id, orders.filter(d.takes).map((o) => o.id).sort()]));
  // Every share is a real part: none takes none, none but `all` takes all.
  for (const [id, ids] of Object.entries(expected)) if (id !== 'all') expect([id, ids.length > 0 && ids.length < EVENTS]).toEqual([id, true]);
  const received = (id: string) => [...new Set(receiver.on(`/${id}`).map((r) => String(r.headers['ce-id'])))].sort();
  const total = Object.values(expected).reduce((n, ids) => n + ids.length, 0);
  await eventually('every expected delivery', () => (Object.keys(DESTINATIONS).reduce((n, id) => n + received(id).length, 0) >= total ? true : undefined), 300_000, 500).catch((e: Error) => {
    // Which destinations fell short, and their first missing events: where to look in the log.
    const short = Object.keys(DESTINATIONS).map((id) => ({ id, got: received(id), want: expected[id]! })).filter((d) => d.got.length < d.want.length);
    throw new Error(`${e.message}: ${short.map((d) => `${d.id} ${d.got.length}/${d.want.length} (missing ${d.want.filter((x) => !d.got.includes(x)).slice(0, 5).join(', ')})`).join('; ')}`);
  });

  // The reconciler reads the journal after its grace and finds nothing missing: a dropped event was never expected.
  const db = new Firestore({ projectId: PROJECT });
  await eventually('the intake journal reconciled', async () => ((await db.collection('intake').limit(1).get()).empty ? true : undefined), 60_000, 250);
  await db.terminate();
  // What it recovered (deliveries late on this busy machine, had it expected a dropped one: an extra id) the pump sends at once.
  const receivedAll = () => receiver.requests.length;
  let seen = -1;
  await eventually('the recovered deliveries sent', () => (seen === (seen = receivedAll()) ? true : undefined), 30_000, 3000);
  for (const id of Object.keys(DESTINATIONS)) expect([id, received(id)]).toEqual([id, expected[id]]);

  // Counted per destination: passed + filtered + errors is every event of its type.
  const nestedErrors = orders.filter((o) => o.data.nested === undefined).length;
  await eventually('the filter counts flushed', async () => {
    const stats = ((await stack.admin('GET', '/destinations/nested')).body as { stats: Record<'filterPassed1h' | 'filtered1h' | 'filterErrors1h', number> }).stats;
    return stats.filterPassed1h + stats.filtered1h + stats.filterErrors1h === EVENTS ? stats : undefined;
  }, 30_000, 250).then((stats) => expect(stats).toMatchObject({ filterPassed1h: expected.nested!.length, filterErrors1h: nestedErrors, filtered1h: EVENTS - expected.nested!.length - nestedErrors }));
  const big = ((await stack.admin('GET', '/destinations/big')).body as { stats: Record<string, number> }).stats;
  expect(big).toMatchObject({ filterPassed1h: expected.big!.length, filtered1h: EVENTS - expected.big!.length, filterErrors1h: 0 });
  const all = ((await stack.admin('GET', '/destinations/all')).body as { stats: Record<string, number> }).stats;
  expect(all).toMatchObject({ filterPassed1h: 0, filtered1h: 0, filterErrors1h: 0 });
  // About 2,200 deliveries through the emulators: minutes on a loaded machine.
}, 480_000);
