import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { spawn } from 'node:child_process';
import { linkClaims, portalKeyOf, portalSecretOf, signLink, signSession } from '../../shared/domain/access/portal';
import { LINK_EXCHANGES } from '../../shared/domain/access/portal-exchange-limit';
import { eventually } from '../support/eventually';
import { catalogueNow } from '../support/event-types';
import { Receiver } from '../support/receiver';
import { startTestStack, testSecretsKey, TestStack } from '../support/stack';

/**
 * The customer portal's backend on the emulators (docs/console.md): links minted by the
 * operator and by an account key, exchanged for sessions that act for one account (read-only,
 * narrowed to some destinations, which cannot widen what they take), refused when expired (with
 * the way back), tampered (without), used up or opened too often, the overview's aggregates, and
 * the console's static files with their headers (the portal page alone frameable).
 */

// A project of each run's own: a rerun on long-lived emulators finds none of the last run's accounts (whose ids are never given again).
const PROJECT = `portal-test-${Date.now().toString(36)}`;
let stack: TestStack;
const receiver = new Receiver();
const consoleRoot = mkdtempSync(join(tmpdir(), 'herald-console-'));
const consoleDir = join(consoleRoot, 'dist');
const outside = join(consoleRoot, 'secret.txt');
const keys = {} as Record<'writer' | 'reader' | 'writeOnly', string>;
const TYPE = 'com.example.portal.tested';

type Reply = { status: number; body: unknown; headers: Headers };

async function call(token: string | undefined, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  const res = await fetch(`${stack.url}/admin${path}`, {
    method,
    headers: { ...(token !== undefined ? { authorization: `Bearer ${token}` } : {}), 'content-type': 'application/json', ...headers },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    /* a static file */
  }
  return { status: res.status, body: parsed, headers: res.headers };
}

const operator = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => call(stack.config.adminToken, method, path, body, headers);
const tokenOf = (url: string) => url.split('#portal=')[1]!;
const exchange = (token: unknown) => call(undefined, 'POST', '/portal/sessions', { token });

async function session(spec: Record<string, unknown>, account = 'tenant-a'): Promise<{ sessionToken: string; body: Record<string, unknown> }> {
  const link = await operator('POST', `/accounts/${account}/portal-links`, spec);
  expect(link.status).toBe(201);
  const opened = await exchange(tokenOf((link.body as { url: string }).url));
  expect(opened.status).toBe(200);
  return { sessionToken: (opened.body as { sessionToken: string }).sessionToken, body: opened.body as Record<string, unknown> };
}

type Opened = { sessionToken: string; sessionId: string; linkId: string; token: string };

/** A link of `account` minted by `minter` (an account key; the operator when left out), and a session opened from it. */
async function open(account: string, spec: Record<string, unknown>, minter = stack.config.adminToken): Promise<Opened> {
  const link = await call(minter, 'POST', `/accounts/${account}/portal-links`, spec);
  expect(link.status).toBe(201);
  const { id, url } = link.body as { id: string; url: string };
  const opened = await exchange(tokenOf(url));
  expect(opened.status).toBe(200);
  const { sessionToken, sessionId } = opened.body as { sessionToken: string; sessionId: string };
  return { sessionToken, sessionId, linkId: id, token: tokenOf(url) };
}

/** Polls until `probe` answers 401, failing past 5 s after `since` (the contract's "within 5 s"). */
async function refusedWithin(what: string, since: number, probe: () => Promise<Reply>): Promise<Reply> {
  for (;;) {
    const reply = await probe();
    if (reply.status === 401) return reply;
    if (Date.now() - since > 5000) throw new Error(`${what} still answered ${reply.status} ${Date.now() - since} ms after the revocation`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

interface AdminInstance {
  call(token: string, method: string, path: string, body?: unknown): Promise<Reply>;
  stop(): Promise<void>;
}

/** The admin function once more, in a process of its own on this project (test/support/admin-instance.ts): another instance, with caches of its own. */
async function startAdminInstance(): Promise<AdminInstance> {
  const root = join(__dirname, '..', '..');
  const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'test', 'support', 'admin-instance.ts')], {
    cwd: root,
    env: {
      ...process.env,
      HERALD_PROJECT_ID: PROJECT,
      HERALD_SECRETS_KEY: testSecretsKey(PROJECT),
      HERALD_ADMIN_TOKEN: stack.config.adminToken,
      HERALD_INGEST_TOKEN: stack.config.ingestToken,
      HERALD_PUSH_TOKEN: 'portal-test-second-instance-push-token',
      HERALD_PUSH_BASE_URL: stack.url,
      HERALD_ALLOW_LOOPBACK: 'false',
      HERALD_LOG_LEVEL: 'WARNING',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => reject(new Error(`the second admin instance did not start within 30 s:\n${output}`)), 30_000);
    const take = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /admin instance at (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    };
    child.stdout!.on('data', take);
    child.stderr!.on('data', take);
    child.once('exit', (code) => reject(new Error(`the second admin instance exited with ${code}:\n${output}`)));
  });
  return {
    call: async (token, method, path, body) => {
      const res = await fetch(`${url}${path}`, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
      const text = await res.text();
      return { status: res.status, body: text ? (JSON.parse(text) as unknown) : undefined, headers: res.headers };
    },
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([exited, new Promise((r) => (timer = setTimeout(r, 5000)))]);
      clearTimeout(timer);
      if (child.exitCode === null) child.kill('SIGKILL');
    },
  };
}

/** The key this project's stacks sign portal tokens with: derived from its HERALD_SECRETS_KEY, as every instance derives it. */
const portalKey = () => portalKeyOf(portalSecretOf(testSecretsKey(PROJECT), createHash('sha256').update(stack.config.adminToken!).digest()));

beforeAll(async () => {
  mkdirSync(join(consoleDir, 'assets'), { recursive: true });
  writeFileSync(join(consoleDir, 'index.html'), '<!doctype html><title>Herald console</title><script type="module" src="assets/app-3f9a1c2b7d.js"></script>');
  writeFileSync(join(consoleDir, 'assets', 'app-3f9a1c2b7d.js'), 'console.log("herald")');
  writeFileSync(join(consoleDir, 'assets', 'style.css'), 'body{}');
  writeFileSync(outside, 'not for the console');
  symlinkSync(outside, join(consoleDir, 'assets', 'escape.txt'));
  await receiver.start();
  stack = await startTestStack(PROJECT, { HERALD_CONSOLE_DIR: consoleDir, HERALD_PORTAL_FRAME_ANCESTORS: 'https://app.example.com, http://127.0.0.1:3000' });
  for (const id of ['tenant-a', 'tenant-b']) expect((await operator('POST', '/accounts', { id, name: id === 'tenant-a' ? 'Tenant A' : 'Tenant B' })).status).toBe(201);
  const spec = (path: string) => ({ url: `${receiver.url}${path}`, eventTypes: [TYPE] });
  for (const [account, id] of [
    ['tenant-a', 'alpha'],
    ['tenant-a', 'beta'],
    ['tenant-b', 'alpha'],
  ] as const) {
    expect((await operator('PUT', `/accounts/${account}/destinations/${id}`, spec(`/${account}/${id}`))).status).toBe(201);
  }
  for (const [name, scopes] of [
    ['writer', ['read', 'write']],
    ['reader', ['read']],
    ['writeOnly', ['write', 'publish']],
  ] as const) {
    const made = await operator('POST', '/accounts/tenant-a/keys', { name, scopes });
    keys[name] = (made.body as { key: string }).key;
  }
});

afterAll(async () => {
  await stack?.stop({ purge: true });
  await receiver.stop();
  rmSync(consoleRoot, { recursive: true, force: true });
});

describe('portal links', () => {
  test('the operator mints one: the console URL with the token in its fragment, and when it expires', async () => {
    const before = Date.now();
    const link = await operator('POST', '/accounts/tenant-a/portal-links', { ttlSeconds: 600, readOnly: true, destinations: ['alpha'], returnUrl: 'https://app.example.com/webhooks' });
    expect(link).toMatchObject({
      status: 201,
      body: { url: expect.stringMatching(new RegExp(`^${stack.url}/admin/console/portal#portal=hpl_[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$`)) as unknown, scopes: ['read'], maxSessions: 10 },
    });
    const expiresAt = Date.parse((link.body as { expiresAt: string }).expiresAt);
    expect(expiresAt).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 + 600_000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 600_000);
    // Audited (who, which account, which fields), and the token is never logged.
    expect(stack.logs).toContainEqual(expect.objectContaining({ audit: true, actor: 'admin', account: 'tenant-a', route: 'POST /accounts/{accountId}/portal-links', fields: ['ttlSeconds', 'readOnly', 'destinations', 'returnUrl'], status: 201 }));
    expect(JSON.stringify(stack.logs)).not.toContain(tokenOf((link.body as { url: string }).url));
  });

  test('the URL is the configured console, whatever Host or X-Forwarded-* the request carries (issue 50: a caller chose the link host)', async () => {
    const forwarded: Record<string, string>[] = [
      { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'evil.example.com' },
      { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'ops.example.com', 'x-forwarded-prefix': '/herald/admin' },
      { 'x-forwarded-host': 'evil.example.com:8443' },
    ];
    for (const headers of forwarded) {
      const minted = await operator('POST', '/accounts/tenant-a/portal-links', { ttlSeconds: 60 }, headers);
      expect([headers, (minted.body as { url: string }).url]).toEqual([headers, expect.stringMatching(new RegExp(`^${stack.url}/admin/console/portal#portal=hpl_`))]);
    }
  });

  test('a key grants a link only scopes it holds (issue 50: a write-only key minted links that read the whole account)', async () => {
    // Left to the default, a write-only key's link is write-only: its session reads nothing.
    const minted = await call(keys.writeOnly, 'POST', '/accounts/tenant-a/portal-links', { ttlSeconds: 60 });
    expect(minted).toMatchObject({ status: 201, body: { scopes: ['write'] } });
    const opened = await exchange(tokenOf((minted.body as { url: string }).url));
    expect(opened).toMatchObject({ status: 200, body: { scopes: ['write'], readOnly: false } });
    const writeOnly = (opened.body as { sessionToken: string }).sessionToken;
    for (const path of ['/destinations', '/destinations/alpha', '/deliveries', '/stats', '/event-types', '/accounts/tenant-a']) {
      expect([path, await call(writeOnly, 'GET', path)]).toEqual([path, expect.objectContaining({ status: 403, body: { error: 'this portal session cannot read: it was opened from a link without the "read" scope' } })]);
    }
    // Asking for read, by scopes or readOnly, is refused naming it.
    for (const body of [{ ttlSeconds: 60, readOnly: true }, { ttlSeconds: 60, readOnly: false }, { ttlSeconds: 60, scopes: ['read', 'write'] }]) {
      expect(await call(keys.writeOnly, 'POST', '/accounts/tenant-a/portal-links', body)).toMatchObject({
        status: 403,
        body: { error: expect.stringMatching(/^this key cannot grant "read" to a portal link: a key may grant only the scopes it holds \(write, publish\)/) as unknown },
      });
    }
    // A key with both grants either, and both by default; a portal session mints none whatever it holds.
    expect(await call(keys.writer, 'POST', '/accounts/tenant-a/portal-links', { ttlSeconds: 60, readOnly: true })).toMatchObject({ status: 201, body: { scopes: ['read'] } });
    expect(await call(keys.writer, 'POST', '/accounts/tenant-a/portal-links', { ttlSeconds: 60 })).toMatchObject({ status: 201, body: { scopes: ['read', 'write'] } });
    expect(await call(writeOnly, 'POST', '/accounts/tenant-a/portal-links', { ttlSeconds: 60, scopes: ['write'] })).toMatchObject({ status: 403, body: { error: expect.stringMatching(/not possible from the customer portal/) as unknown } });
  });

  test('an account key with write mints one for its own account; read-only keys, other accounts and bad bodies are refused', async () => {
    expect(await call(keys.writer, 'POST', '/accounts/tenant-a/portal-links', { ttlSeconds: 60 })).toMatchObject({ status: 201 });
    expect(await call(keys.reader, 'POST', '/accounts/tenant-a/portal-links', { ttlSeconds: 60 })).toMatchObject({ status: 403, body: { error: expect.stringMatching(/lacks the "write" scope/) as unknown } });
    expect(await call(keys.writer, 'POST', '/accounts/tenant-b/portal-links', { ttlSeconds: 60 })).toMatchObject({ status: 404 });
    expect(await operator('POST', '/accounts/tenant-a/portal-links', { ttlSeconds: 10, returnUrl: 'http://evil.example.com', extra: 1 })).toMatchObject({
      status: 400,
      body: { issues: expect.arrayContaining([expect.objectContaining({ path: 'ttlSeconds' }), expect.objectContaining({ path: 'returnUrl' })]) as unknown },
    });
    expect(await operator('POST', '/accounts/tenant-a/portal-links', { ttlSeconds: 60, destinations: ['alpha', 'nope'] })).toMatchObject({
      status: 400,
      body: { error: expect.stringMatching(/no destination "nope" in account tenant-a/) as unknown, issues: [{ path: 'destinations' }] },
    });
  });
});

describe('portal sessions', () => {
  test('a link is exchanged without any credential for a session with the account, rights and theme', async () => {
    expect(await operator('PATCH', '/accounts/tenant-a', { portal: { brandColor: '#0A66C2', displayName: 'Tenant A webhooks', logoUrl: `data:image/png;base64,${Buffer.alloc(100, 1).toString('base64')}` } })).toMatchObject({
      status: 200,
      body: { portal: { brandColor: '#0a66c2', displayName: 'Tenant A webhooks' } },
    });
    expect(await operator('PATCH', '/accounts/tenant-a', { portal: { brandColor: 'blue' } })).toMatchObject({ status: 400, body: { issues: [{ path: 'portal.brandColor', message: expect.stringMatching(/#RRGGBB/) as unknown }] } });
    expect(await call(keys.writer, 'PATCH', '/accounts/tenant-a', { portal: null })).toMatchObject({ status: 403 });
    const { body } = await session({ ttlSeconds: 900, returnUrl: 'https://app.example.com/back' });
    expect(body).toEqual({
      sessionToken: expect.stringMatching(/^hps_/) as unknown,
      sessionId: expect.stringMatching(/^[A-Za-z0-9_-]{22}$/) as unknown,
      account: { id: 'tenant-a', name: 'Tenant A' },
      readOnly: false,
      scopes: ['read', 'write'],
      expiresAt: expect.any(String) as unknown,
      returnUrl: 'https://app.example.com/back',
      theme: { brandColor: '#0a66c2', displayName: 'Tenant A webhooks', logoUrl: expect.stringMatching(/^data:image\/png;base64,/) as unknown },
    });
    expect((await operator('PATCH', '/accounts/tenant-a', { portal: null })).body).not.toHaveProperty('portal');
  });

  test('the session reads and writes its account; read-only reads only; another account does not exist for it', async () => {
    const full = (await session({ ttlSeconds: 600 })).sessionToken;
    const list = await call(full, 'GET', '/destinations');
    expect((list.body as { destinations: { id: string; account: string }[] }).destinations.map((d) => `${d.account}/${d.id}`).sort()).toEqual(['tenant-a/alpha', 'tenant-a/beta']);
    expect(await call(full, 'POST', '/destinations/beta/rotate-secret', {})).toMatchObject({ status: 200, body: { account: 'tenant-a', secret: expect.stringMatching(/^whsec_/) as unknown } });
    expect(await call(full, 'GET', '/accounts')).toMatchObject({ status: 200, body: { accounts: [{ id: 'tenant-a' }] } });
    const b = (await operator('GET', '/accounts/tenant-b/destinations/alpha')).body;
    for (const path of ['/accounts/tenant-b/destinations', '/accounts/tenant-b/destinations/alpha', '/accounts/tenant-b', '/accounts/tenant-b/stats']) {
      expect(await call(full, 'GET', path)).toMatchObject({ status: 404, body: { error: 'no account "tenant-b"; list them with GET /admin/accounts' } });
    }
    expect((await call(full, 'DELETE', '/accounts/tenant-b/destinations/alpha')).status).toBe(404);
    expect((await operator('GET', '/accounts/tenant-b/destinations/alpha')).body).toEqual(b);
    expect(await call(full, 'POST', '/accounts/tenant-a/keys', { name: 'mine' })).toMatchObject({ status: 403, body: { error: expect.stringMatching(/customer portal/) as unknown } });
    expect(await call(full, 'POST', '/accounts/tenant-a/portal-links', { ttlSeconds: 60 })).toMatchObject({ status: 403, body: { error: expect.stringMatching(/minting a portal link is not possible from the customer portal/) as unknown } });

    const reader = (await session({ ttlSeconds: 600, readOnly: true })).sessionToken;
    expect((await call(reader, 'GET', '/destinations/alpha')).status).toBe(200);
    expect(await call(reader, 'DELETE', '/destinations/alpha')).toMatchObject({ status: 403, body: { error: expect.stringMatching(/read-only/) as unknown } });
    expect((await operator('GET', '/accounts/tenant-a/destinations/alpha')).status).toBe(200);
  });

  test('narrowed to some destinations, a session sees those alone', async () => {
    const { sessionToken, body } = await session({ ttlSeconds: 600, destinations: ['alpha'] });
    expect(body).toMatchObject({ destinations: ['alpha'] });
    expect(((await call(sessionToken, 'GET', '/destinations')).body as { destinations: { id: string }[] }).destinations.map((d) => d.id)).toEqual(['alpha']);
    expect(await call(sessionToken, 'GET', '/destinations/beta')).toEqual(expect.objectContaining({ status: 404, body: { error: 'no destination "tenant-a_beta"; list them with GET /admin/destinations' } }));
    expect((await call(sessionToken, 'GET', '/destinations/alpha')).status).toBe(200);
  });

  test('a link opens at most its maxSessions sessions, then says it is used up, with its way back (issue 50: links were unlimited)', async () => {
    const minted = await operator('POST', '/accounts/tenant-a/portal-links', { ttlSeconds: 600, maxSessions: 2, returnUrl: 'https://app.example.com/back' });
    expect(minted).toMatchObject({ status: 201, body: { maxSessions: 2 } });
    const { id, url } = minted.body as { id: string; url: string };
    for (let n = 0; n < 2; n++) expect((await exchange(tokenOf(url))).status).toBe(200);
    expect(await exchange(tokenOf(url))).toMatchObject({ status: 401, body: { reason: 'used-up', returnUrl: 'https://app.example.com/back', error: expect.stringMatching(/^this portal link has opened every session it may/) as unknown } });
    const listed = ((await operator('GET', '/accounts/tenant-a/portal-links')).body as { links: { id: string; sessionsOpened: number; sessions: unknown[] }[] }).links.find((l) => l.id === id);
    expect(listed).toMatchObject({ sessionsOpened: 2, maxSessions: 2 });
    expect(listed?.sessions).toHaveLength(2);
  });

  test('the public exchange is rate limited per link: 429 with Retry-After past a burst, and no session written (issue 50)', async () => {
    const minted = await operator('POST', '/accounts/tenant-a/portal-links', { ttlSeconds: 600, maxSessions: 100 });
    const { id, url } = minted.body as { id: string; url: string };
    const answers: Reply[] = [];
    for (let n = 0; n <= LINK_EXCHANGES.burst; n++) answers.push(await exchange(tokenOf(url)));
    expect(answers.slice(0, -1).map((a) => a.status)).toEqual(Array(LINK_EXCHANGES.burst).fill(200));
    const limited = answers.at(-1)!;
    const wait = 60 / LINK_EXCHANGES.perMinute;
    expect(limited).toMatchObject({ status: 429, body: { retryAfterSeconds: wait, error: `this portal link was opened too often just now: try again in ${wait} s` } });
    expect(limited.headers.get('retry-after')).toBe(String(wait));
    const listed = ((await operator('GET', '/accounts/tenant-a/portal-links')).body as { links: { id: string; sessionsOpened: number }[] }).links.find((l) => l.id === id);
    expect(listed?.sessionsOpened).toBe(LINK_EXCHANGES.burst);
    expect(stack.logs).toContainEqual(expect.objectContaining({ message: 'portal link exchange limited', limit: 'link', link: id }));
    // Another link is not held back by this one.
    expect((await session({ ttlSeconds: 60 })).sessionToken).toMatch(/^hps_/);
  });

  test('an expired link is refused with its returnUrl; a tampered one without; an expired session is refused', async () => {
    const key = portalKey();
    const old = linkClaims('tenant-a', { ttlSeconds: 60, readOnly: false, returnUrl: 'https://app.example.com/back' }, new Date(Date.now() - 120_000));
    expect(await exchange(signLink(key, old))).toMatchObject({
      status: 401,
      body: { error: expect.stringMatching(/^this portal link has expired/) as unknown, reason: 'expired', returnUrl: 'https://app.example.com/back' },
    });
    const fresh = tokenOf(((await operator('POST', '/accounts/tenant-a/portal-links', { ttlSeconds: 600, returnUrl: 'https://app.example.com/back' })).body as { url: string }).url);
    const [body, sig] = fresh.slice('hpl_'.length).split('.') as [string, string];
    const claims = JSON.parse(Buffer.from(body, 'base64url').toString()) as Record<string, unknown>;
    const forged = `hpl_${Buffer.from(JSON.stringify({ ...claims, account: 'tenant-b' })).toString('base64url')}.${sig}`;
    for (const bad of [forged, fresh.slice(0, -3), 'hpl_garbage', signLink(portalKeyOf(Buffer.alloc(32, 9)), { ...old, exp: old.exp + 10_000 })]) {
      expect(await exchange(bad)).toEqual(expect.objectContaining({ status: 401, body: { error: expect.stringMatching(/^this portal link is not valid/) as unknown, reason: 'invalid' } }));
    }
    expect(await exchange(42)).toMatchObject({ status: 400 });
    expect(await call(undefined, 'POST', '/portal/sessions', undefined)).toMatchObject({ status: 400 });
    expect(await call(signSession(key, old, 'A'.repeat(22)), 'GET', '/destinations')).toMatchObject({ status: 401, body: { error: expect.stringMatching(/expired/) as unknown, reason: 'expired' } });
    expect(await call('hps_forged.x', 'GET', '/destinations')).toMatchObject({ status: 401, body: { reason: 'invalid' } });
    // A link is not a session.
    expect((await call(fresh, 'GET', '/destinations')).status).toBe(401);
    // A deleted account's sessions end with it.
    expect((await operator('POST', '/accounts', { id: 'tenant-gone', name: 'Gone' })).status).toBe(201);
    const doomed = (await session({ ttlSeconds: 600 }, 'tenant-gone')).sessionToken;
    expect((await call(doomed, 'GET', '/destinations')).status).toBe(200);
    expect((await operator('DELETE', '/accounts/tenant-gone')).status).toBe(204);
    expect(await call(doomed, 'GET', '/destinations')).toMatchObject({ status: 401, body: { reason: 'revoked', error: expect.stringMatching(/^the portal session has ended \(its account no longer exists\)/) as unknown } });
    // Its links and sessions are deleted with it.
    expect(await stack.runtime.portals.sessions('tenant-gone', new Date(0), 10)).toEqual([]);
    expect(await stack.runtime.portals.links('tenant-gone', new Date(0), 10)).toEqual([]);
  });
});

describe('ending portal access (docs/console.md "Ending portal access")', () => {
  /** Another admin instance on this project (a process of its own): what it caches is not this stack's. */
  let second: AdminInstance;
  const minters = {} as Record<'doomed' | 'tenantB' | 'tenantBReader', string>;

  beforeAll(async () => {
    second = await startAdminInstance();
    for (const [name, account, scopes] of [
      ['doomed', 'tenant-a', ['read', 'write']],
      ['tenantB', 'tenant-b', ['read', 'write']],
      ['tenantBReader', 'tenant-b', ['read']],
    ] as const) {
      const made = await operator('POST', `/accounts/${account}/keys`, { name, scopes });
      expect(made.status).toBe(201);
      minters[name] = (made.body as { key: string }).key;
    }
  });

  afterAll(async () => {
    await second?.stop();
  });

  test('an account key revoked: the sessions of links it minted are refused within 5 s on every instance; the operator’s stand', async () => {
    const byKey = await open('tenant-a', { ttlSeconds: 600, returnUrl: 'https://app.example.com/back' }, minters.doomed);
    const byOperator = await open('tenant-a', { ttlSeconds: 600 });
    // Both instances have read (and cached) both sessions.
    for (const s of [byKey, byOperator]) {
      expect((await call(s.sessionToken, 'GET', '/destinations')).status).toBe(200);
      expect((await second.call(s.sessionToken, 'GET', '/destinations')).status).toBe(200);
    }
    expect((await call(byKey.sessionToken, 'PUT', '/destinations/beta', { url: `${receiver.url}/tenant-a/beta`, eventTypes: [TYPE] })).status).toBe(200);
    const keyId = minters.doomed.split('_')[1]!;
    const revokedAt = Date.now();
    expect((await operator('DELETE', `/accounts/tenant-a/keys/${keyId}`)).status).toBe(204);
    // The instance that revoked it forgets at once; the other reads it again within its 4 s.
    expect(await call(byKey.sessionToken, 'GET', '/destinations')).toMatchObject({
      status: 401,
      body: { reason: 'revoked', error: 'the portal session has ended (the account key that made its link was revoked): open the portal again from where you got the link' },
    });
    const elsewhere = await refusedWithin('the second instance', revokedAt, () => second.call(byKey.sessionToken, 'GET', '/destinations'));
    expect(elsewhere.body).toMatchObject({ reason: 'revoked' });
    expect((await second.call(byKey.sessionToken, 'PUT', '/destinations/beta', { url: `${receiver.url}/tenant-a/beta`, eventTypes: [TYPE] })).status).toBe(401);
    // The link opens nothing more (its returnUrl given back: its signature holds).
    expect(await exchange(byKey.token)).toMatchObject({ status: 401, body: { reason: 'revoked', returnUrl: 'https://app.example.com/back', error: expect.stringMatching(/^this portal link no longer works: the account key that made its link was revoked/) as unknown } });
    // The operator's session is nobody's key's.
    expect((await call(byOperator.sessionToken, 'GET', '/destinations')).status).toBe(200);
    expect((await second.call(byOperator.sessionToken, 'GET', '/destinations')).status).toBe(200);
    const listed = (await operator('GET', '/accounts/tenant-a/portal-links')).body as { links: { id: string }[] };
    expect(listed.links.map((l) => l.id)).toContain(byOperator.linkId);
    expect(listed.links.map((l) => l.id)).not.toContain(byKey.linkId);
  });

  test('listed: live links newest first with their sessions, sessions with their link’s rights; by the operator or a key, never a portal session', async () => {
    const writerId = keys.writer.split('_')[1]!;
    const older = await open('tenant-a', { ttlSeconds: 600 }, keys.writer);
    const newer = await open('tenant-a', { ttlSeconds: 900, readOnly: true, destinations: ['alpha'] });
    const again = await exchange(newer.token);
    const againId = (again.body as { sessionId: string }).sessionId;
    const links = (await call(keys.reader, 'GET', '/accounts/tenant-a/portal-links')).body as { links: { id: string }[] };
    const ids = links.links.map((l) => l.id);
    expect(ids.indexOf(newer.linkId)).toBeLessThan(ids.indexOf(older.linkId));
    expect(links.links.find((l) => l.id === newer.linkId)).toEqual({
      id: newer.linkId,
      account: 'tenant-a',
      mintedBy: 'admin',
      readOnly: true,
      scopes: ['read'],
      destinations: ['alpha'],
      maxSessions: 10,
      sessionsOpened: 2,
      createdAt: expect.any(String) as unknown,
      expiresAt: expect.any(String) as unknown,
      sessions: expect.arrayContaining([expect.objectContaining({ id: newer.sessionId }), expect.objectContaining({ id: againId })]) as unknown,
    });
    expect(links.links.find((l) => l.id === older.linkId)).toMatchObject({ mintedBy: writerId, readOnly: false, sessions: [{ id: older.sessionId }] });
    const sessions = (await operator('GET', '/accounts/tenant-a/portal-sessions')).body as { sessions: { id: string }[] };
    expect(sessions.sessions.find((s) => s.id === againId)).toEqual({ id: againId, linkId: newer.linkId, mintedBy: 'admin', readOnly: true, scopes: ['read'], destinations: ['alpha'], createdAt: expect.any(String) as unknown, expiresAt: expect.any(String) as unknown });
    expect(sessions.sessions.map((s) => s.id)).toEqual(expect.arrayContaining([older.sessionId, newer.sessionId, againId]));
    // Another account's are not there; a portal session may not look.
    expect(((await operator('GET', '/accounts/tenant-b/portal-sessions')).body as { sessions: { id: string }[] }).sessions.map((s) => s.id)).not.toContain(older.sessionId);
    for (const path of ['/accounts/tenant-a/portal-links', '/accounts/tenant-a/portal-sessions']) {
      expect(await call(older.sessionToken, 'GET', path)).toMatchObject({ status: 403, body: { error: expect.stringMatching(/is not possible from the customer portal/) as unknown } });
    }
    expect(await call(older.sessionToken, 'DELETE', `/accounts/tenant-a/portal-sessions/${newer.sessionId}`)).toMatchObject({ status: 403 });
    expect(await call(keys.reader, 'DELETE', `/accounts/tenant-a/portal-sessions/${newer.sessionId}`)).toMatchObject({ status: 403, body: { error: expect.stringMatching(/lacks the "write" scope/) as unknown } });
    expect((await call(newer.sessionToken, 'GET', '/destinations')).status).toBe(200);
  });

  test('a session revoked ends alone; a link revoked ends every session opened from it and opens no more', async () => {
    const first = await open('tenant-a', { ttlSeconds: 600, returnUrl: 'https://app.example.com/back' });
    const secondSession = ((await exchange(first.token)).body as { sessionToken: string; sessionId: string });
    for (const token of [first.sessionToken, secondSession.sessionToken]) expect((await second.call(token, 'GET', '/destinations')).status).toBe(200);

    let at = Date.now();
    expect((await call(keys.writer, 'DELETE', `/accounts/tenant-a/portal-sessions/${first.sessionId}`)).status).toBe(204);
    expect(await call(first.sessionToken, 'GET', '/destinations')).toMatchObject({ status: 401, body: { reason: 'revoked', error: expect.stringMatching(/\(it was revoked\)/) as unknown } });
    await refusedWithin('the revoked session on the second instance', at, () => second.call(first.sessionToken, 'GET', '/destinations'));
    expect((await call(secondSession.sessionToken, 'GET', '/destinations')).status).toBe(200);

    at = Date.now();
    expect((await operator('DELETE', `/accounts/tenant-a/portal-links/${first.linkId}`)).status).toBe(204);
    expect(await call(secondSession.sessionToken, 'GET', '/destinations')).toMatchObject({ status: 401, body: { reason: 'revoked', error: expect.stringMatching(/\(its link was revoked\)/) as unknown } });
    await refusedWithin("the revoked link's session on the second instance", at, () => second.call(secondSession.sessionToken, 'GET', '/destinations'));
    expect(await exchange(first.token)).toMatchObject({ status: 401, body: { reason: 'revoked', returnUrl: 'https://app.example.com/back' } });
    // Again: still revoked (204); unknown ids and other accounts' ids are 404, and change nothing.
    expect((await operator('DELETE', `/accounts/tenant-a/portal-links/${first.linkId}`)).status).toBe(204);
    expect(await operator('DELETE', `/accounts/tenant-a/portal-links/${'Z'.repeat(22)}`)).toMatchObject({ status: 404, body: { error: expect.stringMatching(/^no portal link "Z+" in account "tenant-a"/) as unknown } });
    expect((await operator('DELETE', '/accounts/tenant-a/portal-sessions/nope')).status).toBe(404);
    const other = await open('tenant-b', { ttlSeconds: 600 });
    expect((await call(keys.writer, 'DELETE', `/accounts/tenant-a/portal-links/${other.linkId}`)).status).toBe(404);
    expect((await call(keys.writer, 'DELETE', `/accounts/tenant-a/portal-sessions/${other.sessionId}`)).status).toBe(404);
    expect((await call(keys.writer, 'DELETE', `/accounts/tenant-b/portal-links/${other.linkId}`)).status).toBe(404);
    expect((await call(other.sessionToken, 'GET', '/destinations')).status).toBe(200);
    // Audited, and gone from the lists.
    expect(stack.logs).toContainEqual(expect.objectContaining({ audit: true, actor: 'admin', account: 'tenant-a', route: 'DELETE /accounts/{accountId}/portal-links/{linkId}', ids: ['tenant-a', first.linkId], status: 204 }));
    const sessions = (await operator('GET', '/accounts/tenant-a/portal-sessions')).body as { sessions: { id: string }[] };
    expect(sessions.sessions.map((s) => s.id)).not.toEqual(expect.arrayContaining([first.sessionId]));
    expect(sessions.sessions.map((s) => s.id)).not.toContain(secondSession.sessionId);
  });

  test('every session of an account ended at once: by the operator or a key with write; links minted afterwards work', async () => {
    const byOperator = await open('tenant-b', { ttlSeconds: 600 });
    const byKey = await open('tenant-b', { ttlSeconds: 600 }, minters.tenantB);
    const elsewhere = await open('tenant-a', { ttlSeconds: 600 });
    for (const s of [byOperator, byKey]) expect((await second.call(s.sessionToken, 'GET', '/destinations')).status).toBe(200);
    expect(await call(minters.tenantBReader, 'POST', '/accounts/tenant-b/portal-sessions/revoke')).toMatchObject({ status: 403 });
    expect(await call(byOperator.sessionToken, 'POST', '/accounts/tenant-b/portal-sessions/revoke')).toMatchObject({ status: 403, body: { error: expect.stringMatching(/not possible from the customer portal/) as unknown } });
    expect(await call(keys.writer, 'POST', '/accounts/tenant-b/portal-sessions/revoke')).toMatchObject({ status: 404 });

    const at = Date.now();
    const ended = await call(minters.tenantB, 'POST', '/accounts/tenant-b/portal-sessions/revoke');
    expect(ended).toMatchObject({ status: 200, body: { endedAt: expect.any(String) as unknown, links: expect.any(Number) as unknown, sessions: expect.any(Number) as unknown } });
    expect((ended.body as { sessions: number }).sessions).toBeGreaterThanOrEqual(2);
    for (const s of [byOperator, byKey]) {
      expect(await call(s.sessionToken, 'GET', '/destinations')).toMatchObject({ status: 401, body: { reason: 'revoked', error: expect.stringMatching(/every portal session of the account was ended/) as unknown } });
      await refusedWithin('an ended session on the second instance', at, () => second.call(s.sessionToken, 'GET', '/destinations'));
      expect(await exchange(s.token)).toMatchObject({ status: 401, body: { reason: 'revoked' } });
    }
    expect(await operator('GET', '/accounts/tenant-b/portal-sessions')).toEqual({ status: 200, body: { sessions: [] }, headers: expect.anything() as unknown });
    expect(stack.logs).toContainEqual(expect.objectContaining({ audit: true, actor: `key:${minters.tenantB.split('_')[1]}`, account: 'tenant-b', route: 'POST /accounts/{accountId}/portal-sessions/revoke', status: 200 }));
    // Another account's sessions are not touched; a new link opens a new session.
    expect((await call(elsewhere.sessionToken, 'GET', '/destinations')).status).toBe(200);
    const fresh = await open('tenant-b', { ttlSeconds: 600 });
    expect((await call(fresh.sessionToken, 'GET', '/destinations')).status).toBe(200);
    expect((await second.call(fresh.sessionToken, 'GET', '/destinations')).status).toBe(200);
  });
});

describe('a narrowed session sees nothing of the destinations outside it', () => {
  const SHARED = 'com.example.narrow.shared';
  const SEEN = 'com.example.narrow.seen';
  const HIDDEN = 'com.example.narrow.hidden';
  let narrow: string;

  beforeAll(async () => {
    // d2 fails and queues what it gets: the account has QUEUED deliveries, all of them d2's.
    receiver.setResponder((req) => (req.path.startsWith('/tenant-n/d2') ? { status: 500 } : { status: 204 }));
    expect((await operator('POST', '/accounts', { id: 'tenant-n', name: 'Tenant N' })).status).toBe(201);
    expect((await operator('PUT', '/accounts/tenant-n/destinations/d1', { url: `${receiver.url}/tenant-n/d1`, eventTypes: [SHARED, SEEN] })).status).toBe(201);
    expect((await operator('PUT', '/accounts/tenant-n/destinations/d2', { url: `${receiver.url}/tenant-n/d2`, eventTypes: [SHARED, HIDDEN], failureMode: 'queue' })).status).toBe(201);
    for (const [id, type] of [
      ['n-1', SHARED],
      ['n-2', SEEN],
      ['n-3', HIDDEN],
    ] as const) {
      const res = await stack.ingest({ 'content-type': 'application/json', 'ce-id': id, 'ce-source': '/narrow', 'ce-type': type, 'ce-specversion': '1.0', 'ce-heraldaccount': 'tenant-n' }, JSON.stringify({ secret: `payload of ${type}` }));
      expect(res.status).toBe(202);
    }
    await eventually('d2 to have queued both its events, d1 to have had both of its, all four attempts counted', async () => {
      const stats = (await operator('GET', '/accounts/tenant-n/stats')).body as { series: { attempts: number; successes: number }[]; queued: number };
      const sum = (f: 'attempts' | 'successes') => stats.series.reduce((n, p) => n + p[f], 0);
      return stats.queued === 2 && sum('attempts') === 4 && sum('successes') === 2 ? true : undefined;
    });
    await eventually('three event types sampled', async () => {
      await catalogueNow(stack);
      return ((await operator('GET', '/accounts/tenant-n/event-types')).body as { eventTypes: unknown[] }).eventTypes.length === 3 ? true : undefined;
    });
    narrow = (await session({ ttlSeconds: 600, destinations: ['d1'] }, 'tenant-n')).sessionToken;
  });

  afterAll(() => receiver.setResponder(() => ({ status: 204 })));

  test('event types: only those its destinations take, naming only them; no sample of a hidden one', async () => {
    const all = (await operator('GET', '/accounts/tenant-n/event-types')).body as { eventTypes: { type: string; destinations: string[] }[] };
    expect(all.eventTypes.map((t) => [t.type, t.destinations])).toEqual([
      [HIDDEN, ['d2']],
      [SEEN, ['d1']],
      [SHARED, ['d1', 'd2']],
    ]);
    const seen = await call(narrow, 'GET', '/event-types');
    const types = (seen.body as { eventTypes: { type: string; destinations: string[]; sample: { data?: unknown } }[] }).eventTypes;
    expect(types.map((t) => [t.type, t.destinations])).toEqual([
      [SEEN, ['d1']],
      [SHARED, ['d1']],
    ]);
    expect(types.find((t) => t.type === SHARED)?.sample).toMatchObject({ data: { secret: `payload of ${SHARED}` } });
    expect(JSON.stringify(seen.body)).not.toContain(HIDDEN);
    expect(JSON.stringify(seen.body)).not.toContain('d2');
  });

  test('stats: its destinations’ counters and counts alone', async () => {
    type Stats = { series: { attempts: number }[]; queued: number; dead: number };
    const attempts = (s: Stats) => s.series.reduce((n, p) => n + p.attempts, 0);
    const all = (await operator('GET', '/accounts/tenant-n/stats')).body as Stats;
    expect(all).toMatchObject({ queued: 2 });
    expect(attempts(all)).toBe(4);
    const mine = (await call(narrow, 'GET', '/stats')).body as Stats;
    expect(mine).toMatchObject({ queued: 0, dead: 0 });
    expect(attempts(mine)).toBe(2);
    expect(await call(narrow, 'GET', '/stats?destination=d2')).toMatchObject({ status: 404 });
  });

  test('deliveries: none of a hidden destination listed, fetched or sent again', async () => {
    const queued = ((await operator('GET', '/accounts/tenant-n/deliveries?status=queued')).body as { deliveries: { id: string }[] }).deliveries.map((d) => d.id);
    expect(queued).toHaveLength(2);
    expect(await call(narrow, 'GET', '/deliveries?status=queued')).toMatchObject({ status: 200, body: { deliveries: [] } });
    expect(((await call(narrow, 'GET', '/deliveries?status=dead')).body as { deliveries: unknown[] }).deliveries).toEqual([]);
    for (const id of queued) expect((await call(narrow, 'GET', `/deliveries/${id}`)).status).toBe(404);
    expect(await call(narrow, 'POST', '/deliveries/redeliver', {})).toMatchObject({ status: 202, body: { redelivered: 0, destinations: [{ id: 'd1', redelivered: 0 }], suspended: [] } });
    expect(await call(narrow, 'POST', '/deliveries/redeliver', { ids: queued })).toMatchObject({ status: 202, body: { redelivered: 0, results: queued.map((id) => ({ id, outcome: 'not-found' })) } });
    expect(await call(narrow, 'GET', '/destinations/d2/deliveries')).toMatchObject({ status: 404 });
    expect(((await operator('GET', '/accounts/tenant-n/deliveries?status=queued')).body as { deliveries: { id: string }[] }).deliveries.map((d) => d.id)).toEqual(queued);
    // Replays: only of its own destinations, asked and listed.
    expect(await call(narrow, 'POST', '/replays', { dryRun: true })).toMatchObject({ status: 403 });
    expect(await call(narrow, 'POST', '/replays', { destination: 'd2', dryRun: true })).toMatchObject({ status: 403 });
    expect((await operator('POST', '/accounts/tenant-n/replays', { destination: 'd2', dryRun: true })).status).toBe(202);
    expect(((await call(narrow, 'GET', '/replays')).body as { replays: unknown[] }).replays).toEqual([]);
  });

  test('it cannot widen its destination’s event types nor create one: another destination’s events stay there (issue 50)', async () => {
    const d1 = `${receiver.url}/tenant-n/d1`;
    const before = (await operator('GET', '/accounts/tenant-n/destinations/d1')).body as { eventTypes: string[] };
    for (const spec of [{ url: d1, eventTypes: ['com.example.narrow.*'] }, { url: d1, eventTypes: [SEEN, HIDDEN] }, { url: d1, eventTypes: ['*'] }, { url: d1 }]) {
      expect(await call(narrow, 'PUT', '/destinations/d1', spec)).toMatchObject({
        status: 403,
        body: { error: expect.stringMatching(/^this portal session cannot widen the event types of destination "d1"/) as unknown, issues: [{ path: 'eventTypes' }] },
      });
    }
    expect(((await operator('GET', '/accounts/tenant-n/destinations/d1')).body as { eventTypes: string[] }).eventTypes).toEqual(before.eventTypes);
    // What only d2 takes still goes to d2 alone.
    expect((await stack.ingest({ 'content-type': 'application/json', 'ce-id': 'n-4', 'ce-source': '/narrow', 'ce-type': HIDDEN, 'ce-specversion': '1.0', 'ce-heraldaccount': 'tenant-n' }, '{}')).status).toBe(202);
    const byEvent = async (id: string) => ((await operator('GET', `/accounts/tenant-n/destinations/${id}/deliveries?eventId=n-4`)).body as { deliveries: unknown[] }).deliveries;
    await eventually('d2 to have its delivery of n-4', async () => ((await byEvent('d2')).length === 1 ? true : undefined));
    expect(await byEvent('d1')).toEqual([]);
    // The same types or fewer, and a URL of its own choosing, are its to set.
    expect(await call(narrow, 'PUT', '/destinations/d1', { url: `${d1}-moved`, eventTypes: [SEEN] })).toMatchObject({ status: 200, body: { eventTypes: [SEEN] } });
    expect((await operator('PUT', '/accounts/tenant-n/destinations/d1', { url: d1, eventTypes: before.eventTypes })).status).toBe(200);
    // Not the hidden one, and no new one: d3, deleted under a session narrowed to it, is not made again.
    expect(await call(narrow, 'PUT', '/destinations/d2', { url: d1, eventTypes: [SHARED] })).toMatchObject({ status: 404 });
    expect((await operator('PUT', '/accounts/tenant-n/destinations/d3', { url: `${receiver.url}/tenant-n/d3`, eventTypes: [SEEN] })).status).toBe(201);
    const toD3 = (await session({ ttlSeconds: 600, destinations: ['d3'] }, 'tenant-n')).sessionToken;
    expect((await operator('DELETE', '/accounts/tenant-n/destinations/d3')).status).toBe(204);
    expect(await call(toD3, 'PUT', '/destinations/d3', { url: `${receiver.url}/tenant-n/d3`, eventTypes: ['*'] })).toMatchObject({
      status: 403,
      body: { error: expect.stringMatching(/^this portal session cannot create destination "d3"/) as unknown },
    });
    expect((await operator('GET', '/accounts/tenant-n/destinations/d3')).status).toBe(404);
  });

  test('no GET of the API without an id shows anything of the other destination', async () => {
    const api = (await (await fetch(`${stack.url}/admin/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
    const lists = Object.entries(api.paths)
      .filter(([path, methods]) => 'get' in methods && !/\{(?!accountId\})/.test(path))
      .map(([path]) => path.replace(/^\/admin/, '').replace('{accountId}', 'tenant-n'));
    expect(lists).toEqual(expect.arrayContaining(['/destinations', '/deliveries', '/event-types', '/stats', '/replays', '/accounts/tenant-n/destinations', '/accounts/tenant-n/deliveries']));
    const d2Url = `${receiver.url}/tenant-n/d2`;
    const marks = [d2Url, 'tenant-n_d2', '"d2"', HIDDEN];
    for (const path of [...lists, '/deliveries?status=dead', `/deliveries?url=${encodeURIComponent(d2Url)}`, `/accounts/tenant-n/deliveries?url=${encodeURIComponent(d2Url)}`, '/stats?window=24h']) {
      const reply = await call(narrow, 'GET', path);
      expect([path, reply.status < 500]).toEqual([path, true]);
      for (const mark of marks) expect([path, mark, JSON.stringify(reply.body).includes(mark)]).toEqual([path, mark, false]);
    }
  });
});

describe('overview aggregates', () => {
  test('attempts per bucket from the counters, success rate, queued and dead counts; narrowed to the session', async () => {
    for (const [account, id] of [
      ['tenant-a', 'a-1'],
      ['tenant-a', 'a-2'],
      ['tenant-b', 'b-1'],
    ] as const) {
      const res = await stack.ingest({ 'content-type': 'application/json', 'ce-id': id, 'ce-source': '/portal-test', 'ce-type': TYPE, 'ce-specversion': '1.0', 'ce-heraldaccount': account }, '{}');
      expect(res.status).toBe(202);
    }
    type Stats = { window: string; bucketMs: number; series: { start: string; attempts: number; successes: number; failures: number }[]; successRate?: number; queued: number; dead: number };
    const total = (s: Stats) => s.series.reduce((n, p) => n + p.attempts, 0);
    // alpha and beta each take both events of tenant-a: 4 attempts.
    const stats = await eventually('tenant-a counted', async () => {
      const s = (await operator('GET', '/accounts/tenant-a/stats')).body as Stats;
      return total(s) >= 4 ? s : undefined;
    });
    expect(stats).toMatchObject({ window: '1h', bucketMs: 60_000, successRate: 1, queued: 0, dead: 0 });
    expect(stats.series).toHaveLength(60);
    const narrow = (await session({ ttlSeconds: 600, destinations: ['alpha'] })).sessionToken;
    expect(total((await call(narrow, 'GET', '/stats')).body as Stats)).toBe(2);
    const day = (await call(narrow, 'GET', '/stats?window=24h')).body as Stats;
    expect(day).toMatchObject({ window: '24h', bucketMs: 900_000 });
    expect(day.series).toHaveLength(96);
    expect(await operator('GET', '/stats?window=7d')).toMatchObject({ status: 400, body: { issues: [{ path: 'window', message: 'window must be "1h" or "24h"' }] } });
    // Attempt latency from the counters' histograms: p50/p99 over the window and per point with attempts.
    type Latency = { latencyMs?: { p50: number; p99: number }; series: { attempts: number; p50Ms?: number; p99Ms?: number }[] };
    const withLatency = stats as unknown as Latency;
    expect(withLatency.latencyMs).toEqual({ p50: expect.any(Number) as unknown, p99: expect.any(Number) as unknown });
    expect(withLatency.latencyMs!.p99).toBeGreaterThanOrEqual(withLatency.latencyMs!.p50);
    expect(withLatency.series.filter((p) => p.attempts > 0).every((p) => typeof p.p50Ms === 'number' && typeof p.p99Ms === 'number')).toBe(true);
    expect(withLatency.series.filter((p) => p.attempts === 0).some((p) => 'p50Ms' in p)).toBe(false);
    // One destination's numbers: by its id in the account.
    const alpha = (await operator('GET', '/accounts/tenant-a/stats?window=1h&destination=alpha')).body as Stats & Latency & { destination: string };
    expect(alpha).toMatchObject({ window: '1h', destination: 'alpha', successRate: 1, latencyMs: { p50: expect.any(Number) as unknown } });
    expect(total(alpha)).toBe(2);
    expect(total((await call(narrow, 'GET', '/stats?destination=alpha')).body as Stats)).toBe(2);
    // Unknown, or not the session's: 404 as on the destination routes; malformed: 400 naming the parameter.
    expect(await operator('GET', '/accounts/tenant-a/stats?destination=nope')).toMatchObject({ status: 404, body: { error: 'no destination "tenant-a_nope"; list them with GET /admin/destinations' } });
    expect(await call(narrow, 'GET', '/stats?destination=beta')).toMatchObject({ status: 404 });
    expect(await operator('GET', '/accounts/tenant-a/stats?destination=Not_An_Id')).toMatchObject({ status: 400, body: { error: 'invalid query', issues: [{ path: 'destination', message: expect.stringMatching(/^destination must be a destination id/) as unknown }] } });
  });
});

describe('the console files', () => {
  const policy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: https:; connect-src 'self'; base-uri 'none'; form-action 'self'; object-src 'none'";
  const csp = `${policy}; frame-ancestors 'none'`;

  test('the operator console may be framed by no one; the portal page by the configured origins alone (issue 50: any site could frame the sign-in)', async () => {
    for (const path of ['/console/', '/console/index.html', '/console/destinations/alpha', '/console/assets/app-3f9a1c2b7d.js', '/console/portal/', '/console/portal.html']) {
      const reply = await fetch(`${stack.url}/admin${path}`, { redirect: 'manual' });
      expect([path, reply.headers.get('content-security-policy'), reply.headers.get('x-frame-options')]).toEqual([path, csp, 'DENY']);
    }
    const portal = await fetch(`${stack.url}/admin/console/portal`);
    expect([portal.status, portal.headers.get('content-type')]).toEqual([200, 'text/html; charset=utf-8']);
    expect(await portal.text()).toMatch(/<title>Herald console<\/title>/);
    expect(portal.headers.get('content-security-policy')).toBe(`${policy}; frame-ancestors https://app.example.com http://127.0.0.1:3000`);
    expect(portal.headers.get('x-frame-options')).toBeNull();
    // The links Herald mints lead there.
    expect(((await operator('POST', '/accounts/tenant-a/portal-links', { ttlSeconds: 60 })).body as { url: string }).url).toMatch(/\/admin\/console\/portal#portal=hpl_/);
  });

  test('index.html at /console/ and at any route of its own, with the CSP and no credential', async () => {
    // `/console` is `/console/` (its files are named relative to it), the query kept; fetch follows.
    const bare = await fetch(`${stack.url}/admin/console?x=1`, { redirect: 'manual' });
    expect([bare.status, bare.headers.get('location'), bare.headers.get('content-security-policy')]).toEqual([308, 'console/?x=1', csp]);
    // Local mode: http://127.0.0.1:PORT/console is the admin function's console.
    for (const [from, to] of [['/console', '/admin/console/'], ['/console/destinations?x=1', '/admin/console/destinations?x=1']]) {
      const local = await fetch(`${stack.url}${from}`, { redirect: 'manual' });
      expect([from, local.status, local.headers.get('location')]).toEqual([from, 308, to]);
    }
    expect((await fetch(`${stack.url}/console`)).status).toBe(200);
    for (const path of ['/console', '/console/', '/console/destinations/alpha']) {
      const page = await call(undefined, 'GET', path);
      expect([path, page.status, page.headers.get('content-type')]).toEqual([path, 200, 'text/html; charset=utf-8']);
      expect(page.body).toMatch(/<title>Herald console<\/title>/);
      expect(page.headers.get('content-security-policy')).toBe(csp);
      expect(page.headers.get('x-content-type-options')).toBe('nosniff');
      expect(page.headers.get('referrer-policy')).toBe('no-referrer');
      expect(page.headers.get('x-frame-options')).toBe('DENY');
      expect(page.headers.get('cache-control')).toBe('no-cache');
    }
    const script = await call(undefined, 'GET', '/console/assets/app-3f9a1c2b7d.js');
    expect([script.status, script.headers.get('content-type'), script.headers.get('cache-control')]).toEqual([200, 'text/javascript; charset=utf-8', 'public, max-age=31536000, immutable']);
    const style = await call(undefined, 'GET', '/console/assets/style.css');
    expect([style.status, style.headers.get('content-type'), style.headers.get('cache-control')]).toEqual([200, 'text/css; charset=utf-8', 'no-cache']);
    expect(await call(undefined, 'GET', '/console/assets/missing.js')).toMatchObject({ status: 404 });
    expect(await call(undefined, 'POST', '/console')).toMatchObject({ status: 405 });
  });

  test('no path leaves the console directory', async () => {
    for (const path of ['/console/..%2f..%2fsecret.txt', '/console/assets/%2e%2e%2f%2e%2e%2fsecret.txt', '/console/assets/escape.txt', '/console/..%5c..%5csecret.txt', '/console/%00index.html']) {
      const reply = await call(undefined, 'GET', path);
      expect([path, reply.status]).toEqual([path, 400]);
      expect(JSON.stringify(reply.body)).not.toContain('not for the console');
    }
    // fetch resolves `%2e%2e` itself: the request leaves /console and meets the API's bearer check.
    expect((await call(undefined, 'GET', '/console/%2e%2e/secret.txt')).status).toBe(401);
    // Sent as is, without a client's normalisation: never the file outside.
    const raw = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port: stack.port, path: '/admin/console/../../../../../../' + outside.replace(/^\//, ''), method: 'GET' }, (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      });
      req.on('error', reject);
      req.end();
    });
    expect(raw.text).not.toContain('not for the console');
  });

  test('without a built console: 503 saying how to build it', async () => {
    renameSync(consoleDir, `${consoleDir}-away`);
    try {
      const reply = await call(undefined, 'GET', '/console');
      expect(reply).toMatchObject({ status: 503, body: { error: expect.stringMatching(/npm run build:console/) as unknown } });
      expect(reply.headers.get('content-security-policy')).toBe(csp);
    } finally {
      renameSync(`${consoleDir}-away`, consoleDir);
    }
    expect((await call(undefined, 'GET', '/console')).status).toBe(200);
  });
});
