import { applySpec } from '../../shared/domain/destinations/destination';
import { internalDestinationId } from '../../shared/domain/ids';
import { startTestStack, TestStack } from '../support/stack';

/**
 * Issue 36: an account's pages read that account's destinations, not the registry. 2,000
 * destinations in 200 accounts, registered straight through the store; then each admin page of
 * one account (10 destinations), counted in Firestore documents read as billed.
 */
const PROJECT = `account-reads-${Date.now().toString(36)}`;
const ACCOUNTS = 200;
const EACH = 10;
const BUDGET = 50;
const URL_OF = (account: string, id: string) => `http://127.0.0.1:9/${account}/${id}`;
let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack(PROJECT, { HERALD_ALLOW_LOOPBACK: 'true', HERALD_SUSPENSION_CHECK_MS: '3600000', HERALD_RECONCILE_INTERVAL_MS: '600000' });
  const at = new Date();
  const ids = Array.from({ length: ACCOUNTS }, (_, a) => (a === 0 ? 'acme' : `acct-${a}`)).flatMap((account) => Array.from({ length: EACH }, (_, d) => ({ account, id: `d-${d}` })));
  for (let i = 0; i < ids.length; i += 100) {
    await Promise.all(ids.slice(i, i + 100).map(({ account, id }) => stack.runtime.destinations.put(applySpec(internalDestinationId(account, id), { url: URL_OF(account, id), eventTypes: ['com.example.x'] }, undefined, at))));
  }
  // acme's quota: its 10 and one more.
  expect((await stack.admin('POST', '/accounts', { id: 'acme', name: 'Acme' })).status).toBe(201);
  expect((await stack.admin('PATCH', '/accounts/acme', { quotas: { destinations: EACH + 1 } })).status).toBe(200);
  expect((await stack.admin('POST', '/accounts', { id: 'empty-co', name: 'Empty Co' })).status).toBe(201);
}, 180_000);

afterAll(() => stack?.stop({ purge: true }));

/** The Firestore documents one call reads, and its answer. */
async function counted(call: () => Promise<{ status: number; body: unknown }>): Promise<{ reads: number; status: number; body: unknown }> {
  const before = stack.runtime.firestoreOps.reads;
  const reply = await call();
  return { reads: stack.runtime.firestoreOps.reads - before, ...reply };
}

test.each([
  ['its destinations', '/accounts/acme/destinations'],
  ['its stats', '/accounts/acme/stats?window=1h'],
  ['a sparkline', '/accounts/acme/stats?window=1h&counts=false&destination=d-3'],
  ['its event types', '/accounts/acme/event-types'],
  ['queued retrieval by URL', `/accounts/acme/deliveries?status=queued&url=${encodeURIComponent(URL_OF('acme', 'd-3'))}`],
])("an account with 10 destinations among 2,000: %s read at most 50 documents", async (_what, path) => {
  const { reads, status } = await counted(() => stack.admin('GET', path));
  expect(status).toBe(200);
  expect(reads).toBeLessThanOrEqual(BUDGET);
});

test('its destination list holds its 10 and no other account’s', async () => {
  const { body } = await stack.admin('GET', '/accounts/acme/destinations');
  const ids = (body as { destinations: { id: string }[] }).destinations.map((d) => d.id).sort();
  expect(ids).toEqual(Array.from({ length: EACH }, (_, d) => `d-${d}`).sort());
});

test("a portal session's destination list, creating one more destination (quota on), the account-wide redeliver: each at most 50 reads", async () => {
  const link = await stack.admin('POST', '/accounts/acme/portal-links', { ttlSeconds: 600 });
  expect(link.status).toBe(201);
  const token = (link.body as { url: string }).url.split('#portal=')[1]!;
  const opened = await fetch(`${stack.url}/admin/portal/sessions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token }) });
  const { sessionToken } = (await opened.json()) as { sessionToken: string };
  const portal = await counted(async () => {
    const res = await fetch(`${stack.url}/admin/accounts/acme/destinations`, { headers: { authorization: `Bearer ${sessionToken}` } });
    return { status: res.status, body: await res.json() };
  });
  expect(portal.status).toBe(200);
  expect((portal.body as { destinations: unknown[] }).destinations).toHaveLength(EACH);
  expect(portal.reads).toBeLessThanOrEqual(BUDGET);

  const created = await counted(() => stack.admin('PUT', '/accounts/acme/destinations/one-more', { url: URL_OF('acme', 'one-more'), eventTypes: ['com.example.x'] }));
  expect(created.status).toBe(201);
  expect(created.reads).toBeLessThanOrEqual(BUDGET);

  const redeliver = await counted(() => stack.admin('POST', '/accounts/acme/deliveries/redeliver', {}));
  expect(redeliver.status).toBe(202);
  expect(redeliver.reads).toBeLessThanOrEqual(BUDGET);
});

test('the quota counts the account’s destinations only (of 2,000): at its quota, the next is refused', async () => {
  const refused = await stack.admin('PUT', '/accounts/acme/destinations/over', { url: URL_OF('acme', 'over') });
  expect(refused.status).toBe(409);
  expect((refused.body as { error: string }).error).toContain(`account acme has ${EACH + 1} destinations`);
});

test('deleting an account without destinations reads its own, not the registry', async () => {
  const { reads, status } = await counted(() => stack.admin('DELETE', '/accounts/empty-co'));
  expect(status).toBe(204);
  expect(reads).toBeLessThanOrEqual(BUDGET);
});
