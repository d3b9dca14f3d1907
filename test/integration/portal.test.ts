import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { linkClaims, portalKeyOf, portalSecretOf, signLink, signSession } from '../../shared/domain/portal';
import { eventually } from '../support/eventually';
import { Receiver } from '../support/receiver';
import { startTestStack, testSecretsKey, TestStack } from '../support/stack';

/**
 * The customer portal's backend on the emulators (docs/console.md): links minted by the
 * operator and by an account key, exchanged for sessions that act for one account (read-only,
 * narrowed to some destinations), refused when expired (with the way back) or tampered (without),
 * the overview's aggregates, and the console's static files with their headers.
 */

const PROJECT = 'portal-test';
let stack: TestStack;
const receiver = new Receiver();
const consoleRoot = mkdtempSync(join(tmpdir(), 'herald-console-'));
const consoleDir = join(consoleRoot, 'dist');
const outside = join(consoleRoot, 'secret.txt');
const keys = {} as Record<'writer' | 'reader', string>;
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
  stack = await startTestStack(PROJECT, { HERALD_CONSOLE_DIR: consoleDir, HERALD_CONSOLE_FRAME_ANCESTORS: "'self' https://app.example.com" });
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
    expect(link).toMatchObject({ status: 201, body: { url: expect.stringMatching(new RegExp(`^${stack.url}/admin/console/#portal=hpl_[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$`)) as unknown } });
    const expiresAt = Date.parse((link.body as { expiresAt: string }).expiresAt);
    expect(expiresAt).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 + 600_000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 600_000);
    // Audited (who, which account, which fields), and the token is never logged.
    expect(stack.logs).toContainEqual(expect.objectContaining({ audit: true, actor: 'admin', account: 'tenant-a', route: 'POST /accounts/{accountId}/portal-links', fields: ['ttlSeconds', 'readOnly', 'destinations', 'returnUrl'], status: 201 }));
    expect(JSON.stringify(stack.logs)).not.toContain(tokenOf((link.body as { url: string }).url));
  });

  test('behind a proxy the URL is the one the caller used', async () => {
    const via = await operator('POST', '/accounts/tenant-a/portal-links', { ttlSeconds: 60 }, { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'herald.example.com' });
    expect((via.body as { url: string }).url).toMatch(/^https:\/\/herald\.example\.com\/admin\/console\/#portal=hpl_/);
    const prefixed = await operator('POST', '/accounts/tenant-a/portal-links', { ttlSeconds: 60 }, { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'ops.example.com', 'x-forwarded-prefix': '/herald/admin' });
    expect((prefixed.body as { url: string }).url).toMatch(/^https:\/\/ops\.example\.com\/herald\/admin\/console\/#portal=hpl_/);
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
      account: { id: 'tenant-a', name: 'Tenant A' },
      readOnly: false,
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
    expect(await call(signSession(key, old), 'GET', '/destinations')).toMatchObject({ status: 401, body: { error: expect.stringMatching(/expired/) as unknown, reason: 'expired' } });
    expect(await call('hps_forged.x', 'GET', '/destinations')).toMatchObject({ status: 401, body: { reason: 'invalid' } });
    // A link is not a session.
    expect((await call(fresh, 'GET', '/destinations')).status).toBe(401);
    // A deleted account's sessions end with it.
    expect((await operator('POST', '/accounts', { id: 'tenant-gone', name: 'Gone' })).status).toBe(201);
    const doomed = (await session({ ttlSeconds: 600 }, 'tenant-gone')).sessionToken;
    expect((await call(doomed, 'GET', '/destinations')).status).toBe(200);
    expect((await operator('DELETE', '/accounts/tenant-gone')).status).toBe(204);
    expect(await call(doomed, 'GET', '/destinations')).toMatchObject({ status: 401, body: { reason: 'invalid', error: expect.stringMatching(/no longer exists/) as unknown } });
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
  const csp = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: https:; connect-src 'self'; base-uri 'none'; form-action 'self'; object-src 'none'; frame-ancestors 'self' https://app.example.com";

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
