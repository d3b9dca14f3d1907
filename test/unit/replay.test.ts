import { MemoryDeadLetterQueue } from '../../shared/adapters/memory/dead-letter-queue';
import { MemoryDeliveryStore } from '../../shared/adapters/memory/delivery-store';
import { MemoryReplayStore } from '../../shared/adapters/memory/replay-store';
import { ReplayDeps, runReplay } from '../../shared/app/retry/replay-run';
import { publishBundled } from '../../shared/app/lanes/lanes';
import { handleReplayTrigger } from '../../shared/app/retry/replay-trigger';
import { getReplay, listReplays, postReplay } from '../../shared/app/admin/replays-admin';
import { PubSubMessage, PushDelivery, toPubSubMessage } from '../../shared/domain/events/cloudevents-pubsub';
import { DeliveryRecord } from '../../shared/domain/retry/delivery';
import { HeraldEvent } from '../../shared/domain/events/event';
import { queuedReport, ReplayReport, ReplayView } from '../../shared/domain/replay/replay';
import { createLogger } from '../../shared/log';
import { Clock } from '../../shared/ports/clock';
import { DeliveryStore } from '../../shared/ports/deliveries';
import { MemoryDestinationStore } from '../../shared/adapters/memory/destination-store';
import { webhookDestination } from '../support/destinations';

/** The replay use case on memory stores and a memory dead-letter subscription. */

const T0 = new Date('2026-11-23T14:00:00.000Z');
/** When the replays run: after every dead letter of the tests (a run selects only those older than itself). */
const NOW = new Date('2026-11-23T15:00:00.000Z');

class TestClock implements Clock {
  constructor(
    public t = NOW.getTime(),
    /** Added on every read: lets a test run out of time. */
    private readonly step = 0,
  ) {}
  now(): Date {
    const now = new Date(this.t);
    this.t += this.step;
    return now;
  }
}

function eventOf(id: string, type = 'com.example.order.created'): HeraldEvent {
  return { attributes: { specversion: '1.0', id, source: '/shop', type, time: '2026-11-23T13:00:00.000Z' }, data: Buffer.from(`{"n":"${id}"}`) };
}

function deadRecord(destination: string, id: string, type?: string, extra: Partial<DeliveryRecord> = {}): DeliveryRecord {
  const event = eventOf(id, type);
  return {
    id: `${destination}.key-${id}`,
    destinationId: destination,
    eventId: id,
    eventSource: '/shop',
    eventType: event.attributes.type,
    status: 'DEAD',
    attempts: 3,
    reason: 'HTTP 500 on attempt 3',
    publishedAt: '2026-11-23T13:00:00.000Z',
    firstAttemptAt: '2026-11-23T13:00:01.000Z',
    lastAttemptAt: '2026-11-23T13:00:31.000Z',
    lastError: { at: '2026-11-23T13:00:31.000Z', status: 500, error: 'HTTP 500' },
    event,
    ...extra,
  };
}

/** What publishDeadDelivery puts on the dead-letter topic for the record. */
function deadLetterOf(record: DeliveryRecord): PubSubMessage {
  return toPubSubMessage(record.event!, { destination: record.destinationId, 'delivery-id': record.id, attempts: String(record.attempts), reason: record.reason ?? 'dead' });
}

async function setup(options: { clock?: TestClock; runMs?: number; deliveries?: DeliveryStore } = {}) {
  const destinations = new MemoryDestinationStore();
  for (const id of ['orders', 'billing']) await destinations.put(webhookDestination(id));
  const memoryDeliveries = new MemoryDeliveryStore();
  const replays = new MemoryReplayStore();
  const clock = options.clock ?? new TestClock();
  const queue = new MemoryDeadLetterQueue(() => clock.t);
  const logs: Record<string, unknown>[] = [];
  const deps: ReplayDeps = {
    replays,
    deadLetters: queue,
    deliveries: options.deliveries ?? memoryDeliveries,
    destinations,
    clock,
    log: createLogger({ level: 'DEBUG', write: (line) => logs.push(JSON.parse(line) as Record<string, unknown>) }),
    runMs: options.runMs ?? 60_000,
    leaseMs: 600_000,
    pullBatch: 3,
    progressEveryMs: 0,
  };
  /** A DEAD record and its dead letter, dead-lettered at T0 + `minute` minutes. */
  const dead = async (destination: string, id: string, minute: number, type?: string, extra: Partial<DeliveryRecord> = {}) => {
    const record = deadRecord(destination, id, type, extra);
    await memoryDeliveries.put(record);
    return queue.add(deadLetterOf(record), new Date(T0.getTime() + minute * 60_000));
  };
  return { deps, queue, deliveries: memoryDeliveries, replays, destinations, clock, logs, dead };
}

const at = (minute: number) => new Date(T0.getTime() + minute * 60_000).toISOString();

test('replays exactly the selected dead letters to their own destination, acks them, leaves the rest untouched', async () => {
  const { deps, queue, deliveries, dead } = await setup();
  const o1 = await dead('orders', 'o1', 1);
  const o2 = await dead('orders', 'o2', 2, 'com.example.user.created');
  const o3 = await dead('orders', 'o3', 3);
  const o4 = await dead('orders', 'o4', 10);
  const b1 = await dead('billing', 'b1', 2);

  const outcome = await runReplay(deps, { id: 'r1', request: { destination: 'orders', since: at(0), until: at(5), eventTypes: ['com.example.order.*'] }, messageId: '99' });

  expect(outcome.kind).toBe('ran');
  expect(outcome.report).toMatchObject({ status: 'done', ended: 'drained', scanned: 5, matched: 2, redelivered: 2, skipped: 0, failed: 0, runs: 1 });
  expect(outcome.report.items.map((i) => [i.deliveryId, i.outcome, i.removed])).toEqual([
    ['orders.key-o1', 'redelivered', true],
    ['orders.key-o3', 'redelivered', true],
  ]);
  expect(queue.acked.sort()).toEqual([o1, o3].sort());
  expect(queue.remaining().sort()).toEqual([o2, o4, b1].sort());
  const replayed = await deliveries.get('orders.key-o1');
  expect(replayed).toMatchObject({ status: 'PENDING', attempts: 0, availableAt: NOW.toISOString(), replays: [{ replayId: 'r1', attempts: 3, firstAttemptAt: '2026-11-23T13:00:01.000Z', lastError: { status: 500 } }] });
  for (const id of ['orders.key-o2', 'orders.key-o4', 'billing.key-b1']) expect((await deliveries.get(id))!.status).toBe('DEAD');
});

test('dead letters that reach the topic after the replay started are left for the next one', async () => {
  const { deps, queue, dead } = await setup();
  await dead('orders', 'o1', 1);
  // Dead-lettered while the replay runs (say, a replayed event that failed again).
  const late = await dead('orders', 'o2', 61);
  const { report } = await runReplay(deps, { id: 'r1', request: { destination: 'orders', until: at(120) }, messageId: '1' });
  expect(report).toMatchObject({ scanned: 2, matched: 1, redelivered: 1 });
  expect(queue.remaining()).toEqual([late]);
});

test('a second identical replay finds nothing more to redeliver', async () => {
  const { deps, dead } = await setup();
  await dead('orders', 'o1', 1);
  await dead('orders', 'o2', 2);
  const request = { destination: 'orders' };
  expect((await runReplay(deps, { id: 'r1', request, messageId: '1' })).report).toMatchObject({ matched: 2, redelivered: 2 });
  expect((await runReplay(deps, { id: 'r2', request, messageId: '2' })).report).toMatchObject({ status: 'done', matched: 0, redelivered: 0 });
});

test('stale copies (the record moved on) are skipped and acked; a missing record or destination is skipped and kept', async () => {
  const { deps, queue, deliveries, destinations, dead } = await setup();
  const delivered = await dead('orders', 'o1', 1);
  await deliveries.put({ ...deadRecord('orders', 'o1'), status: 'DELIVERED' });
  const twice = await dead('orders', 'o2', 2);
  const copy = queue.add(deadLetterOf(deadRecord('orders', 'o2')), new Date(T0.getTime() + 3 * 60_000));
  const orphan = queue.add(deadLetterOf(deadRecord('orders', 'o3')), new Date(T0.getTime() + 60_000));
  await destinations.put(webhookDestination('gone'));
  const gone = await dead('gone', 'g1', 1);
  await destinations.delete('gone');
  await destinations.put({ ...webhookDestination('narrow'), eventTypes: ['com.example.user.*'] });
  const narrowed = await dead('narrow', 'n1', 1);

  const { report } = await runReplay(deps, { id: 'r1', request: {}, messageId: '1' });

  expect(report).toMatchObject({ matched: 6, redelivered: 1, skipped: 5, skippedBy: { 'not-dead': 1, duplicate: 1, 'no-record': 1, 'destination-deleted': 1, 'type-unsubscribed': 1 } });
  const byMessage = Object.fromEntries(report.items.map((i) => [i.messageId, [i.outcome, i.reason, i.removed]]));
  expect(byMessage[delivered]).toEqual(['skipped', 'not-dead', true]);
  expect(byMessage[twice]).toEqual(['redelivered', undefined, true]);
  expect(byMessage[copy]).toEqual(['skipped', 'duplicate', true]);
  expect(byMessage[orphan]).toEqual(['skipped', 'no-record', false]);
  expect(byMessage[gone]).toEqual(['skipped', 'destination-deleted', false]);
  expect(byMessage[narrowed]).toEqual(['skipped', 'type-unsubscribed', false]);
  expect(queue.remaining().sort()).toEqual([orphan, gone, narrowed].sort());
});

test('messages Herald rejected without a delivery are counted as skipped and never removed', async () => {
  const { deps, queue } = await setup();
  const rejected = queue.add(
    { data: Buffer.from('not an event'), attributes: { 'herald-destination': 'orders', 'herald-reason': 'invalid-lane-message', 'herald-error': 'no ce-id' } },
    new Date(T0.getTime() + 60_000),
  );
  const { report } = await runReplay(deps, { id: 'r1', request: { destination: 'orders' }, messageId: '1' });
  expect(report).toMatchObject({ matched: 1, skipped: 1, skippedBy: { 'not-replayable': 1 } });
  expect(report.items[0]!.detail).toMatch(/Herald rejected this message \(invalid-lane-message: no ce-id\)/);
  expect(queue.remaining()).toEqual([rejected]);
});

test('a dry run lists what would be replayed and changes nothing', async () => {
  const { deps, queue, deliveries, dead } = await setup();
  const o1 = await dead('orders', 'o1', 1);
  await dead('billing', 'b1', 1);
  const before = await deliveries.get('orders.key-o1');

  const { report } = await runReplay(deps, { id: 'dry', request: { destination: 'orders', dryRun: true }, messageId: '1' });

  expect(report).toMatchObject({ status: 'done', dryRun: true, matched: 1, wouldRedeliver: 1, redelivered: 0 });
  expect(report.items).toEqual([
    { messageId: o1, deadLetteredAt: at(1), destination: 'orders', deliveryId: 'orders.key-o1', eventId: 'o1', eventSource: '/shop', eventType: 'com.example.order.created', outcome: 'would-redeliver', removed: false },
  ]);
  expect(queue.acked).toEqual([]);
  expect(queue.remaining()).toHaveLength(2);
  expect(await deliveries.get('orders.key-o1')).toEqual(before);
});

test('the limit stops the run; what was not reached stays for the next run', async () => {
  const { deps, queue, dead } = await setup();
  for (let i = 1; i <= 5; i++) await dead('orders', `o${i}`, i);
  const first = await runReplay(deps, { id: 'r1', request: { limit: 2 }, messageId: '1' });
  expect(first.report).toMatchObject({ status: 'done', ended: 'limit', matched: 2, redelivered: 2 });
  expect(queue.remaining()).toHaveLength(3);
  const rest = await runReplay(deps, { id: 'r2', request: {}, messageId: '2' });
  expect(rest.report).toMatchObject({ matched: 3, redelivered: 3 });
});

test('a run out of time stops, reports incomplete and releases what it held; running the request again continues', async () => {
  // Every clock read advances 2 s; the run may last 10 s: it stops after a page or two.
  const clock = new TestClock(NOW.getTime(), 2_000);
  const { deps, queue, dead, logs } = await setup({ clock, runMs: 10_000 });
  for (let i = 1; i <= 12; i++) await dead('orders', `o${i}`, i);

  const first = await runReplay(deps, { id: 'r1', request: { destination: 'orders' }, messageId: '1' });
  expect(first.report).toMatchObject({ status: 'incomplete', ended: 'time-up' });
  expect(first.report.redelivered).toBeGreaterThan(0);
  expect(first.report.redelivered).toBeLessThan(12);
  expect(queue.remaining()).toHaveLength(12 - first.report.redelivered);
  expect(logs.some((l) => l.severity === 'WARNING' && /replay incomplete.*run the same request again/.test(String(l.message)))).toBe(true);

  let total = first.report.redelivered;
  for (let run = 2; total < 12 && run < 10; run++) total += (await runReplay(deps, { id: `r${run}`, request: { destination: 'orders' }, messageId: String(run) })).report.redelivered;
  expect(total).toBe(12);
  expect(queue.remaining()).toEqual([]);
});

test('a trigger delivered again never runs the replay twice; a run that died is taken over after its lease', async () => {
  const { deps, replays, dead, clock } = await setup();
  await dead('orders', 'o1', 1);
  expect((await runReplay(deps, { id: 'r1', request: {}, messageId: '1' })).kind).toBe('ran');
  await dead('orders', 'o2', 2);
  const again = await runReplay(deps, { id: 'r1', request: {}, messageId: '1' });
  expect(again.kind).toBe('duplicate');
  expect((await replays.get('r1'))!.redelivered).toBe(1);

  // A run that died mid-way: its report says running, its lease runs out.
  const report = (await replays.get('r1'))!;
  await replays.create({ ...report, id: 'r2', status: 'running', runningUntil: new Date(clock.t + 1000).toISOString(), runToken: 'dead-run' } as ReplayReport);
  expect((await runReplay(deps, { id: 'r2', request: {}, messageId: '2' })).kind).toBe('duplicate');
  clock.t += 2000;
  const resumed = await runReplay(deps, { id: 'r2', request: {}, messageId: '2' });
  expect(resumed).toMatchObject({ kind: 'ran', report: { status: 'done', runs: 2, redelivered: 2 } });
});

test('store faults fail the item and keep the dead letter; ten in a row fail the replay', async () => {
  const memory = new MemoryDeliveryStore();
  const broken: DeliveryStore = Object.assign(Object.create(memory) as DeliveryStore, {
    update: () => Promise.reject(new Error('firestore unavailable')),
  });
  const { deps, queue, dead, logs } = await setup({ deliveries: broken });
  for (let i = 1; i <= 12; i++) await dead('orders', `o${i}`, i);
  const { report } = await runReplay(deps, { id: 'r1', request: {}, messageId: '1' });
  expect(report).toMatchObject({ status: 'failed', ended: 'error', redelivered: 0 });
  expect(report.failed).toBeGreaterThanOrEqual(10);
  // The report is the account's to read: a generic cause and the id of the log line that holds the store's own words.
  expect(report.error).toMatch(/10 failures in a row \(Herald's storage is busy; error id [0-9a-f-]{36}\)/);
  expect(JSON.stringify(report)).not.toMatch(/firestore unavailable/);
  const errorId = /error id ([0-9a-f-]{36})/.exec(report.error!)![1];
  expect(logs.find((l) => l.errorId === errorId)).toMatchObject({ lastFailure: 'firestore unavailable' });
  expect(queue.remaining()).toHaveLength(12);
});

describe('the trigger message', () => {
  const push = (data: string, messageId = 'msg-1'): PushDelivery => ({
    subscription: 'projects/p/subscriptions/herald-replay-trigger',
    messageId,
    publishTime: NOW,
    message: { data: Buffer.from(data), attributes: {} },
  });

  test('runs under the id it names, or else under its message id', async () => {
    const { deps, replays } = await setup();
    expect(await handleReplayTrigger(deps, push('{"destination":"orders","id":"named"}'))).toMatchObject({ kind: 'ran', report: { id: 'named', triggerMessageId: 'msg-1' } });
    expect(await handleReplayTrigger(deps, push('{"destination":"orders"}', 'msg-2'))).toMatchObject({ kind: 'ran', report: { id: 'msg-2' } });
    expect((await replays.recent(10)).map((r) => r.id).sort()).toEqual(['msg-2', 'named']);
  });

  test('a trigger published straight onto the topic while another replay runs is refused, with a report naming it; nothing is replayed', async () => {
    const { deps, replays, queue, dead, clock } = await setup();
    await dead('orders', 'o1', 1);
    // Replay r1 is running in another function instance: it holds the runner for its lease.
    expect(await replays.takeRunner('r1', new Date(clock.t + 600_000), new Date(clock.t))).toEqual({ ok: true });
    const refused = await handleReplayTrigger(deps, push('{"destination":"orders","id":"direct"}'));
    expect(refused).toMatchObject({ kind: 'refused', report: { id: 'direct', status: 'rejected', error: expect.stringMatching(/^replay r1 was running/) as unknown } });
    expect(queue.remaining()).toHaveLength(1);
    // Once r1 has ended (or its lease ran out), a trigger runs.
    clock.t += 600_001;
    expect(await handleReplayTrigger(deps, push('{"destination":"orders","id":"later"}', 'msg-2'))).toMatchObject({ kind: 'ran', report: { redelivered: 1 } });
    expect(await replays.takeRunner('r9', new Date(clock.t + 1000), new Date(clock.t))).toEqual({ ok: true });
  });

  test('a replay the admin API queued that meets another running is refused, not run beside it', async () => {
    const { deps, replays, dead, clock } = await setup();
    await dead('orders', 'o1', 1);
    await replays.create(queuedReport('queued-one', {}, new Date(clock.t)));
    await replays.takeRunner('r1', new Date(clock.t + 600_000), new Date(clock.t));
    expect(await runReplay(deps, { id: 'queued-one', request: {}, messageId: 'm' })).toMatchObject({ kind: 'refused', report: { status: 'rejected', triggerMessageId: 'm' } });
  });

  test('an invalid request is rejected once: an ERROR line naming each problem, a rejected report, nothing replayed', async () => {
    const { deps, replays, logs, queue, dead } = await setup();
    await dead('orders', 'o1', 1);
    const outcome = await handleReplayTrigger(deps, push('{"destination":"Orders","limit":0,"colour":"red","id":"bad-one"}'));
    expect(outcome).toEqual({ kind: 'rejected', replayId: 'bad-one' });
    const line = logs.find((l) => l.severity === 'ERROR')!;
    expect(line.message).toMatch(/^replay request rejected: destination must be a destination id.*; limit must be from 1 to 100000; unknown field colour/);
    expect(line).toMatchObject({ replayId: 'bad-one', messageId: 'msg-1' });
    expect(await replays.get('bad-one')).toMatchObject({ status: 'rejected', triggerMessageId: 'msg-1', issues: expect.arrayContaining([expect.objectContaining({ path: 'limit' })]) as unknown });
    expect(queue.remaining()).toHaveLength(1);
    expect(await handleReplayTrigger(deps, push('not json', 'msg-3'))).toEqual({ kind: 'rejected', replayId: 'msg-3' });
  });
});

describe('the admin API', () => {
  function adminDeps(base: Awaited<ReturnType<typeof setup>>) {
    const published: { topic: string; data: unknown; attributes: Record<string, string> }[] = [];
    return {
      published,
      deps: {
        replays: base.replays,
        bus: { publish: async (topic: string, m: PubSubMessage) => String(published.push({ topic, data: JSON.parse(m.data.toString()) as unknown, attributes: m.attributes })) },
        replayTopic: 'herald-replay',
        clock: base.clock,
        log: base.deps.log,
      },
    };
  }

  test('POST validates, records the replay as queued and publishes the trigger; GET shows it', async () => {
    const base = await setup();
    const { deps, published } = adminDeps(base);
    const accepted = await postReplay(deps, { destination: 'orders', since: '2026-11-23T13:00:00Z', dryRun: true });
    expect(accepted.kind).toBe('accepted');
    const body = (accepted as { body: { id: string } }).body;
    expect(body).toMatchObject({ status: 'queued', dryRun: true, request: { destination: 'orders', since: '2026-11-23T13:00:00.000Z', dryRun: true } });
    expect(body.id).toMatch(/^replay-20261123-150000-[a-z0-9]{6}$/);
    expect(published).toEqual([{ topic: 'herald-replay', data: { destination: 'orders', since: '2026-11-23T13:00:00.000Z', dryRun: true, id: body.id }, attributes: { 'herald-type': 'herald.replay.requested', 'herald-replay-id': body.id } }]);
    const shown = await getReplay(deps, body.id);
    expect(shown).toMatchObject({ kind: 'ok', body: { id: body.id, status: 'queued', via: 'admin' } });
    expect((shown as { body: ReplayView }).body).not.toHaveProperty('runToken');
  });

  test("POST whose trigger Pub/Sub refuses: 503 with a generic cause, no topic path or Pub/Sub text (the log has them)", async () => {
    const base = await setup();
    const { deps } = adminDeps(base);
    const refusing = { ...deps, replayTopic: 'projects/herald-dev/topics/herald-replay', bus: { publish: () => Promise.reject(new Error('5 NOT_FOUND: Resource not found (resource=projects/herald-dev/topics/herald-replay).')) } };
    const answer = await postReplay(refusing, { id: 'mine' });
    expect(answer).toMatchObject({ kind: 'unavailable', body: { error: expect.stringMatching(/Herald's queue did not take the events.*nothing was replayed: try again/) } });
    const body = JSON.stringify((answer as { body: unknown }).body);
    expect(body).not.toMatch(/projects\/|topics\/|NOT_FOUND|herald-dev/);
    const { errorId } = (answer as { body: { errorId: string } }).body;
    expect(base.logs.find((l) => l.errorId === errorId)).toMatchObject({ error: expect.stringMatching(/NOT_FOUND/) });
    expect(JSON.stringify(await base.replays.get('mine'))).not.toMatch(/projects\/|NOT_FOUND/);
  });

  test('POST refuses a bad request (every problem), an id in use, and a second replay while one runs', async () => {
    const base = await setup();
    const { deps, published } = adminDeps(base);
    const bad = await postReplay(deps, { destination: 'x y', until: 'soon' });
    expect(bad).toMatchObject({ kind: 'invalid', body: { error: 'invalid replay request' } });
    expect((bad as { body: { issues: { path: string }[] } }).body.issues.map((i) => i.path).sort()).toEqual(['destination', 'until']);
    expect((await postReplay(deps, { id: 'mine' })).kind).toBe('accepted');
    expect(await postReplay(deps, { id: 'mine' })).toMatchObject({ kind: 'conflict', body: { error: expect.stringMatching(/already used/) as string } });
    await base.replays.update('mine', (r) => r && { ...r, status: 'running', startedAt: NOW.toISOString(), runningUntil: new Date(NOW.getTime() + 60_000).toISOString() });
    expect(await postReplay(deps, { destination: 'orders' })).toMatchObject({ kind: 'conflict', body: { error: expect.stringMatching(/replay mine is running/) as string } });
    expect(published).toHaveLength(1);
  });

  test('GET /admin/replays lists newest first, without items; limit is validated', async () => {
    const base = await setup();
    for (const [i, id] of ['a', 'b', 'c'].entries()) {
      base.clock.t = NOW.getTime() + i * 1000;
      await runReplay(base.deps, { id, request: {}, messageId: id });
    }
    const listed = await listReplays(base.deps, { limit: '2' });
    expect(listed.kind).toBe('ok');
    const replays = (listed as { body: { replays: Record<string, unknown>[] } }).body.replays;
    expect(replays.map((r) => r.id)).toEqual(['c', 'b']);
    expect(replays[0]).not.toHaveProperty('items');
    expect(await listReplays(base.deps, { limit: '0', page: '2' })).toMatchObject({
      kind: 'invalid',
      body: { issues: [{ path: 'page', message: 'unknown query parameter; use limit' }, { path: 'limit', message: expect.stringMatching(/1 to 100/) as string }] },
    });
    expect(await getReplay(base.deps, 'no/such')).toMatchObject({ kind: 'invalid' });
    expect(await getReplay(base.deps, 'nope')).toMatchObject({ kind: 'not-found' });
  });
});

test("a bundle from the batch lane that Pub/Sub's backstop dead-lettered is reported member by member, as single lane messages are, and kept", async () => {
  const { deps, queue } = await setup();
  const published: PubSubMessage[] = [];
  const lanes = { bus: { publish: async (_t: string, m: PubSubMessage) => String(published.push(m)) }, lanes: { ensureLane: async () => undefined, removeLane: async () => undefined }, names: { prefix: 'herald' } };
  await publishBundled(lanes, { id: 'orders', batch: { maxEvents: 10, maxWaitMs: 1000 } }, ['p1', 'p2'].map((id) => ({ kind: 'first' as const, destinationId: 'orders', event: eventOf(id), publishedAt: at(0) })));
  const bundle = queue.add(published[0]!, new Date(T0.getTime() + 60_000));

  const outcome = await runReplay(deps, { id: 'r-bundle', request: { destination: 'orders', since: at(0), until: at(5) }, messageId: '98' });

  // A lane message is no dead delivery (the reconciler makes up for records that never came): nothing to send again.
  expect(outcome.report).toMatchObject({ scanned: 2, matched: 2, redelivered: 0, skipped: 2 });
  expect(outcome.report.items.map((i) => [i.eventId, i.outcome, i.reason, i.messageId])).toEqual([
    ['p1', 'skipped', 'not-replayable', `${bundle}/0`],
    ['p2', 'skipped', 'not-replayable', `${bundle}/1`],
  ]);
  expect(queue.acked).toEqual([]);
  expect(queue.remaining()).toEqual([bundle]);
});
