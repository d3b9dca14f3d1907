import { DeliveryRecord, deliveryId } from '../../shared/domain/retry/delivery';
import { eventKey } from '../../shared/domain/events/event';
import type { ReplayView } from '../../shared/domain/replay/replay';
import { runCli, stackEnv } from '../support/cli-harness';
import { eventually } from '../support/eventually';
import { Receiver } from '../support/receiver';
import { startTestStack, TestStack } from '../support/stack';
import { SubscriptionTap } from '../support/subscription-tap';

/**
 * Issue 32 item 5 on the emulators: a destination in queue mode with 3 QUEUED deliveries is
 * not deleted (409 with the counts and the ways out) — on the old code it was (204), and the
 * 3 stayed QUEUED for a destination that no longer existed, listed nowhere. With
 * `?deliveries=dead` it is deleted and the 3 are DEAD with dead letters (reason
 * destination-deleted); a replay keeps them while the destination is gone, and sends them
 * once a destination with the same id exists again.
 */
const RUN = Date.now().toString(36);
const PROJECT = `destination-delete-${RUN}`;
const SOURCE = '/destination-delete-test';
const EVENTS = ['e1', 'e2', 'e3'];

/** The status the receiver answers now. */
let status = 500;
const receiver = new Receiver(() => ({ status }));
let stack: TestStack;
let audit: SubscriptionTap;

const idOf = (event: string) => deliveryId('orders', eventKey({ source: SOURCE, id: event }));

function replayed(id: string): Promise<ReplayView> {
  return eventually(
    `replay ${id} to end`,
    async () => {
      const res = await stack.admin('GET', `/replays/${id}`);
      const body = res.body as ReplayView;
      return res.status === 200 && ['done', 'incomplete', 'failed', 'rejected'].includes(body.status) ? body : undefined;
    },
    40_000,
    200,
  );
}

async function replay(request: Record<string, unknown>): Promise<ReplayView> {
  const res = await stack.admin('POST', '/replays', request);
  expect(res.status).toBe(202);
  return replayed((res.body as { id: string }).id);
}

beforeAll(async () => {
  await receiver.start();
  stack = await startTestStack(PROJECT, { HERALD_PUMP_INTERVAL_MS: '100' });
  audit = await SubscriptionTap.create(PROJECT, `destination-delete-audit-${RUN}`, stack.runtime.topology.topics.deadLetter.name);
});

afterAll(async () => {
  await audit?.close();
  await stack?.stop({ purge: true });
  await receiver.stop();
});

test('3 QUEUED deliveries: DELETE is refused (409) until ?deliveries=dead, which makes them DEAD with dead letters; a replay sends them once the id exists again', async () => {
  expect((await stack.admin('PUT', '/destinations/orders', { url: `${receiver.url}/orders`, eventTypes: ['test.*'], failureMode: 'queue' })).status).toBe(201);
  for (const id of EVENTS) {
    const res = await stack.ingest({ 'ce-id': id, 'ce-source': SOURCE, 'ce-type': 'test.order', 'ce-specversion': '1.0', 'content-type': 'application/json' }, `{"n":"${id}"}`);
    expect(res.status).toBe(202);
  }
  const records = () => Promise.all(EVENTS.map((e) => stack.runtime.deliveries.get(idOf(e))));
  await eventually('3 QUEUED', async () => ((await records()).every((r) => r?.status === 'QUEUED') ? true : undefined));

  // Refused, with how many and the ways out; nothing changed.
  const refused = await stack.admin('DELETE', '/destinations/orders');
  expect(refused).toMatchObject({ status: 409, body: { deliveries: { PENDING: 0, IN_FLIGHT: 0, QUEUED: 3 } } });
  expect((refused.body as { error: string }).error).toMatch(/still has 3 deliveries to send .*POST …\/redeliver.*\?deliveries=dead/);
  expect((await stack.admin('GET', '/destinations/orders')).status).toBe(200);

  // The CLI says the same, and what to run.
  const cli = await runCli(['destinations', 'remove', 'orders'], stackEnv(stack));
  expect(cli.code).toBe(1);
  expect(cli.stderr).toContain('still has 3 deliveries to send');
  expect(cli.stderr).toContain('herald destinations remove orders --deliveries dead');

  // Deleted with the switch: the 3 are DEAD, with dead letters, each readable by id.
  const deleted = await runCli(['destinations', 'remove', 'orders', '--deliveries', 'dead', '--json'], stackEnv(stack));
  expect(deleted.code).toBe(0);
  expect(JSON.parse(deleted.stdout)).toEqual({ id: 'orders', deleted: true, dead: 3, byStatus: { PENDING: 0, IN_FLIGHT: 0, QUEUED: 3 }, reason: 'destination-deleted' });
  expect((await stack.admin('GET', '/destinations/orders')).status).toBe(404);
  for (const e of EVENTS) {
    const one = await stack.admin('GET', `/deliveries/${idOf(e)}`);
    expect(one).toMatchObject({ status: 200, body: { status: 'DEAD', reason: expect.stringMatching(/^destination-deleted: /) as unknown } });
  }
  const letters = await eventually('3 dead letters', () => {
    const mine = audit.received.filter((m) => m.attributes['herald-destination'] === 'orders');
    return mine.length >= 3 ? mine : undefined;
  });
  expect(letters.map((m) => m.attributes['herald-delivery-id']).sort()).toEqual(EVENTS.map(idOf).sort());
  for (const m of letters) expect(m.attributes['herald-reason']).toMatch(/^destination-deleted/);
  // Deleted already: 404 (nothing left to sweep either).
  expect((await stack.admin('DELETE', '/destinations/orders')).status).toBe(404);

  // While the destination is gone, a replay skips them and leaves them on the topic.
  const kept = await replay({ destination: 'orders' });
  expect(kept).toMatchObject({ status: 'done', matched: 3, redelivered: 0, skippedBy: { 'destination-deleted': 3 } });

  // The id exists again: listed as DEAD under it, and a replay sends them.
  status = 204;
  expect((await stack.admin('PUT', '/destinations/orders', { url: `${receiver.url}/orders`, eventTypes: ['test.*'] })).status).toBe(201);
  const listed = await stack.admin('GET', '/destinations/orders/deliveries?status=dead');
  expect((listed.body as { deliveries: DeliveryRecord[] }).deliveries.map((d) => d.eventId).sort()).toEqual(EVENTS);
  const sent = await replay({ destination: 'orders' });
  expect(sent).toMatchObject({ status: 'done', matched: 3, redelivered: 3 });
  await eventually('3 DELIVERED', async () => ((await records()).every((r) => r?.status === 'DELIVERED') ? true : undefined), 30_000);
  expect(new Set(receiver.requests.filter((r) => r.headers['ce-source'] === SOURCE).map((r) => r.headers['ce-id']))).toEqual(new Set(EVENTS));

  // Nothing left to send: a plain DELETE is 204, as before.
  expect((await stack.admin('DELETE', '/destinations/orders')).status).toBe(204);
}, 120_000);
