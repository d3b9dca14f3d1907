import { MemoryAccountStore } from '../../shared/adapters/memory/account-store';
import { MemoryDestinationStore } from '../../shared/adapters/memory/destination-store';
import { AccountPolicies } from '../../shared/app/access/account-policies';
import { AccountsAdminDeps, getAccount, updateAccount } from '../../shared/app/admin/accounts-admin';
import { putDestination } from '../../shared/app/admin/destinations-admin';
import { DestinationDirectory } from '../../shared/app/destinations/destination-directory';
import { Caller, OPERATOR } from '../../shared/domain/access/account';
import { internalDestinationId } from '../../shared/domain/ids';
import { createLogger } from '../../shared/log';

/**
 * Issue 50: a topic destination's topic must be on its account's allowedTopics, which only the
 * operator sets. Over memory stores: account B's key (with write) cannot point a destination at
 * account A's topic, nor at any topic off its own list, nor widen its list.
 */

const NOW = new Date('2026-12-01T10:00:00.000Z');
const clock = { now: () => NOW };
const log = createLogger({ write: () => undefined });
const ACME_TOPIC = 'projects/acme-prod/topics/acme-orders';
const keyOf = (account: string): Caller => ({ kind: 'key', account, keyId: `${account}00000000000`.slice(0, 16), scopes: ['read', 'write', 'publish'] });

async function setup(defaultAccountTopics: string[] = []) {
  const accounts = new MemoryAccountStore();
  for (const id of ['acme', 'globex']) await accounts.create({ id, name: id, settings: {}, createdAt: NOW.toISOString(), updatedAt: NOW.toISOString() });
  // A long cache: registration must read past it, or a list just changed would not apply.
  const policies = new AccountPolicies(accounts, clock, log, 3_600_000, undefined, defaultAccountTopics);
  const destinations = new MemoryDestinationStore();
  const admin = {
    destinations,
    directory: new DestinationDirectory(destinations, clock, 0),
    lanes: { ensureLane: async () => undefined, removeLane: async () => undefined },
    clock,
    log,
    addressRules: { allowLoopback: false },
    resolver: { lookup: async () => [{ address: '93.184.215.14', family: 4 as const }] },
    topicAccess: { names: { prefix: 'herald' }, allowedTopicsNow: (account: string) => policies.allowedTopicsNow(account) },
  } as unknown as Parameters<typeof putDestination>[0];
  const accountsAdmin: AccountsAdminDeps = { accounts, destinations: { countAccount: async () => 0 }, keys: { forget: () => undefined } as unknown as AccountsAdminDeps['keys'], clock, log, accountData: {} as AccountsAdminDeps['accountData'], defaultAccountTopics };
  const put = (account: string, id: string, topic: string) => putDestination(admin, internalDestinationId(account, id), { topic });
  const allow = (account: string, allowedTopics: string[] | null) => updateAccount(accountsAdmin, OPERATOR, account, { allowedTopics });
  return { put, allow, accountsAdmin, policies, destinations };
}

test("account B's key cannot register a topic destination at account A's topic, or any topic off B's list", async () => {
  const h = await setup();
  expect((await h.allow('acme', ['projects/acme-prod/topics/acme-*'])).kind).toBe('ok');
  // B (globex) has no list: A's topic, and any other, is a 403 naming the topic and what to do.
  const refused = await h.put('globex', 'steal', ACME_TOPIC);
  expect(refused).toMatchObject({ kind: 'forbidden', body: { issues: [{ path: 'topic' }] } });
  const error = (refused as { body: { error: string } }).body.error;
  expect(error).toContain(`topic ${ACME_TOPIC} is not among the topics account globex may publish to (it has no allowedTopics)`);
  expect(error).toContain('PATCH /admin/accounts/globex {"allowedTopics": [...]}');
  expect((await h.put('globex', 'anywhere', 'projects/globex-prod/topics/audit')).kind).toBe('forbidden');
  // With a list of its own, still not A's topic.
  await h.allow('globex', ['projects/globex-prod/topics/*']);
  expect((await h.put('globex', 'steal', ACME_TOPIC)).kind).toBe('forbidden');
  expect((await h.put('globex', 'audit', 'projects/globex-prod/topics/audit')).kind).toBe('created');
  // A registers its own topic; nothing of globex's was written.
  expect((await h.put('acme', 'orders', ACME_TOPIC)).kind).toBe('created');
  expect((await h.destinations.listAccount('globex')).map((d) => d.topic)).toEqual(['projects/globex-prod/topics/audit']);
});

test("Herald's own topics are a 400 in any project, even on an account's list", async () => {
  const h = await setup();
  await h.allow('acme', ['projects/acme-prod/topics/*', 'projects/herald-prod/topics/*']);
  for (const topic of ['projects/herald-prod/topics/herald-events', 'projects/acme-prod/topics/herald-dead-letter', 'projects/acme-prod/topics/herald%2Dshard-0', 'projects/acme-prod/topics/HERALD-LANE-x']) {
    const res = await h.put('acme', 'loop', topic);
    expect([topic, res.kind]).toEqual([topic, 'invalid']);
    expect(JSON.stringify(res)).toContain("named like one of Herald's own topics");
  }
});

test('a list the operator just changed applies to the next registration at once, past the cache', async () => {
  const h = await setup();
  await h.policies.allowedTopicsOf('acme'); // cached: none
  await h.allow('acme', [ACME_TOPIC]);
  expect((await h.put('acme', 'orders', ACME_TOPIC)).kind).toBe('created');
  await h.allow('acme', null);
  expect((await h.put('acme', 'orders', ACME_TOPIC)).kind).toBe('forbidden');
});

test('only the operator sets allowedTopics: a key of the account gets 403, a key of another 404', async () => {
  const h = await setup();
  const own = await updateAccount(h.accountsAdmin, keyOf('globex'), 'globex', { allowedTopics: [ACME_TOPIC] });
  expect(own).toMatchObject({ kind: 'forbidden', body: { error: expect.stringContaining('for the operator (the admin token) only') } });
  expect((await updateAccount(h.accountsAdmin, keyOf('globex'), 'acme', { allowedTopics: [ACME_TOPIC] })).kind).toBe('not-found');
  expect((await h.accountsAdmin.accounts.get('globex'))?.allowedTopics).toBeUndefined();
  // The account sees its list, not set by itself.
  await h.allow('globex', ['projects/globex-prod/topics/*']);
  expect(await getAccount(h.accountsAdmin, keyOf('globex'), 'globex')).toMatchObject({ kind: 'ok', body: { allowedTopics: ['projects/globex-prod/topics/*'], allowedTopicsInForce: ['projects/globex-prod/topics/*'] } });
});

test("the default account also has the deployment's HERALD_DEFAULT_ACCOUNT_TOPICS, and no other account does", async () => {
  const h = await setup(['projects/ops-prod/topics/audit']);
  expect((await h.put('default', 'audit', 'projects/ops-prod/topics/audit')).kind).toBe('created');
  expect((await h.put('acme', 'audit', 'projects/ops-prod/topics/audit')).kind).toBe('forbidden');
  expect(await getAccount(h.accountsAdmin, OPERATOR, 'default')).toMatchObject({ kind: 'ok', body: { allowedTopicsInForce: ['projects/ops-prod/topics/audit'] } });
});

test('the cached list at publish: the last known when the account cannot be read, never a guess when none is known', async () => {
  const h = await setup();
  await h.allow('acme', [ACME_TOPIC]);
  const failing = { get: async () => Promise.reject(new Error('firestore unavailable')) };
  const cold = new AccountPolicies(failing, clock, log, 0);
  expect(await cold.allowedTopicsOf('acme')).toEqual({ unreadable: 'firestore unavailable' });
  let fail = false;
  const flaky = { get: (id: string) => (fail ? Promise.reject(new Error('firestore unavailable')) : h.accountsAdmin.accounts.get(id)) };
  const warm = new AccountPolicies(flaky, clock, log, 0);
  expect(await warm.allowedTopicsOf('acme')).toEqual({ entries: [ACME_TOPIC] });
  fail = true;
  expect(await warm.allowedTopicsOf('acme')).toEqual({ entries: [ACME_TOPIC] });
});
