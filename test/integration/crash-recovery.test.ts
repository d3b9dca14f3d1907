import { ChildProcess } from 'node:child_process';
import { deliveryId } from '../../shared/domain/retry/delivery';
import { eventKey } from '../../shared/domain/events/event';
import { eventually } from '../support/eventually';
import { Receiver } from '../support/receiver';
import { killed, spawnLocalHerald } from '../support/local-herald';
import { startTestStack, TestStack, testSecretsKey } from '../support/stack';

/**
 * A Herald process killed (SIGKILL) while a retry is in flight loses nothing: the claim it
 * held expires and another process takes the delivery and completes it.
 */
const PROJECT = `crash-test-${Date.now().toString(36)}`;
const ENV = {
  HERALD_PROJECT_ID: PROJECT,
  HERALD_ADMIN_TOKEN: 'crash-test-admin-token-0123456789',
  HERALD_INGEST_TOKEN: 'crash-test-ingest-token-0123456789',
  HERALD_PUSH_TOKEN: 'crash-test-push-token-0123456789',
  // The survivor (a test stack) reads what the killed process wrote: one key for both.
  HERALD_SECRETS_KEY: testSecretsKey(PROJECT),
  // event-platform's first retry (5 min) in 1 s; a claim lives 3 s.
  HERALD_TIME_SCALE: '300',
  HERALD_CLAIM_TTL_MS: '3000',
  HERALD_DELIVERY_TIMEOUT_MS: '2000',
  HERALD_PUMP_INTERVAL_MS: '100',
};

/** Answers 503 first, then hangs on the second request (the process is killed meanwhile), then 200. */
const receiver = new Receiver((_req, index) => (index === 0 ? { status: 503 } : index === 1 ? { status: 200, delayMs: 60_000 } : { status: 200 }));
let child: ChildProcess | undefined;
let survivor: TestStack | undefined;

/** `npm start` in a process of its own, on the test emulators; resolves with its URL. */
async function startHeraldProcess(): Promise<{ process: ChildProcess; url: string }> {
  const herald = spawnLocalHerald({ ...process.env, ...ENV, PORT: '0', HERALD_LOG_LEVEL: 'WARNING' });
  return { process: herald.child, url: await herald.ready(30_000) };
}

afterAll(async () => {
  await killed(child);
  await survivor?.stop({ purge: true });
  await receiver.stop();
});

test('a process killed mid-retry loses nothing: the claim expires and the event is delivered', async () => {
  await receiver.start();
  const first = await startHeraldProcess();
  child = first.process;
  const call = (method: string, url: string, token: string, body: string, headers: Record<string, string> = {}) =>
    fetch(url, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers }, body });
  const put = await call('PUT', `${first.url}/admin/destinations/crashy`, ENV.HERALD_ADMIN_TOKEN, JSON.stringify({ url: `${receiver.url}/crashy` }));
  expect(put.status).toBe(201);
  const sent = await call('POST', `${first.url}/ingest`, ENV.HERALD_INGEST_TOKEN, '{"order":1}', {
    'ce-id': 'crash-1',
    'ce-source': '/crash',
    'ce-type': 'com.example.crash',
    'ce-specversion': '1.0',
  });
  expect(sent.status).toBe(202);

  // The retry has reached the receiver, which holds it: kill Herald while it waits.
  await eventually('the retry to reach the receiver', () => (receiver.requests.length >= 2 ? true : undefined));
  child.kill('SIGKILL');
  await new Promise((r) => child!.once('exit', r));

  // Another Herald on the same project finds the claim, waits out its TTL, and delivers.
  survivor = await startTestStack(PROJECT, ENV);
  const id = deliveryId('crashy', eventKey({ source: '/crash', id: 'crash-1' }));
  const held = await survivor.runtime.deliveries.get(id);
  expect(held).toMatchObject({ status: 'IN_FLIGHT', attempts: 1 });
  const delivered = await eventually(
    'the delivery to be DELIVERED',
    async () => {
      const r = await survivor!.runtime.deliveries.get(id);
      return r?.status === 'DELIVERED' ? r : undefined;
    },
    30_000,
  );
  const requests = receiver.requests.filter((r) => r.headers['ce-id'] === 'crash-1');
  expect(requests).toHaveLength(3);
  expect(new Set(requests.map((r) => r.headers['webhook-id'])).size).toBe(1);
  // The attempt the killed process made left no result; the two that did are counted.
  expect(delivered.attempts).toBe(2);
  // Not before the dead claim expired.
  expect(requests[2]!.at - requests[1]!.at).toBeGreaterThanOrEqual(3000 - 100);
});
