import { ChildProcess } from 'node:child_process';
import { UsageDay } from '../../shared/domain/usage/usage';
import { eventually } from '../support/eventually';
import { killed, spawnLocalHerald } from '../support/local-herald';
import { flakyFirstReceiver } from '../support/flaky-receiver';
import { testSecretsKey } from '../support/stack';

/**
 * Issue 57, usage under a SIGKILL: 3 accounts, 1,200 events, a flaky receiver (a seventh of the
 * first attempts fail and are retried), a batched and an ordered destination. Herald (a process
 * of its own, `npm start`) is killed outright mid-run, with deliveries, retries and counts
 * unflushed in it, and started again on its port; the producer sends the rest to the new
 * process. Every account's `eventsAccepted` and `operationalEvents` then equal what the producer
 * was answered, and `deliveries` the records the admin API lists, exactly: they are counted from
 * the intake journal as the reconciler removes each batch, in the same commit, never from a
 * process's memory. The counts a process keeps in memory until its next flush (attempts,
 * delivered) are printed beside what the receiver and the admin API saw, and are never more.
 */
const PROJECT = `usage-kill-${Date.now().toString(36)}`;
const ENV = {
  HERALD_PROJECT_ID: PROJECT,
  HERALD_ADMIN_TOKEN: 'usage-kill-admin-token-0123456789',
  HERALD_INGEST_TOKEN: 'usage-kill-ingest-token-0123456789',
  HERALD_PUSH_TOKEN: 'usage-kill-push-token-0123456789',
  HERALD_SECRETS_KEY: testSecretsKey(PROJECT),
  HERALD_TIME_SCALE: '60',
  HERALD_CLAIM_TTL_MS: '3000',
  HERALD_DELIVERY_TIMEOUT_MS: '2000',
  HERALD_PUMP_INTERVAL_MS: '100',
  // The journal is reconciled a second after acceptance: usage's accepted counts follow it.
  HERALD_RECONCILE_AFTER_MS: '1000',
  HERALD_RECONCILE_INTERVAL_MS: '500',
  HERALD_ACCOUNT_PUBLISH_QUOTA: '100000',
};
const SOURCE = '/usage-kill-test';
const PER_ACCOUNT = 400;
const PER_POST = 20;
const today = () => new Date().toISOString().slice(0, 10);

const receiver = flakyFirstReceiver();

const DESTINATIONS = [
  { account: 'kill-a', id: 'plain', spec: {} },
  { account: 'kill-b', id: 'batched', spec: { batch: { maxEvents: 10, maxWaitMs: 300 } } },
  { account: 'kill-c', id: 'ordered', spec: { ordering: 'key' } },
] as const;
const retryFast = { retryOn: { statuses: ['5xx'] }, backoff: { kind: 'fixed', delaysMs: [300] }, maxAttempts: 10 };

let child: ChildProcess | undefined;
let url = '';

/** `npm start` in a process of its own, on the test emulators; started again on the same port, where Pub/Sub pushes. */
async function startHerald(): Promise<void> {
  const port = url === '' ? '0' : new URL(url).port;
  const herald = spawnLocalHerald({ ...process.env, ...ENV, PORT: port, HERALD_LOG_LEVEL: 'WARNING' });
  child = herald.child;
  url = await herald.ready(60_000);
}

async function call(method: string, path: string, body?: unknown, token = ENV.HERALD_ADMIN_TOKEN, contentType = 'application/json'): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${url}${path}`, { method, headers: { authorization: `Bearer ${token}`, 'content-type': contentType }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as unknown) : undefined };
}

afterAll(async () => {
  await killed(child);
  await receiver.stop();
});

/** What the producer was answered, per account: the events accepted, and of them Herald's operational types. */
const answered = new Map<string, { accepted: number; operational: number }>(DESTINATIONS.map((d) => [d.account, { accepted: 0, operational: 0 }]));

/** Posts `PER_POST` events at a time for each account, posts `from` to `to` (exclusive), all answered 202. */
async function publish(from: number, to: number): Promise<void> {
  const posts: Promise<void>[] = [];
  for (const d of DESTINATIONS) {
    for (let p = from; p < to; p++) {
      const events = Array.from({ length: PER_POST }, (_, j) => {
        const i = p * PER_POST + j;
        const type = i % 50 === 0 ? 'herald.usage.test' : 'com.example.usage.created';
        return { specversion: '1.0', id: `${d.account}-${i}`, source: SOURCE, type, heraldaccount: d.account, partitionkey: `k${i % 40}`, data: { i } };
      });
      posts.push(
        (async () => {
          const res = await call('POST', '/ingest', events, ENV.HERALD_INGEST_TOKEN, 'application/cloudevents-batch+json');
          expect(res.status).toBe(202);
          const mine = answered.get(d.account)!;
          for (const id of (res.body as { accepted: string[] }).accepted) {
            mine.accepted++;
            if (Number(id.slice(id.lastIndexOf('-') + 1)) % 50 === 0) mine.operational++;
          }
        })(),
      );
    }
  }
  await Promise.all(posts);
}

function summed(days: readonly UsageDay[]) {
  const sum = (k: 'eventsAccepted' | 'operationalEvents' | 'deliveries' | 'delivered' | 'bytesSent') => days.reduce((n, d) => n + d[k], 0);
  const attempts = days.reduce((n, d) => n + Object.values(d.attempts).reduce((a, b) => a + b, 0), 0);
  return { eventsAccepted: sum('eventsAccepted'), operationalEvents: sum('operationalEvents'), deliveries: sum('deliveries'), delivered: sum('delivered'), bytesSent: sum('bytesSent'), attempts };
}

test('killed outright mid-run and started again: accepted events and deliveries are counted exactly; nothing is counted twice', async () => {
  await receiver.start();
  await startHerald();
  const startDay = today();
  for (const d of DESTINATIONS) {
    expect((await call('POST', '/admin/accounts', { id: d.account, name: d.account })).status).toBe(201);
    const put = await call('PUT', `/admin/accounts/${d.account}/destinations/${d.id}`, { url: `${receiver.url}/${d.account}/${d.id}`, eventTypes: ['com.example.usage.*', 'herald.*'], policy: retryFast, ...d.spec });
    expect(put.status).toBe(201);
  }
  const posts = PER_ACCOUNT / PER_POST;
  await publish(0, posts / 2);
  // Mid-delivery: some delivered, retries pending, counts unflushed. No ingest request is in
  // flight: each event's answer is known (the run's one ambiguity, a try never answered, aside).
  await eventually('deliveries under way', async () => (receiver.requests.length >= 100 ? true : undefined), 60_000, 50);
  child!.kill('SIGKILL');
  await new Promise((r) => child!.once('exit', r));
  const atKill = receiver.requests.length;
  await startHerald();
  await publish(posts / 2, posts);

  for (const d of DESTINATIONS) {
    const mine = answered.get(d.account)!;
    expect(mine.accepted).toBe(PER_ACCOUNT);
    const read = async () => summed(((await call('GET', `/admin/accounts/${d.account}/usage?from=${startDay}&to=${today()}`)).body as { days: UsageDay[] }).days);
    // The reconciler removes each journal batch once every delivery it was meant for has a record
    // (the killed process's lost ones recovered): then its events and deliveries are in usage.
    const usage = await eventually(`${d.account}: every journal batch counted`, async () => {
      const u = await read();
      return u.eventsAccepted === mine.accepted && u.deliveries === PER_ACCOUNT ? u : undefined;
    }, 180_000, 500).catch(read);
    const listed = ((await call('GET', `/admin/accounts/${d.account}/destinations/${d.id}/deliveries?limit=500`)).body as { deliveries: { status: string }[] }).deliveries;
    const requests = receiver.on(`/${d.account}/${d.id}`);
    // Events the receiver got (a batch's body lists its events; a batched destination's recovered delivery comes alone, in binary mode): a delivery counted delivered was answered 2xx there.
    const received = new Set(requests.flatMap((r) => (String(r.headers['content-type']).startsWith('application/cloudevents-batch+json') ? (JSON.parse(r.body.toString()) as { id: string }[]).map((e) => e.id) : [String(r.headers['ce-id'])])));
    const seen = { records: listed.length, received: received.size, attempts: requests.length };
    process.stderr.write(`usage-kill: ${d.account} (${d.id}): usage ${JSON.stringify(usage)}; seen ${JSON.stringify(seen)}; ${atKill} requests before the kill\n`);
    // Exact: what the producer was answered, and the records the admin API lists (one per event).
    expect({ eventsAccepted: usage.eventsAccepted, operationalEvents: usage.operationalEvents, deliveries: usage.deliveries }).toEqual({ eventsAccepted: mine.accepted, operationalEvents: mine.operational, deliveries: seen.records });
    expect(seen.records).toBe(PER_ACCOUNT);
    // What a process counts in memory until its flush may be lost at a kill, never counted twice:
    // read after the usage, the receiver can only have seen more.
    expect(usage.delivered).toBeLessThanOrEqual(seen.received);
    expect(usage.attempts).toBeLessThanOrEqual(seen.attempts);
  }
}, 420_000);
