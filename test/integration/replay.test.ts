import { PubSub } from '@google-cloud/pubsub';
import { Webhook } from 'standardwebhooks';
import { suspendDestination } from '../../shared/app/delivery/suspend-and-reactivate';
import { CliRun, runCli } from '../support/cli-harness';
import { toPubSubMessage } from '../../shared/domain/events/cloudevents-pubsub';
import { DeliveryRecord, deliveryId } from '../../shared/domain/retry/delivery';
import { eventKey } from '../../shared/domain/events/event';
import type { ReplayItem, ReplayView } from '../../shared/domain/replay/replay';
import { suspensionDeps } from '../../shared/runtime/delivery-deps';
import { sharedLaneFor } from '../../shared/topology';
import { eventually } from '../support/eventually';
import { Receiver, ReceivedRequest } from '../support/receiver';
import { startTestStack, TestStack } from '../support/stack';
import { SubscriptionTap, TappedMessage } from '../support/subscription-tap';

/**
 * Issue 6 on the emulators: dead letters for three destinations and three event types,
 * replayed by window, destination and type through the `replay` function (a message on the
 * replay topic, published by POST /admin/replays or straight onto the topic, or by the CLI).
 *
 * A custom policy of two attempts, 10 s apart divided by HERALD_TIME_SCALE=100, makes every
 * event die in a fraction of a second while its receiver answers 500. An extra subscription
 * on the dead-letter topic (the audit tap) sees a copy of every dead letter without taking
 * them from `<prefix>-dead-letter-hold`, which replay reads.
 */
const RUN = Date.now().toString(36);
const PROJECT = `replay-${RUN}`;
const SOURCE = '/replay-test';
const DESTINATIONS = ['alpha', 'beta', 'gamma'] as const;
type Dest = (typeof DESTINATIONS)[number];
const FIRST = [
  ['a1', 'test.order.created'],
  ['a2', 'test.order.paid'],
  ['a3', 'test.user.created'],
] as const;
const SECOND = [
  ['b1', 'test.order.created'],
  ['b2', 'test.order.paid'],
  ['b3', 'test.user.created'],
] as const;
const POLICY = { retryOn: { statuses: ['5xx'] }, backoff: { kind: 'fixed', delaysMs: [1000] }, maxAttempts: 2 };

/** Per destination: the status its receiver answers now. */
const answer: Record<string, number> = { '/alpha': 500, '/beta': 500, '/gamma': 500 };
const receiver = new Receiver((req) => ({ status: answer[req.path] ?? 204 }));

let stack: TestStack;
let audit: SubscriptionTap;
const secrets: Partial<Record<Dest, string>> = {};
/** The first dead letter's time of the second batch: the window [since, …) that selects it alone. */
let between = '';
let startedAt = '';

const pause = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const deliveryOf = (destination: string, id: string) => deliveryId(destination, eventKey({ source: SOURCE, id }));
const record = (destination: string, id: string) => stack.runtime.deliveries.get(deliveryOf(destination, id));
const requestsFor = (destination: Dest, id?: string): ReceivedRequest[] => receiver.on(`/${destination}`).filter((r) => id === undefined || r.headers['ce-id'] === id);
const deadLettersOf = (destination: string, id: string): TappedMessage[] =>
  audit.received.filter((m) => m.attributes['herald-destination'] === destination && m.attributes['ce-id'] === id);

async function publish(id: string, type: string): Promise<void> {
  const res = await stack.ingest({ 'ce-id': id, 'ce-source': SOURCE, 'ce-type': type, 'ce-specversion': '1.0', 'content-type': 'application/json' }, `{"n":"${id}"}`);
  expect(res.status).toBe(202);
}

function settled(destination: string, id: string, status: DeliveryRecord['status']): Promise<DeliveryRecord> {
  return eventually(`${destination}/${id} to be ${status}`, async () => {
    const r = await record(destination, id);
    return r?.status === status ? r : undefined;
  });
}

/** POST /admin/replays, then the report once the replay has ended. */
async function replay(request: Record<string, unknown>): Promise<ReplayView> {
  const res = await stack.admin('POST', '/replays', request);
  expect(res.status).toBe(202);
  return finished((res.body as { id: string }).id);
}

function finished(id: string, timeoutMs = 40_000): Promise<ReplayView> {
  return eventually(
    `replay ${id} to end`,
    async () => {
      const res = await stack.admin('GET', `/replays/${id}`);
      const body = res.body as ReplayView;
      return res.status === 200 && ['done', 'incomplete', 'failed', 'rejected'].includes(body.status) ? body : undefined;
    },
    timeoutMs,
    200,
  );
}

const keyOf = (i: Pick<ReplayItem, 'destination' | 'eventId'>) => `${i.destination}/${i.eventId}`;

function verifySignature(req: ReceivedRequest, secret: string): void {
  new Webhook(secret).verify(req.body, req.headers as Record<string, string>, { jsonParse: false });
}

/** Publishes a raw message on the replay topic, as a producer of triggers would. */
async function publishTrigger(data: string): Promise<string> {
  const pubsub = new PubSub({ projectId: PROJECT });
  try {
    return await pubsub.topic(stack.runtime.topology.topics.replay.name).publishMessage({ data: Buffer.from(data) });
  } finally {
    await pubsub.close();
  }
}

function herald(argv: string[]): Promise<CliRun> {
  return runCli(argv, { HERALD_URL: stack.url, HERALD_ADMIN_TOKEN: stack.config.adminToken, HERALD_INGEST_TOKEN: stack.config.ingestToken });
}

beforeAll(async () => {
  await receiver.start();
  stack = await startTestStack(PROJECT, { HERALD_TIME_SCALE: '100', HERALD_PUMP_INTERVAL_MS: '100' });
  audit = await SubscriptionTap.create(PROJECT, `replay-test-audit-${RUN}`, stack.runtime.topology.topics.deadLetter.name);
  for (const id of DESTINATIONS) {
    const res = await stack.admin('PUT', `/destinations/${id}`, { url: `${receiver.url}/${id}`, eventTypes: ['test.*'], policy: POLICY });
    expect(res.status).toBe(201);
    secrets[id] = (res.body as { secret: string }).secret;
  }
  startedAt = new Date().toISOString();
});

afterAll(async () => {
  await audit?.close();
  await stack?.stop({ purge: true });
  await receiver.stop();
});

test('every event dies for every destination: 18 dead deliveries and a message Herald rejected, on the dead-letter topic', async () => {
  for (const [id, type] of FIRST) await publish(id, type);
  for (const d of DESTINATIONS) for (const [id] of FIRST) await settled(d, id, 'DEAD');
  await eventually('the first 9 dead letters', () => (audit.received.length >= 9 ? true : undefined));
  await pause(50);
  between = new Date().toISOString();
  await pause(50);

  for (const [id, type] of SECOND) await publish(id, type);
  // A foreign message on alpha's lane, of a type alpha does not take: rejected, no delivery.
  const pubsub = new PubSub({ projectId: PROJECT });
  const event = { attributes: { specversion: '1.0' as const, id: 'x1', source: SOURCE, type: 'other.thing' }, data: Buffer.from('{}') };
  await pubsub.topic(sharedLaneFor('alpha', 'first', stack.runtime.names)).publishMessage(toPubSubMessage(event, { destination: 'alpha' }));
  await pubsub.close();
  for (const d of DESTINATIONS) for (const [id] of SECOND) await settled(d, id, 'DEAD');

  await eventually('19 dead letters', () => (audit.received.length >= 19 ? true : undefined));
  const rejected = audit.received.find((m) => m.attributes['ce-id'] === 'x1')!;
  expect(rejected.attributes).toMatchObject({ 'herald-destination': 'alpha', 'herald-reason': 'type-unsubscribed' });
  expect(rejected.attributes['herald-delivery-id']).toBeUndefined();
  for (const d of DESTINATIONS) for (const [id] of [...FIRST, ...SECOND]) expect(requestsFor(d, id)).toHaveLength(2);
});

test('a dry run lists what a replay would send and changes nothing', async () => {
  const before = receiver.requests.length;
  const report = await replay({ destination: 'alpha', since: between, eventTypes: ['test.order.*'], dryRun: true });
  expect(report).toMatchObject({ status: 'done', dryRun: true, matched: 2, wouldRedeliver: 2, redelivered: 0, skipped: 0, failed: 0, via: 'admin' });
  expect(report.items.map(keyOf).sort()).toEqual(['alpha/b1', 'alpha/b2']);
  expect(report.items.every((i) => i.outcome === 'would-redeliver' && i.deliveryId === deliveryOf('alpha', i.eventId!) && !i.removed)).toBe(true);
  expect(report.items.every((i) => i.deadLetteredAt >= between)).toBe(true);
  await pause(500);
  expect(receiver.requests.length).toBe(before);
  for (const id of ['b1', 'b2']) expect((await record('alpha', id))!.status).toBe('DEAD');
});

test("one destination's window and types: the receiver gets exactly those events, once, signed, with their webhook-id", async () => {
  answer['/alpha'] = 204;
  const report = await replay({ destination: 'alpha', since: between, eventTypes: ['test.order.*'] });
  expect(report).toMatchObject({ status: 'done', ended: 'drained', matched: 2, redelivered: 2, skipped: 0, failed: 0, runs: 1 });
  expect(report.items.map((i) => [keyOf(i), i.outcome, i.removed]).sort()).toEqual([
    ['alpha/b1', 'redelivered', true],
    ['alpha/b2', 'redelivered', true],
  ]);
  expect(report.startedAt! >= report.createdAt).toBe(true);
  expect(report.endedAt! >= report.startedAt!).toBe(true);

  for (const id of ['b1', 'b2']) {
    const delivered = await settled('alpha', id, 'DELIVERED');
    expect(delivered).toMatchObject({ attempts: 1, replays: [{ replayId: report.id, attempts: 2, lastError: { status: 500 } }] });
  }
  await pause(1000);
  for (const id of ['b1', 'b2']) {
    const attempts = requestsFor('alpha', id);
    expect(attempts).toHaveLength(3);
    verifySignature(attempts[2]!, secrets.alpha!);
    expect(new Set(attempts.map((r) => r.headers['webhook-id'])).size).toBe(1);
  }
  // Nothing else reached alpha: not its other events, not its other types.
  for (const id of ['a1', 'a2', 'a3', 'b3']) expect(requestsFor('alpha', id)).toHaveLength(2);
  // The replay's log: a structured line with the counts.
  const line = stack.logs.find((l) => l.replayId === report.id && /^replay done/.test(String(l.message)));
  expect(line).toMatchObject({ severity: 'INFO', matched: 2, redelivered: 2, skipped: 0, failed: 0 });
});

test('a second identical replay redelivers nothing', async () => {
  const before = receiver.requests.length;
  const report = await replay({ destination: 'alpha', since: between, eventTypes: ['test.order.*'] });
  expect(report).toMatchObject({ status: 'done', matched: 0, redelivered: 0 });
  await pause(500);
  expect(receiver.requests.length).toBe(before);
});

test('everything not replayed is still on the dead-letter topic, the rejected message too', async () => {
  const report = await replay({ dryRun: true });
  const expected = DESTINATIONS.flatMap((d) => [...FIRST, ...SECOND].map(([id]) => `${d}/${id}`)).filter((k) => k !== 'alpha/b1' && k !== 'alpha/b2');
  const replayable = report.items.filter((i) => i.outcome === 'would-redeliver');
  expect(replayable.map(keyOf).sort()).toEqual(expected.sort());
  const skipped = report.items.filter((i) => i.outcome === 'skipped');
  expect(skipped).toHaveLength(1);
  expect(skipped[0]).toMatchObject({ destination: 'alpha', eventId: 'x1', reason: 'not-replayable', removed: false });
  expect(skipped[0]!.detail).toMatch(/Herald rejected this message \(type-unsubscribed/);
  expect(report).toMatchObject({ matched: 17, wouldRedeliver: 16, skipped: 1, skippedBy: { 'not-replayable': 1 } });
});

test('a replayed event that fails again goes through its policy and is dead-lettered again, its history kept', async () => {
  const before = audit.received.length;
  const report = await replay({ destination: 'beta', since: between });
  expect(report).toMatchObject({ status: 'done', matched: 3, redelivered: 3 });
  for (const [id] of SECOND) {
    const dead = await settled('beta', id, 'DEAD');
    expect(dead.attempts).toBe(2);
    expect(dead.replays).toEqual([expect.objectContaining({ replayId: report.id, attempts: 2 })]);
    expect(requestsFor('beta', id)).toHaveLength(4);
  }
  await eventually('3 new dead letters for beta', () => (audit.received.length >= before + 3 ? true : undefined));
  for (const [id] of SECOND) {
    const again = deadLettersOf('beta', id).at(-1)!;
    expect(again.attributes).toMatchObject({ 'herald-replays': '1', 'herald-replay-id': report.id, 'herald-attempts-before-replay': '2', 'herald-attempts': '2' });
  }
  // On the topic again: a dry run finds them.
  const dry = await replay({ destination: 'beta', since: between, dryRun: true });
  expect(dry.items.map(keyOf).sort()).toEqual(['beta/b1', 'beta/b2', 'beta/b3']);
});

test("replayed deliveries keep to the destination's suspension: QUEUED until it is reactivated", async () => {
  answer['/gamma'] = 204;
  await suspendDestination(suspensionDeps(stack.runtime), 'gamma', { cause: 'criteria', reason: 'suspended by the test' });
  const report = await replay({ destination: 'gamma', since: between });
  expect(report).toMatchObject({ matched: 3, redelivered: 3 });
  expect(report.items.every((i) => /suspended/.test(i.detail ?? ''))).toBe(true);
  for (const [id] of SECOND) await settled('gamma', id, 'QUEUED');
  await pause(500);
  for (const [id] of SECOND) expect(requestsFor('gamma', id)).toHaveLength(2);

  expect((await stack.admin('POST', '/destinations/gamma/reactivate')).status).toBe(200);
  for (const [id] of SECOND) await settled('gamma', id, 'DELIVERED');
  for (const [id] of SECOND) expect(requestsFor('gamma', id)).toHaveLength(3);
});

test('a malformed replay message is rejected once, with a clear log line and a report, and not retried', async () => {
  const messageId = await publishTrigger('{"destination": "Not Valid", "since": "yesterday", "colour": "red"}');
  const line = await eventually('the rejection log line', () => stack.logs.find((l) => l.messageId === messageId && l.severity === 'ERROR'));
  expect(line.message).toMatch(/^replay request rejected: /);
  for (const problem of [/destination must be a destination id/, /since must be an ISO 8601 timestamp/, /unknown field colour/]) expect(line.message).toMatch(problem);
  const report = await finished(messageId);
  expect(report).toMatchObject({ status: 'rejected', via: 'topic', matched: 0, triggerMessageId: messageId });
  expect(report.issues!.map((i) => i.path).sort()).toEqual(['', 'destination', 'since']);

  const notJson = await publishTrigger('replay everything please');
  await eventually('the second rejection', () => stack.logs.find((l) => l.messageId === notJson && l.severity === 'ERROR'));
  // Acked (204): the emulator would push a refused message again every second.
  await pause(3000);
  expect(stack.logs.filter((l) => l.messageId === messageId && /replay/.test(String(l.message)))).toHaveLength(1);
  expect(stack.logs.filter((l) => l.messageId === notJson && /replay/.test(String(l.message)))).toHaveLength(1);
});

test('a trigger published straight onto the topic runs once; the same id again is ignored', async () => {
  const id = `direct-${RUN}`;
  const first = await publishTrigger(JSON.stringify({ id, destination: 'gamma', until: between, dryRun: true }));
  const report = await finished(id);
  expect(report).toMatchObject({ status: 'done', via: 'topic', triggerMessageId: first, matched: 3, wouldRedeliver: 3, runs: 1 });
  const second = await publishTrigger(JSON.stringify({ id, destination: 'alpha' }));
  await eventually('the duplicate trigger to be ignored', () => stack.logs.find((l) => l.messageId === second && /replay trigger ignored/.test(String(l.message))));
  expect((await stack.admin('GET', `/replays/${id}`)).body).toEqual(report);

  const listed = await stack.admin('GET', '/replays?limit=3');
  expect(listed.status).toBe(200);
  const replays = (listed.body as { replays: ReplayView[] }).replays;
  expect(replays).toHaveLength(3);
  expect(replays[0]!.id).toBe(id);
  expect(replays[0]).not.toHaveProperty('items');
  expect(replays.map((r) => r.createdAt)).toEqual([...replays.map((r) => r.createdAt)].sort().reverse());
});

test('herald replay: a dry run prints the matching dead letters; then replays them and prints the report', async () => {
  const dry = await herald(['replay', '--destination', 'gamma', '--since', startedAt, '--until', between, '--dry-run', '--json']);
  expect(dry.stderr).not.toMatch(/herald: /);
  expect(dry.code).toBe(0);
  const dryReport = JSON.parse(dry.stdout) as ReplayView;
  expect(dryReport).toMatchObject({ status: 'done', dryRun: true, matched: 3, wouldRedeliver: 3 });
  expect(dryReport.items.map(keyOf).sort()).toEqual(['gamma/a1', 'gamma/a2', 'gamma/a3']);

  const table = await herald(['replay', '--destination', 'gamma', '--since', startedAt, '--until', between, '--type', 'test.order.*', '--dry-run']);
  expect(table.code).toBe(0);
  expect(table.stdout).toMatch(/DELIVERY ID +EVENT ID +TYPE +DESTINATION +DEAD-LETTERED AT +OUTCOME/);
  expect(table.stdout).toMatch(/a1 +test\.order\.created +gamma/);
  expect(table.stdout).not.toMatch(/test\.user\.created/);

  const real = await herald(['replay', '--destination', 'gamma', '--since', startedAt, '--until', between]);
  expect(real.code).toBe(0);
  expect(real.stdout).toMatch(/replay .* done: 3 matched, 3 redelivered, 0 skipped, 0 failed/);
  expect(real.stderr).toMatch(/replay .*: (queued|running|done)/);
  for (const [id] of FIRST) await settled('gamma', id, 'DELIVERED');
  for (const [id] of FIRST) {
    expect(requestsFor('gamma', id)).toHaveLength(3);
    verifySignature(requestsFor('gamma', id)[2]!, secrets.gamma!);
  }
});

test("an account's key replays its own dead letters alone, and sees only its own replays", async () => {
  answer['/tenant-alpha'] = 500;
  expect((await stack.admin('POST', '/accounts', { id: 'tenant', name: 'Tenant' })).status).toBe(201);
  const key = ((await stack.admin('POST', '/accounts/tenant/keys', { name: 'replayer' })).body as { key: string }).key;
  const asTenant = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${stack.url}/admin${path}`, { method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  // The same destination id as default's `alpha`, in another account.
  expect((await asTenant('PUT', '/destinations/alpha', { url: `${receiver.url}/tenant-alpha`, eventTypes: ['test.*'], policy: POLICY })).status).toBe(201);
  const res = await stack.ingest({ 'ce-id': 't1', 'ce-source': SOURCE, 'ce-type': 'test.order.created', 'ce-specversion': '1.0', 'ce-heraldaccount': 'tenant', 'content-type': 'application/json' }, '{"n":"t1"}');
  expect(res.status).toBe(202);
  await settled('tenant_alpha', 't1', 'DEAD');
  await eventually("tenant's dead letter", () => (deadLettersOf('tenant_alpha', 't1').length > 0 ? true : undefined));
  answer['/tenant-alpha'] = 204;

  const posted = await asTenant('POST', '/replays', {});
  expect(posted).toMatchObject({ status: 202, body: { request: { account: 'tenant' } } });
  const id = posted.body.id as string;
  expect(posted.body.report).toBe(`/admin/accounts/tenant/replays/${id}`);
  expect(await asTenant('POST', '/replays', { account: 'default' })).toMatchObject({ status: 400, body: { issues: [{ path: 'account' }] } });
  const report = await eventually('the tenant replay to end', async () => {
    const r = await asTenant('GET', `/replays/${id}`);
    return ['done', 'incomplete', 'failed'].includes(r.body.status as string) ? (r.body as unknown as ReplayView) : undefined;
  }, 40_000, 200);
  // Only its own: default's alpha (and beta, gamma) dead letters were read past, not selected.
  expect(report).toMatchObject({ status: 'done', matched: 1, redelivered: 1 });
  expect(report.items.map(keyOf)).toEqual(['alpha/t1']);
  await settled('tenant_alpha', 't1', 'DELIVERED');
  expect(receiver.on('/tenant-alpha').filter((r) => r.headers['ce-id'] === 't1')).toHaveLength(3);

  const everything = await replay({ dryRun: true });
  expect(everything.items.some((i) => i.destination === 'alpha')).toBe(true);
  expect(everything.items.some((i) => i.destination === 'tenant_alpha')).toBe(false);
  // The operator's replays are not the tenant's to see; its own are, by either path.
  expect((await asTenant('GET', `/replays/${everything.id}`)).status).toBe(404);
  expect(((await asTenant('GET', '/replays')).body.replays as { id: string }[]).map((r) => r.id)).toEqual([id]);
  expect(((await stack.admin('GET', '/accounts/tenant/replays')).body as { replays: { id: string }[] }).replays.map((r) => r.id)).toEqual([id]);
  expect(((await stack.admin('GET', '/replays')).body as { replays: { id: string }[] }).replays.map((r) => r.id)).toContain(id);
});

test("two accounts replay at once under the same id: neither is refused, each sees its own, they take turns", async () => {
  for (const id of ['turn-a', 'turn-b']) expect((await stack.admin('POST', '/accounts', { id, name: id })).status).toBe(201);
  // A third account's replay has the runner, so both stay queued for as long as the test needs:
  // a dry run over an empty dead-letter topic may otherwise end before the next request is made.
  const HELD = 'turn-held/nightly';
  const now = new Date();
  expect(await stack.runtime.replays.takeRunner(HELD, new Date(now.getTime() + 60_000), now, 'turn-held')).toEqual({ ok: true });
  const a = await stack.admin('POST', '/accounts/turn-a/replays', { id: 'nightly', dryRun: true });
  const b = await stack.admin('POST', '/accounts/turn-b/replays', { id: 'nightly', dryRun: true });
  expect(a).toMatchObject({ status: 202, body: { id: 'nightly', report: '/admin/accounts/turn-a/replays/nightly' } });
  expect(b).toMatchObject({ status: 202, body: { id: 'nightly', report: '/admin/accounts/turn-b/replays/nightly' } });
  // A second replay of one account while its first is under way is refused; the other account's was not.
  const again = await stack.admin('POST', '/accounts/turn-a/replays', { dryRun: true });
  expect(again).toMatchObject({ status: 409, body: { error: expect.stringContaining('replay nightly is queued') } });
  await stack.runtime.replays.releaseRunner(HELD);
  for (const account of ['turn-a', 'turn-b']) {
    const report = await eventually(`${account}'s replay to end`, async () => {
      const r = await stack.admin('GET', `/accounts/${account}/replays/nightly`);
      const body = r.body as ReplayView;
      return ['done', 'incomplete', 'failed', 'rejected'].includes(body.status) ? body : undefined;
    }, 90_000, 250);
    expect(report).toMatchObject({ id: 'nightly', status: 'done', request: { account } });
  }
  // The operator asks by account when two used one id.
  expect((await stack.admin('GET', '/replays/nightly')).status).toBe(409);
});
