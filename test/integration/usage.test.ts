import { isDeepStrictEqual } from 'node:util';
import { deliverFromLane } from '../../shared/app/delivery/deliver';
import { toPubSubMessage } from '../../shared/domain/events/cloudevents-pubsub';
import { LANE_ATTRIBUTES } from '../../shared/domain/intake/lane-message';
import { deliverDeps } from '../../shared/runtime/delivery-deps';
import { UsageDay } from '../../shared/domain/usage/usage';
import { eventually } from '../support/eventually';
import { patient } from '../support/patience';
import { ReceivedRequest } from '../support/receiver';
import { failsFirst, flakyFirstReceiver } from '../support/flaky-receiver';
import { startTestStack, TestStack } from '../support/stack';

/**
 * Issue 57, usage metering, exact: 3 accounts over 3 instances, 1,020 events, a flaky receiver
 * (a seventh of the deliveries fail their first attempt and are retried), a batched and an
 * ordered destination (flaky too). Each account's usage, read through the admin API, equals
 * what the producer was answered and what the receivers saw, count by count: events accepted and
 * refused, deliveries and delivered (the admin API's records), attempts by outcome (requests
 * the receiver answered), bytes sent (bodies received). Then a lane message pushed again, as
 * Pub/Sub redelivers one, adds its send (the receiver sees it) and no delivery.
 */
const PROJECT = `usage-${Date.now().toString(36)}`;
const SOURCE = '/usage-test';
const PER_ACCOUNT = 340;
const PER_POST = 20;
/** The day the run counts in (a run across midnight UTC is read over both days). */
const today = () => new Date().toISOString().slice(0, 10);

const receiver = flakyFirstReceiver();

let stack: TestStack;
const DESTINATIONS = [
  { account: 'usage-a', id: 'plain', spec: {} },
  { account: 'usage-b', id: 'batched', spec: { batch: { maxEvents: 10, maxWaitMs: 300 } } },
  { account: 'usage-c', id: 'ordered', spec: { ordering: 'key' } },
] as const;
/**
 * A 15 s attempt timeout: on a machine loaded to a load of 10 and more, an answer the receiver gave
 * (and counted as a success) reached Herald after the default 5 s, which counted a timeout. Not
 * longer: past 15 s it would shorten the in-process rate wait (lane-admission.ts rateWaitLimitMs)
 * and change what the run does (more deferrals: twice the time).
 */
const retryFast = { retryOn: { statuses: ['5xx'] }, backoff: { kind: 'fixed', delaysMs: [300] }, maxAttempts: 10, attemptTimeoutMs: 15_000 };

beforeAll(async () => {
  await receiver.start();
  // Accepted events are counted as the reconciler removes their journal batches: a 30 s grace (not 1 s, under which
  // three busy instances' slow first attempts were recovered and sent twice), rounds each second.
  stack = await startTestStack(PROJECT, { HERALD_TIME_SCALE: '60', HERALD_PUMP_INTERVAL_MS: '100', HERALD_ACCOUNT_PUBLISH_QUOTA: '100000', HERALD_RECONCILE_AFTER_MS: '30000', HERALD_RECONCILE_INTERVAL_MS: '1000' }, { instances: 3 });
  for (const d of DESTINATIONS) {
    expect((await stack.admin('POST', '/accounts', { id: d.account, name: d.account })).status).toBe(201);
    const put = await stack.admin('PUT', `/accounts/${d.account}/destinations/${d.id}`, { url: `${receiver.url}/${d.account}/${d.id}`, eventTypes: ['com.example.usage.*', 'herald.*'], policy: retryFast, ...d.spec });
    expect(put.status).toBe(201);
  }
}, 60_000);

afterAll(async () => {
  await stack?.stop({ purge: true });
  await receiver.stop();
});

async function usageOf(account: string, query = ''): Promise<UsageDay[]> {
  const res = await stack.admin('GET', `/accounts/${account}/usage?from=${startDay}&to=${today()}${query}`);
  expect(res.status).toBe(200);
  return (res.body as { days: UsageDay[] }).days;
}

/** The rows of the range, summed (a run inside one day has one row with counts). */
function summed(days: readonly UsageDay[]) {
  const attempts: Record<string, number> = {};
  for (const d of days) for (const [o, n] of Object.entries(d.attempts)) attempts[o] = (attempts[o] ?? 0) + n;
  const sum = (k: 'eventsAccepted' | 'eventsRefused' | 'operationalEvents' | 'deliveries' | 'delivered' | 'bytesSent') => days.reduce((n, d) => n + d[k], 0);
  return { eventsAccepted: sum('eventsAccepted'), eventsRefused: sum('eventsRefused'), operationalEvents: sum('operationalEvents'), deliveries: sum('deliveries'), delivered: sum('delivered'), bytesSent: sum('bytesSent'), attempts };
}

/** What the receiver saw of one destination: requests answered by status class, bodies, and the events delivered (2xx, each once). */
function seenBy(path: string) {
  const requests = receiver.on(path);
  const status = (r: ReceivedRequest) => (path.endsWith('/batched') || firstSeenBefore(r) || !failsFirst(String(r.headers['webhook-id'])) ? 204 : 500);
  const ok = requests.filter((r) => status(r) === 204);
  return {
    attempts: requests.length,
    success: ok.length,
    httpError: requests.length - ok.length,
    bytes: requests.reduce((n, r) => n + r.body.length, 0),
    delivered: new Set(ok.flatMap(eventIdsOf)).size,
  };
}
/**
 * The events a request carried: a batch's array, or one event. A batched destination is sent
 * single events too (a delivery the reconciler recovered on a loaded machine, a redelivery), as
 * docs/what-a-destination-receives.md says a receiver must expect.
 */
function eventIdsOf(r: ReceivedRequest): string[] {
  if (r.headers['ce-id'] !== undefined) return [String(r.headers['ce-id'])];
  const body = JSON.parse(r.body.toString()) as { id: string } | { id: string }[];
  return (Array.isArray(body) ? body : [body]).map((e) => e.id);
}
/** Whether a request is a later one of its webhook-id (the receiver answered its first 500 only). */
function firstSeenBefore(r: ReceivedRequest): boolean {
  const id = String(r.headers['webhook-id']);
  return receiver.requests.findIndex((x) => String(x.headers['webhook-id']) === id) < receiver.requests.indexOf(r);
}

let startDay = '';
const accepted = new Map<string, { ids: string[]; operational: number }>();

test('each account\'s usage equals what its producer was answered and what its receiver saw', async () => {
  startDay = today();
  const began = Date.now();
  // One request refused as invalid under the account's own key (its account is known): one event refused.
  const key = await stack.admin('POST', '/accounts/usage-a/keys', { name: 'publisher', scopes: ['publish'] });
  expect(key.status).toBe(201);
  const refused = await fetch(`${stack.url}/ingest`, { method: 'POST', headers: { authorization: `Bearer ${(key.body as { key: string }).key}`, 'content-type': 'application/cloudevents+json' }, body: JSON.stringify({ specversion: '1.0', id: 'bad', source: SOURCE }) });
  expect(refused.status).toBe(400);

  const posts: Promise<void>[] = [];
  for (const d of DESTINATIONS) {
    const mine = { ids: [] as string[], operational: 0 };
    accepted.set(d.account, mine);
    for (let p = 0; p < PER_ACCOUNT / PER_POST; p++) {
      const events = Array.from({ length: PER_POST }, (_, j) => {
        const i = p * PER_POST + j;
        // Every 50th an operational type (Herald's own prefix), counted apart as well.
        const type = i % 50 === 0 ? 'herald.usage.test' : 'com.example.usage.created';
        return { specversion: '1.0', id: `${d.account}-${i}`, source: SOURCE, type, heraldaccount: d.account, partitionkey: `k${i % 68}`, datacontenttype: 'application/json', data: { i, pad: 'x'.repeat(i % 40) } };
      });
      posts.push(
        (async () => {
          const res = await acceptedAfterResends(JSON.stringify(events));
          expect(res.status).toBe(202);
          for (const id of (res.body as { accepted: string[] }).accepted) {
            mine.ids.push(id);
            if (Number(id.slice(id.lastIndexOf('-') + 1)) % 50 === 0) mine.operational++;
          }
        })(),
      );
    }
  }
  // Every request ends before any failure is told: one still sending after the stack stopped would crash the file.
  const failed = (await Promise.allSettled(posts)).find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;

  for (const d of DESTINATIONS) {
    const path = `/${d.account}/${d.id}`;
    // Quiet: every record DELIVERED (the admin API's view), and the receiver has every event.
    const records = await eventually(
      `${d.account}: every delivery DELIVERED`,
      async () => {
        const res = await stack.admin('GET', `/accounts/${d.account}/destinations/${d.id}/deliveries?limit=500`);
        const rows = (res.body as { deliveries: { id: string; status: string }[] }).deliveries;
        return rows.length === PER_ACCOUNT && rows.every((r) => r.status === 'DELIVERED') ? rows : undefined;
      },
      240_000,
      500,
    );
    process.stderr.write(`usage test: ${d.account} quiet after ${((Date.now() - began) / 1000).toFixed(1)} s\n`);
    const seen = seenBy(path);
    expect(seen.delivered).toBe(PER_ACCOUNT);
    const want = {
      eventsAccepted: accepted.get(d.account)!.ids.length,
      eventsRefused: d.account === 'usage-a' ? 1 : 0,
      operationalEvents: accepted.get(d.account)!.operational,
      deliveries: records.length,
      delivered: records.filter((r) => r.status === 'DELIVERED').length,
      bytesSent: seen.bytes,
      attempts: { success: seen.success, ...(seen.httpError ? { 'http-error': seen.httpError } : {}) },
    };
    expect(want.eventsAccepted).toBe(PER_ACCOUNT);
    // Flushed within a second of the last count, on every instance; accepted events and deliveries once the reconciler removed their journal batches (30 s after acceptance here: a fast run is quiet before that, so the wait allows the grace and a round).
    const got = await eventually(`${d.account}: usage settled`, async () => {
      const u = summed(await usageOf(d.account));
      // Equal whatever the order of keys (a string comparison never matched, and every wait ran to its end).
      return isDeepStrictEqual(u, want) ? u : undefined;
    }, 240_000, 500).catch(async () => summed(await usageOf(d.account)));
    expect(got).toEqual(want);
    // The flaky ones really were retried: attempts are more than deliveries there.
    if (d.id !== 'batched') expect(seen.httpError).toBeGreaterThan(0);
    else expect(seen.attempts).toBeLessThan(PER_ACCOUNT);
  }
}, 600_000);

/**
 * A request sent until it is accepted, as a producer does: a 503 (Herald could not take the
 * events now: on a loaded machine the emulators can be that slow) is sent again after its
 * Retry-After, marked as a resend (`Herald-Resend: 1`); usage counts each event accepted once.
 */
async function acceptedAfterResends(body: string): Promise<{ status: number; body: unknown }> {
  let res = await stack.ingest({ 'content-type': 'application/cloudevents-batch+json' }, body);
  for (let tries = 1; res.status === 503 && tries < 10; tries++) {
    await new Promise((r) => setTimeout(r, 1_000));
    res = await stack.ingest({ 'content-type': 'application/cloudevents-batch+json', 'herald-resend': '1' }, body);
  }
  return res;
}

test('a lane message pushed again (a Pub/Sub redelivery) counts its send, not a second delivery', async () => {
  const before = summed(await usageOf('usage-a'));
  const requests = receiver.on('/usage-a/plain').length;
  const event = { attributes: { specversion: '1.0' as const, id: 'usage-a-1', source: SOURCE, type: 'com.example.usage.created', heraldaccount: 'usage-a', datacontenttype: 'application/json' }, data: Buffer.from(JSON.stringify({ i: 1, pad: 'x' })) };
  const push = { subscription: 'projects/herald-local/subscriptions/herald-shard-0-deliver', messageId: 'again', publishTime: new Date(), message: toPubSubMessage(event, { [LANE_ATTRIBUTES.destination]: 'usage-a_plain', [LANE_ATTRIBUTES.publishedAt]: new Date().toISOString() }) };
  // Twice, on two instances: a push is sent (a first push reads nothing first) and settled against the DELIVERED record as a duplicate, or skipped unsent by an instance that knows it recorded.
  await deliverFromLane(deliverDeps(stack.runtimes[1]!), push);
  await deliverFromLane(deliverDeps(stack.runtimes[2]!), push);
  const again = receiver.on('/usage-a/plain').slice(requests).filter((r) => r.headers['ce-id'] === 'usage-a-1');
  expect(again.length).toBeGreaterThanOrEqual(1);
  const after = await eventually('the sends counted', async () => {
    const u = summed(await usageOf('usage-a'));
    return u.attempts.success === (before.attempts.success ?? 0) + again.length ? u : undefined;
  }, patient(20_000));
  // Every send the receiver saw, and its bytes; no delivery, no DELIVERED more.
  expect(after).toEqual({ ...before, bytesSent: before.bytesSent + again.reduce((n, r) => n + r.body.length, 0), attempts: { ...before.attempts, success: (before.attempts.success ?? 0) + again.length } });
});

test('CSV with Accept: text/csv, and months sum their days; a bad range is refused with what to do', async () => {
  const res = await fetch(`${stack.url}/admin/accounts/usage-b/usage?from=${startDay}&to=${today()}`, { headers: { authorization: `Bearer ${stack.config.adminToken}`, accept: 'text/csv' } });
  expect(res.headers.get('content-type')).toMatch(/^text\/csv/);
  const [head, ...rows] = (await res.text()).trim().split('\n');
  expect(head).toBe('date,eventsAccepted,eventsRefused,operationalEvents,deliveries,attempts.success,attempts.http-error,attempts.timeout,attempts.network,attempts.refused,delivered,bytesSent,modeledCostUsd');
  const days = await usageOf('usage-b');
  expect(rows).toHaveLength(days.length);
  expect(rows.at(-1)!.split(',').slice(0, 2)).toEqual([days.at(-1)!.date, String(days.at(-1)!.eventsAccepted)]);
  const months = await usageOf('usage-b', '&granularity=month');
  expect(summed(months)).toEqual(summed(days));
  expect(days.at(-1)!.modeledCostUsd).toBeGreaterThan(0);
  const bad = await stack.admin('GET', '/accounts/usage-b/usage?from=2026-02-30');
  expect(bad).toMatchObject({ status: 400, body: { issues: [{ path: 'from', message: expect.stringMatching(/calendar day/) as unknown }] } });
  const all = await stack.admin('GET', `/usage?from=${startDay}&to=${today()}`);
  expect((all.body as { accounts: { account: string; eventsAccepted: number }[] }).accounts.filter((a) => a.account.startsWith('usage-'))).toEqual(
    DESTINATIONS.map((d) => expect.objectContaining({ account: d.account, eventsAccepted: PER_ACCOUNT }) as unknown),
  );
});
