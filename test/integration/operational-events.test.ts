import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { OperationalData } from '../../shared/domain/operational/operational-events';
import { bringForward } from '../../shared/app/retry/pump';
import { pumpDeps } from '../../shared/runtime/runtime';
import { eventually } from '../support/eventually';
import { Receiver, ReceivedRequest } from '../support/receiver';
import { startTestStack, TestStack } from '../support/stack';
import { SubscriptionTap } from '../support/subscription-tap';

/**
 * Issue 57, operational events on the emulators: a destination at 90 % of its failure
 * threshold is announced `failing` once, then `suspended`, then `reactivated`, to another
 * destination of its account subscribed with an ordinary spec (verified with the
 * standardwebhooks package), and to the operator's account as a copy; the destination that
 * fails, though subscribed to the same types, never receives one about itself; an account with
 * no subscribed destination gets nothing and nothing is kept for it; the seed-000 email goes out
 * with the suspended event.
 *
 * HERALD_TIME_SCALE=150: the threshold's hour is 24 s and the check runs every 400 ms.
 */
const RUN = Date.now().toString(36);
const PROJECT = `opev-${RUN}`;
const SOURCE = '/operational-test';
const OPS_SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const OPERATOR_SECRET = `whsec_${randomBytes(32).toString('base64')}`;

/** /flaky: of its first 20 requests the odd ones fail (9 of 20: a failure rate of 45 %, 90 % of the 50 % that suspends); every later one fails. */
const receiver: Receiver = new Receiver((req) => {
  if (req.path === '/flaky') {
    const n = receiver.on('/flaky').length - 1;
    return { status: n >= 20 || (n % 2 === 1 && n < 18) ? 500 : 204 };
  }
  if (req.path === '/quiet' || req.path === '/twice') return { status: req.path === '/quiet' ? 404 : 503 };
  return { status: 204 };
});

/** One attempt an event (a failure is DEAD at once), suspended below 50 % over at least 20 attempts. */
const POLICY = { retryOn: { statuses: ['5xx'] }, backoff: { kind: 'immediate' }, maxAttempts: 1, threshold: { successRate: 0.5, windowMs: 3_600_000, minSample: 20 } };

let stack: TestStack;
let notifications: SubscriptionTap;

interface Received {
  type: string;
  subject?: string;
  data: Record<string, unknown>;
}

/** The operational events a path received, each checked against its Standard Webhooks signature first. */
function operationalAt(path: string, secret: string): Received[] {
  return receiver
    .on(path)
    .filter((r) => String(r.headers['ce-type']).startsWith('herald.'))
    .map((r: ReceivedRequest) => {
      // Throws unless the signature matches: what a receiver does with the standardwebhooks package.
      new Webhook(secret).verify(r.body, r.headers as Record<string, string>, { jsonParse: false });
      return { type: String(r.headers['ce-type']), ...(r.headers['ce-subject'] ? { subject: String(r.headers['ce-subject']) } : {}), data: JSON.parse(r.body.toString()) as Record<string, unknown> };
    });
}

const ofType = (events: Received[], type: string) => events.filter((e) => e.type === type);

async function publish(account: string, ids: string[]): Promise<void> {
  const batch = ids.map((id) => ({ specversion: '1.0', id, source: SOURCE, type: 'test.op', heraldaccount: account, data: { id } }));
  const res = await stack.ingest({ 'content-type': 'application/cloudevents-batch+json' }, JSON.stringify(batch));
  expect(res.status).toBe(202);
}

async function put(account: string, id: string, spec: Record<string, unknown>): Promise<void> {
  const res = await stack.admin('PUT', `/accounts/${account}/destinations/${id}`, spec);
  expect(res.status).toBe(201);
}

const statusOf = async (account: string, id: string) => ((await stack.admin('GET', `/accounts/${account}/destinations/${id}`)).body as { status: string }).status;

beforeAll(async () => {
  await receiver.start();
  stack = await startTestStack(PROJECT, { HERALD_TIME_SCALE: '150', HERALD_PUMP_INTERVAL_MS: '100', HERALD_OPERATIONAL_EVENTS_ACCOUNT: 'operator' });
  notifications = new SubscriptionTap(PROJECT, `${stack.runtime.names.prefix}-notifications-outbox`);
  for (const id of ['acme', 'quiet', 'operator', 'retryco']) expect((await stack.admin('POST', '/accounts', { id, name: id })).status).toBe(201);
  // The failing one subscribes to Herald's destination events too: it must never get its own.
  await put('acme', 'flaky', { url: `${receiver.url}/flaky`, eventTypes: ['test.op', 'herald.*'], policy: POLICY, technicalEmail: 'flaky@example.com' });
  await put('acme', 'ops', { url: `${receiver.url}/ops`, eventTypes: ['herald.destination.*', 'herald.delivery.dead'], secret: OPS_SECRET });
  // Takes every event of the account, but names none of Herald's: it is not sent them.
  await put('acme', 'catchall', { url: `${receiver.url}/catchall` });
  await put('quiet', 'gone', { url: `${receiver.url}/quiet`, eventTypes: ['test.op'], policy: 'event-platform' });
  await put('retryco', 'twice', { url: `${receiver.url}/twice`, eventTypes: ['test.op'], policy: { ...POLICY, maxAttempts: 2, threshold: undefined } });
  await put('retryco', 'ops', { url: `${receiver.url}/retryco-ops`, eventTypes: ['herald.delivery.dead'], secret: OPS_SECRET });
  await put('operator', 'all', { url: `${receiver.url}/operator`, eventTypes: ['herald.*'], secret: OPERATOR_SECRET });
});

afterAll(async () => {
  await notifications?.close();
  await stack?.stop({ purge: true });
  await receiver.stop();
});

test('failing once at 90 % of the threshold, then suspended, then reactivated: to a second destination of the account, signed', async () => {
  await publish('acme', Array.from({ length: 20 }, (_, i) => `a-${i}`));
  await receiver.waitFor(20, '/flaky', 30_000);
  const failing = await eventually('the failing event at /ops', async () => ofType(operationalAt('/ops', OPS_SECRET), 'herald.destination.failing')[0]);
  const data = failing.data as OperationalData<'destination.failing'>;
  expect(failing.subject).toBe('flaky');
  expect(data).toMatchObject({ account: 'acme', destinationId: 'flaky', target: `${receiver.url}/flaky`, fraction: 0.9, failures: 9, successes: 11, suspendAboveFailureRate: 0.5 });
  expect(data.failureRate).toBeCloseTo(0.45, 5);
  expect(await statusOf('acme', 'flaky')).toBe('active');
  // A death is announced too, with the others of the interval held back.
  const dead = await eventually('a dead event at /ops', async () => ofType(operationalAt('/ops', OPS_SECRET), 'herald.delivery.dead')[0]);
  expect(dead.data).toMatchObject({ account: 'acme', destinationId: 'flaky', target: `${receiver.url}/flaky`, eventType: 'test.op', attempts: 1 });

  await publish('acme', Array.from({ length: 20 }, (_, i) => `b-${i}`));
  const suspended = await eventually('the suspended event at /ops', async () => ofType(operationalAt('/ops', OPS_SECRET), 'herald.destination.suspended')[0], 40_000);
  expect(suspended.data).toMatchObject({ account: 'acme', destinationId: 'flaky', cause: 'threshold', technicalEmail: 'flaky@example.com' });
  expect(await statusOf('acme', 'flaky')).toBe('suspended');
  // Seed 000's email goes out with it, naming the event.
  const email = await notifications.find('the email of flaky', (m) => m.attributes['herald-destination'] === 'acme_flaky');
  expect(email.attributes['herald-event-id']).toMatch(/^destination\.suspended-acme_flaky-/);
  expect(JSON.parse(email.data.toString())).toMatchObject({ to: 'flaky@example.com', cause: 'threshold' });

  expect((await stack.admin('POST', '/accounts/acme/destinations/flaky/reactivate')).status).toBe(200);
  const reactivated = await eventually('the reactivated event at /ops', async () => ofType(operationalAt('/ops', OPS_SECRET), 'herald.destination.reactivated')[0]);
  expect(reactivated.data).toMatchObject({ account: 'acme', destinationId: 'flaky', cause: 'threshold' });

  // In the order they happened, one of each up to the reactivation. (What follows it is the
  // rule's: its window still holds the failures, so its next attempts may suspend it again.)
  const states = (got: Received[]) => got.filter((e) => e.type.startsWith('herald.destination.') && e.data.destinationId === 'flaky').map((e) => e.type.slice('herald.destination.'.length));
  expect(states(operationalAt('/ops', OPS_SECRET)).slice(0, 3)).toEqual(['failing', 'suspended', 'reactivated']);
  // The operator's account got its copies, naming the account.
  await eventually('the operator copies', async () => (states(operationalAt('/operator', OPERATOR_SECRET)).includes('reactivated') ? true : undefined));
  const copies = operationalAt('/operator', OPERATOR_SECRET);
  expect(states(copies).slice(0, 3)).toEqual(['failing', 'suspended', 'reactivated']);
  expect(ofType(copies, 'herald.destination.suspended')[0]!.data).toMatchObject({ account: 'acme', destinationId: 'flaky' });
});

test('no loop: the failing destination, subscribed to the same types, never received an event about itself; a catch-all none', async () => {
  await eventually('the reactivation to have been announced', async () => ofType(operationalAt('/ops', OPS_SECRET), 'herald.destination.reactivated')[0]);
  expect(receiver.on('/flaky').filter((r) => String(r.headers['ce-type']).startsWith('herald.'))).toEqual([]);
  expect(receiver.on('/flaky').every((r) => r.headers['ce-type'] === 'test.op')).toBe(true);
  // Nor a catch-all destination, which never asked for them: it got the producer's events alone.
  await receiver.waitFor(40, '/catchall');
  expect(receiver.on('/catchall').every((r) => r.headers['ce-type'] === 'test.op')).toBe(true);
});

test('an account with no destination for them gets nothing, and nothing is kept for it', async () => {
  await publish('quiet', ['q-1']);
  await eventually('quiet/gone to be suspended', async () => ((await statusOf('quiet', 'gone')) === 'suspended' ? true : undefined));
  await eventually('the event to have been skipped', async () =>
    stack.logs.find((l) => l.message === 'operational event: no destination of the account subscribes to it' && l.account === 'quiet' && l.kind === 'destination.suspended'),
  );
  // No journal batch holds an operational event of the account: none was written.
  const batches = await stack.runtime.intake.due(new Date(Date.now() + 3_600_000), 500);
  const kept = batches.flatMap((b) => b.events).filter((e) => e.attributes.heraldaccount === 'quiet' && e.attributes.type.startsWith('herald.'));
  expect(kept).toEqual([]);
  // The operator still hears of it.
  await eventually('the operator copy of quiet', async () => operationalAt('/operator', OPERATOR_SECRET).find((e) => e.type === 'herald.destination.suspended' && e.data.account === 'quiet'));
});

test('a death decided on a retry the pump claimed is announced as a first attempt\'s is, naming the destination\'s target', async () => {
  await publish('retryco', ['r-1']);
  const dead = await eventually('the dead event at /retryco-ops', async () => ofType(operationalAt('/retryco-ops', OPS_SECRET), 'herald.delivery.dead')[0], 40_000);
  expect(receiver.on('/twice')).toHaveLength(2);
  expect(dead.subject).toBe('twice');
  expect(dead.data).toMatchObject({ account: 'retryco', destinationId: 'twice', target: `${receiver.url}/twice`, eventId: 'r-1', eventType: 'test.op', attempts: 2, suppressed: 0 });
});

test('a death decided where rate control brings deferred deliveries forward is announced too (the deps the limiter uses carry the events)', async () => {
  // A delivery deferred by rate control, due in an hour, whose destination is gone: brought
  // forward, the pump's dispatch finds no destination and makes it DEAD.
  const destinationId = 'retryco_gone';
  const event = { attributes: { specversion: '1.0' as const, id: 'g-1', source: SOURCE, type: 'test.op', heraldaccount: 'retryco' }, data: Buffer.from('{"id":"g-1"}') };
  await stack.runtime.deliveries.put({
    id: `${destinationId}.g-1`,
    destinationId,
    eventId: 'g-1',
    eventSource: SOURCE,
    eventType: 'test.op',
    status: 'PENDING',
    attempts: 0,
    rateDeferred: true,
    availableAt: new Date(Date.now() + 3_600_000).toISOString(),
    event,
  });
  // What the limiter's advancer runs on a grant: bringForward on the runtime's pump deps.
  expect(await bringForward(pumpDeps(stack.runtime), destinationId, 1)).toMatchObject({ abandoned: 1 });
  const dead = await eventually('the dead event of gone at /retryco-ops', async () => ofType(operationalAt('/retryco-ops', OPS_SECRET), 'herald.delivery.dead').find((e) => e.data.destinationId === 'gone'));
  expect(dead.data).toMatchObject({ account: 'retryco', destinationId: 'gone', eventId: 'g-1', eventType: 'test.op' });
});
