import { DeliveryRecord, deliveryId } from '../../shared/domain/retry/delivery';
import { eventKey } from '../../shared/domain/events/event';
import type { Suspension, SuspensionNotification } from '../../shared/domain/destinations/suspension';
import { eventually } from '../support/eventually';
import { Receiver, ReceivedRequest, Responder } from '../support/receiver';
import { startTestStack, TestStack } from '../support/stack';
import { SubscriptionTap, TappedMessage } from '../support/subscription-tap';

/**
 * Issue 4 on the emulators: destinations suspended by their answers (404, 3xx, 410), by
 * their success rate (the scheduled threshold check), by their last retry (cloud-elements);
 * events QUEUED while suspended and sent again on reactivation; failureMode "queue".
 *
 * Two stacks, one after the other (local mode installs one runtime per process), each in a
 * project of its own: the run tag keeps a rerun on long-lived emulators from finding the
 * previous run's destinations and delivery records.
 */
const RUN = Date.now().toString(36);
const SOURCE = '/suspension-test';

/** Per receiver path: how it answers its own n-th request (n from 0). Default 204. */
const answers = new Map<string, (n: number) => ReturnType<Responder>>();
const receiver: Receiver = new Receiver((req) => {
  const answer = answers.get(req.path);
  return answer ? answer(receiver.on(req.path).length - 1) : { status: 204 };
});

interface DestinationBody {
  status: 'active' | 'suspended';
  suspension?: Suspension;
  stats: { attempts1h: number; successRate1h?: number; lastErrors: unknown[] };
}

const pause = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const requestsFor = (path: string, id: string): ReceivedRequest[] => receiver.on(path).filter((r) => r.headers['ce-id'] === id);

/** The helpers every block uses, bound to its stack. */
function on(stackOf: () => TestStack) {
  const publish = async (id: string, type: string) => {
    const res = await stackOf().ingest({ 'ce-id': id, 'ce-source': SOURCE, 'ce-type': type, 'ce-specversion': '1.0', 'content-type': 'application/json' }, `{"n":"${id}"}`);
    expect(res.status).toBe(202);
  };
  const record = (destination: string, id: string): Promise<DeliveryRecord | undefined> =>
    stackOf().runtime.deliveries.get(deliveryId(destination, eventKey({ source: SOURCE, id })));
  const settled = (destination: string, id: string, status: DeliveryRecord['status'], timeoutMs?: number): Promise<DeliveryRecord> =>
    eventually(
      `${destination}/${id} to be ${status}`,
      async () => {
        const r = await record(destination, id);
        return r?.status === status ? r : undefined;
      },
      timeoutMs,
    );
  const destination = async (id: string): Promise<DestinationBody> => {
    const res = await stackOf().admin('GET', `/destinations/${id}`);
    expect(res.status).toBe(200);
    return res.body as DestinationBody;
  };
  const suspended = (id: string, timeoutMs?: number): Promise<DestinationBody> =>
    eventually(`${id} to be suspended`, async () => {
      const d = await destination(id);
      return d.status === 'suspended' ? d : undefined;
    }, timeoutMs);
  const put = async (id: string, spec: Record<string, unknown>) => {
    const res = await stackOf().admin('PUT', `/destinations/${id}`, { url: `${receiver.url}/${id}`, eventTypes: [`test.${id}`], ...spec });
    expect(res.status).toBe(201);
  };
  return { publish, record, settled, destination, suspended, put };
}

const notificationOf = (m: TappedMessage) => JSON.parse(m.data.toString()) as SuspensionNotification;

beforeAll(async () => {
  await receiver.start();
});

afterAll(async () => {
  await receiver.stop();
});


/**
 * Suspension by answer, by success rate, reactivation and failureMode queue, at
 * HERALD_TIME_SCALE=150. Why 150: the threshold's window, the scaled hour, is then 24 s (a
 * counter bucket 400 ms, the check every 400 ms, event-platform's first retry of a 500 2 s
 * later). The threshold test's 100 events and their retries reach each receiver in a few
 * seconds (about 6 s on the emulators, more on a loaded machine), so all of them fall in the
 * same scaled hour with a wide margin: the rate is judged on the whole burst, and the
 * stats and notices of the other tests count every attempt they made. A higher scale
 * shortens the window below the burst (at 600 it is 6 s, which the burst already exceeds),
 * and the sample seen at once might then never reach 50.
 */
describe('suspension by answer and by success rate, reactivation, failureMode queue', () => {
  const PROJECT = `susp-${RUN}`;
  const HOUR_MS = 3_600_000 / 150;
  let stack: TestStack;
  let notifications: SubscriptionTap;
  const h = on(() => stack);

  beforeAll(async () => {
    stack = await startTestStack(PROJECT, { HERALD_TIME_SCALE: '150', HERALD_PUMP_INTERVAL_MS: '100' });
    notifications = new SubscriptionTap(PROJECT, `${stack.runtime.names.prefix}-notifications-outbox`);
  });

  afterAll(async () => {
    await notifications?.close();
    await stack?.stop({ purge: true });
  });

  const QUEUED_IDS = ['nf-1', 'nf-2', 'nf-3', 'nf-4'];

  test('a 404 under event-platform suspends at once; later events are QUEUED without an attempt; one notification goes out', async () => {
    answers.set('/notfound', () => ({ status: 404, body: 'no such hook' }));
    await h.put('notfound', { policy: 'event-platform', technicalEmail: 'ops@example.com' });

    await h.publish('nf-1', 'test.notfound');
    const first = await h.settled('notfound', 'nf-1', 'QUEUED');
    expect(first).toMatchObject({ attempts: 1, lastError: { status: 404, error: 'HTTP 404', bodyExcerpt: 'no such hook' } });
    const dest = await h.suspended('notfound');
    expect(dest.suspension).toMatchObject({ cause: 'criteria', lastError: { status: 404 } });
    expect(dest.suspension!.reason).toMatch(/404/);
    expect(requestsFor('/notfound', 'nf-1')).toHaveLength(1);

    // Suspended: the next events are kept, never sent.
    for (const id of QUEUED_IDS.slice(1)) await h.publish(id, 'test.notfound');
    for (const id of QUEUED_IDS.slice(1)) {
      const r = await h.settled('notfound', id, 'QUEUED');
      expect(r.attempts).toBe(0);
      expect(r.reason).toMatch(/^destination suspended: .*404/);
    }
    await pause(500);
    expect(receiver.on('/notfound')).toHaveLength(1);

    const listed = await stack.admin('GET', '/destinations/notfound/deliveries?status=queued');
    expect(listed.status).toBe(200);
    const deliveries = (listed.body as { deliveries: DeliveryRecord[] }).deliveries;
    expect(deliveries.map((d) => d.eventId).sort()).toEqual(QUEUED_IDS);
    expect(deliveries.every((d) => d.status === 'QUEUED' && d.event === undefined)).toBe(true);

    // The notification: on the notifications topic for the email sender, and on the destination.
    const message = await notifications.find('the suspension notice of notfound', (m) => m.attributes['herald-destination'] === 'notfound');
    expect(message.attributes).toMatchObject({ 'herald-type': 'herald.destination.suspended', 'herald-destination': 'notfound', 'herald-to': 'ops@example.com' });
    const notice = notificationOf(message);
    expect(notice).toMatchObject({
      type: 'herald.destination.suspended',
      destinationId: 'notfound',
      to: 'ops@example.com',
      cause: 'criteria',
      reason: dest.suspension!.reason,
      suspendedAt: dest.suspension!.at,
      // The one attempt it had, a failure.
      attempts1h: 1,
      successRate1h: 0,
      reactivate: { api: 'POST /admin/destinations/notfound/reactivate', cli: 'herald destinations reactivate notfound' },
    });
    expect(notice.subject).toContain('notfound');
    expect(notice.text).toContain(dest.suspension!.reason);
    expect(notice.recentErrors).toEqual([first.lastError]);
    expect(dest.suspension!.notification).toEqual(notice);
    expect(dest.stats).toEqual({ attempts1h: 1, successRate1h: 0, lastErrors: [first.lastError], filterPassed1h: 0, filtered1h: 0, filterErrors1h: 0, rate: 10, rateBounds: { min: 1, max: 100 } });
    // Exactly one notification, though four events met the suspended destination.
    await pause(300);
    expect(notifications.received.filter((m) => m.attributes['herald-destination'] === 'notfound')).toHaveLength(1);

    // Redeliver is refused while suspended: reactivation is the way back.
    expect((await stack.admin('POST', '/destinations/notfound/redeliver')).status).toBe(409);
  });

  test('reactivation clears the suspension and delivers every QUEUED event exactly once', async () => {
    answers.set('/notfound', () => ({ status: 204 }));
    const before = receiver.on('/notfound').length;
    const res = await stack.admin('POST', '/destinations/notfound/reactivate');
    expect(res.status).toBe(200);
    const body = res.body as { destination: DestinationBody; redelivered: number };
    expect(body.redelivered).toBe(QUEUED_IDS.length);
    expect(body.destination.status).toBe('active');
    expect(body.destination.suspension).toBeUndefined();

    for (const id of QUEUED_IDS) {
      const r = await h.settled('notfound', id, 'DELIVERED');
      expect(r.deliveredAt).toEqual(expect.any(String));
    }
    // No second copy comes late.
    await pause(500);
    const after = receiver.on('/notfound').slice(before);
    expect(after.map((r) => r.headers['ce-id']).sort()).toEqual(QUEUED_IDS);

    const dest = await h.destination('notfound');
    expect(dest.status).toBe('active');
    expect(dest.suspension).toBeUndefined();
    const listed = await stack.admin('GET', '/destinations/notfound/deliveries?status=queued');
    expect((listed.body as { deliveries: unknown[] }).deliveries).toEqual([]);
    // Active again: a new event goes straight through, and a second reactivation is refused.
    await h.publish('nf-5', 'test.notfound');
    await h.settled('notfound', 'nf-5', 'DELIVERED');
    expect((await stack.admin('POST', '/destinations/notfound/reactivate')).status).toBe(409);
  });

  test('a 301 suspends at once and its Location is never followed', async () => {
    answers.set('/moved', () => ({ status: 301, headers: { location: `${receiver.url}/moved-here` } }));
    await h.put('moved', { policy: 'event-platform' });
    await h.publish('mv-1', 'test.moved');
    const queued = await h.settled('moved', 'mv-1', 'QUEUED');
    expect(queued.lastError).toMatchObject({ status: 301 });
    expect(queued.lastError!.error).toContain(`redirect to ${receiver.url}/moved-here`);
    const dest = await h.suspended('moved');
    expect(dest.suspension).toMatchObject({ cause: 'criteria' });
    expect(dest.suspension!.reason).toMatch(/301/);
    await notifications.find('the suspension notice of moved', (m) => m.attributes['herald-destination'] === 'moved');
    await pause(500);
    expect(requestsFor('/moved', 'mv-1')).toHaveLength(1);
    expect(receiver.on('/moved-here')).toHaveLength(0);
  });

  test('a 410 suspends under every preset, here adobe-best-effort (which suspends for nothing else)', async () => {
    answers.set('/retired', () => ({ status: 410 }));
    await h.put('retired', { policy: 'adobe-best-effort' });
    await h.publish('rt-1', 'test.retired');
    expect(await h.settled('retired', 'rt-1', 'QUEUED')).toMatchObject({ attempts: 1, lastError: { status: 410 } });
    const dest = await h.suspended('retired');
    expect(dest.suspension).toMatchObject({ cause: 'gone' });
    expect(dest.suspension!.reason).toMatch(/410 Gone/);
    expect(requestsFor('/retired', 'rt-1')).toHaveLength(1);
  });

  test('failureMode queue: a failed attempt is QUEUED, not retried; redeliver sends it again', async () => {
    answers.set('/keeper', () => ({ status: 500 }));
    await h.put('keeper', { policy: 'event-platform', failureMode: 'queue' });
    await h.publish('kp-1', 'test.keeper');
    // QUEUED, not PENDING: no retry is scheduled (event-platform would retry a 500).
    const queued = await h.settled('keeper', 'kp-1', 'QUEUED');
    expect(queued).toMatchObject({ attempts: 1, lastError: { status: 500 } });
    expect(queued.availableAt).toBeUndefined();
    expect(queued.reason).toMatch(/HTTP 500.*failureMode queue/);
    await pause(500);
    expect(requestsFor('/keeper', 'kp-1')).toHaveLength(1);
    // Not a suspension: the destination stays active and takes the operator's redeliver.
    expect((await h.destination('keeper')).status).toBe('active');

    answers.set('/keeper', () => ({ status: 204 }));
    const res = await stack.admin('POST', '/destinations/keeper/redeliver', { status: 'queued' });
    expect(res).toEqual({ status: 202, body: { redelivered: 1, status: 'QUEUED' } });
    const delivered = await h.settled('keeper', 'kp-1', 'DELIVERED');
    expect(delivered.attempts).toBe(1);
    expect(requestsFor('/keeper', 'kp-1')).toHaveLength(2);
  });

  /**
   * The failures are deterministic, by each receiver's own request count:
   *  - /tenth fails every 10th request: any 50 consecutive attempts hold 5 failures (90 %).
   *  - /thirtythird fails every 33rd: 100 events take exactly 103 requests (failures at 32,
   *    65 and 98, whichever events they are; each retry is one more request), 97.1 %; and
   *    any run of n ≥ 50 consecutive requests holds at most ceil(n / 33) failures, never
   *    below 95 %, so even a window over part of the burst would not suspend it.
   */
  test('threshold: below 95 % over the scaled hour with 50 attempts suspends; 97 % does not', async () => {
    const EVENTS = 100;
    answers.set('/tenth', (n) => ({ status: n % 10 === 9 ? 500 : 204 }));
    answers.set('/thirtythird', (n) => ({ status: n % 33 === 32 ? 500 : 204 }));
    for (const id of ['tenth', 'thirtythird']) {
      const res = await stack.admin('PUT', `/destinations/${id}`, { url: `${receiver.url}/${id}`, eventTypes: ['test.rate'], policy: 'event-platform', technicalEmail: `${id}@example.com` });
      expect(res.status).toBe(201);
    }
    const batch = Array.from({ length: EVENTS }, (_, i) => ({ specversion: '1.0', id: `rate-${i}`, source: SOURCE, type: 'test.rate', data: { i } }));
    const res = await stack.ingest({ 'content-type': 'application/cloudevents-batch+json' }, JSON.stringify(batch));
    expect(res.status).toBe(202);

    const tenth = await h.suspended('tenth', 40_000);
    expect(tenth.suspension).toMatchObject({ cause: 'threshold' });
    expect(tenth.suspension!.reason).toMatch(/^success rate [\d.]+ % over the last 24 s \(\d+ of \d+ attempts\) is below 95 %$/);
    expect(tenth.suspension!.attempts1h).toBeGreaterThanOrEqual(50);
    expect(tenth.suspension!.successRate1h).toBeLessThan(0.95);
    expect(tenth.suspension!.recentErrors[0]).toMatchObject({ status: 500 });
    expect(receiver.on('/tenth').length).toBeGreaterThanOrEqual(50);
    const notice = notificationOf(await notifications.find('the suspension notice of tenth', (m) => m.attributes['herald-destination'] === 'tenth'));
    expect(notice).toMatchObject({ cause: 'threshold', to: 'tenth@example.com', reason: tenth.suspension!.reason, attempts1h: tenth.suspension!.attempts1h });

    // Every event reached /thirtythird, each failure's retry too; then a few more checks.
    await receiver.waitFor(EVENTS + 3, '/thirtythird', 40_000);
    await pause(1000);
    const thirtythird = await h.destination('thirtythird');
    expect(thirtythird.status).toBe('active');
    expect(thirtythird.suspension).toBeUndefined();
    const requests = receiver.on('/thirtythird');
    expect(requests).toHaveLength(EVENTS + 3);
    expect(requests.filter((r) => r.headers['ce-id'] === 'rate-0')).not.toHaveLength(0);
    // The premise: its whole burst is in the scaled hour, so the rate was judged on all of it.
    expect(Date.now() - requests[0]!.at).toBeLessThan(HOUR_MS);
    expect(thirtythird.stats.attempts1h).toBe(EVENTS + 3);
    expect(thirtythird.stats.successRate1h).toBeCloseTo(EVENTS / (EVENTS + 3), 5);
    expect(notifications.received.filter((m) => m.attributes['herald-destination'] === 'thirtythird')).toHaveLength(0);

    // The suspended destination's remaining events are kept, not lost: each DELIVERED or QUEUED.
    await eventually('every event of tenth to be DELIVERED or QUEUED', async () => {
      const records = await Promise.all(batch.map((e) => h.record('tenth', e.id)));
      return records.every((r) => r?.status === 'DELIVERED' || r?.status === 'QUEUED') ? true : undefined;
    });
  });
});

/**
 * cloud-elements retries x at 2^(3x) s after the original failure: 8 s, 64 s, 512 s,
 * 4096 s, 32768 s. HERALD_TIME_SCALE=10000 plays them in 0.8 ms … 3.3 s. (Its scaled hour
 * is then 360 ms: this stack is not for success-rate numbers.)
 */
describe('cloud-elements: retries exhausted deactivate the destination', () => {
  const PROJECT = `susp-ce-${RUN}`;
  let stack: TestStack;
  let notifications: SubscriptionTap;
  const h = on(() => stack);

  beforeAll(async () => {
    stack = await startTestStack(PROJECT, { HERALD_TIME_SCALE: '10000', HERALD_PUMP_INTERVAL_MS: '100' });
    notifications = new SubscriptionTap(PROJECT, `${stack.runtime.names.prefix}-notifications-outbox`);
  });

  afterAll(async () => {
    await notifications?.close();
    await stack?.stop({ purge: true });
  });

  test('six attempts on its schedule from the first, then the destination is suspended and its events QUEUED', async () => {
    answers.set('/elements', () => ({ status: 500, body: 'down' }));
    await h.put('elements', { policy: 'cloud-elements', technicalEmail: 'elements@example.com' });
    await h.publish('ce-1', 'test.elements');
    const queued = await h.settled('elements', 'ce-1', 'QUEUED', 30_000);
    expect(queued).toMatchObject({ attempts: 6, lastError: { status: 500 } });
    expect(queued.reason).toMatch(/attempt 6: cloud-elements allows 5 retries; the destination is deactivated/);

    const attempts = requestsFor('/elements', 'ce-1');
    expect(attempts).toHaveLength(6);
    // Retry x is due 8^x s / 10000 after the first attempt (measured from the origin, not the previous one).
    const sinceFirst = attempts.map((r) => r.at - attempts[0]!.at);
    expect(sinceFirst[4]!).toBeGreaterThanOrEqual(409.6 - 50);
    expect(sinceFirst[5]!).toBeGreaterThanOrEqual(3276.8 - 50);
    expect(sinceFirst[5]!).toBeLessThan(3276.8 + 2000);

    const dest = await h.suspended('elements');
    expect(dest.suspension).toMatchObject({ cause: 'retries-exhausted', lastError: queued.lastError });
    const notice = notificationOf(await notifications.find('the suspension notice of elements', (m) => m.attributes['herald-destination'] === 'elements'));
    expect(notice).toMatchObject({ cause: 'retries-exhausted', to: 'elements@example.com', reason: dest.suspension!.reason });
    expect(notice.recentErrors[0]).toEqual(queued.lastError);

    // Deactivated: the next event waits, unattempted.
    await h.publish('ce-2', 'test.elements');
    expect(await h.settled('elements', 'ce-2', 'QUEUED')).toMatchObject({ attempts: 0 });
    await pause(300);
    expect(requestsFor('/elements', 'ce-2')).toHaveLength(0);
    expect(receiver.on('/elements')).toHaveLength(6);
  });
});
