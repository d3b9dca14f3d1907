import http from 'node:http';
import { AddressInfo } from 'node:net';
import { OAuth2Tokens } from '../../shared/adapters/oauth2-tokens';
import { MIN_USE_MS, tokenRefreshAt } from '../../shared/domain/delivery/token-lifetime';
import type { OAuth2ClientCredentials } from '../../shared/ports/receiver-tokens';

/** A token endpoint on loopback: answers as `reply` says, counting requests. */
let reply: (n: number) => { status: number; body: unknown } = (n) => ({ status: 200, body: { access_token: `tok-${n}`, token_type: 'Bearer', expires_in: 3600 } });
let requests = 0;
const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    const { status, body } = reply(++requests);
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
});
let auth: OAuth2ClientCredentials;
let now = 1_000_000;
const tokens = () => new OAuth2Tokens({ rules: { allowLoopback: true }, now: () => now });

beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  auth = { type: 'oauth2ClientCredentials', tokenUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/token`, clientId: 'c', clientSecret: 's' };
});
afterAll(() => new Promise((r) => server.close(r)));
beforeEach(() => {
  requests = 0;
});

test('the refresh margin: a tenth of the token’s life, at most a minute, never leaving it less than 10 s of use', () => {
  expect(tokenRefreshAt(0, 3600)).toBe(3_540_000);
  expect(tokenRefreshAt(0, 300)).toBe(270_000);
  expect(tokenRefreshAt(0, undefined)).toBe(270_000);
  expect(tokenRefreshAt(0, 20)).toBe(18_000);
  expect(tokenRefreshAt(0, 11)).toBe(10_000);
  // A 10 s token is used to its expiry (a tenth off would cost one request per 90 deliveries at 10 events/s).
  expect(tokenRefreshAt(0, 10)).toBe(10_000);
  expect(tokenRefreshAt(0, 2)).toBe(2_000);
  expect(tokenRefreshAt(5, 0)).toBe(5);
  for (const life of [10, 11, 15, 30, 60, 100, 600, 3600, 86_400]) expect(tokenRefreshAt(0, life)).toBeGreaterThanOrEqual(MIN_USE_MS);
});

test.each([
  ['one after another', 1],
  ['ten at once', 10],
])('cost at 10 events/s with 10 s tokens, %s: ≤ 0.01 token requests a delivery', async (_how, together) => {
  const saved = reply;
  reply = (n) => ({ status: 200, body: { access_token: `short-${n}`, token_type: 'Bearer', expires_in: 10 } });
  const t = tokens();
  const start = now;
  let deliveries = 0;
  // Ten simulated minutes: 6000 deliveries, arriving one each 100 ms or ten together each second.
  for (let ms = 0; ms < 600_000; ms += 100 * together) {
    now = start + ms;
    const answers = await Promise.all(Array.from({ length: together }, () => t.token('short', auth, { timeoutMs: 5000 })));
    expect(answers.every((a) => a.ok)).toBe(true);
    deliveries += together;
  }
  expect(deliveries).toBe(6000);
  expect(t.requests).toBe(requests);
  expect(requests / deliveries).toBeLessThanOrEqual(0.01);
  expect(requests).toBe(60);
  reply = saved;
  await t.close();
});

test('cached per destination; concurrent callers share one request; a refused token is replaced once', async () => {
  const t = tokens();
  const answers = await Promise.all(Array.from({ length: 20 }, () => t.token('d', auth, { timeoutMs: 5000 })));
  expect(answers.every((a) => a.ok && a.token === 'tok-1')).toBe(true);
  expect(requests).toBe(1);
  const refreshed = await Promise.all([t.token('d', auth, { rejected: 'tok-1', timeoutMs: 5000 }), t.token('d', auth, { rejected: 'tok-1', timeoutMs: 5000 })]);
  expect(refreshed.map((a) => a.ok && a.token)).toEqual(['tok-2', 'tok-2']);
  expect(requests).toBe(2);
  now += 3_540_000;
  expect(await t.token('d', auth, { timeoutMs: 5000 })).toEqual({ ok: true, token: 'tok-3' });
  // Changed credentials: fetched anew.
  expect(await t.token('d', { ...auth, clientSecret: 's2' }, { timeoutMs: 5000 })).toEqual({ ok: true, token: 'tok-4' });
  await t.close();
});

test('token endpoint failures are classified as an attempt’s: its status, a refused connection, a blocked address', async () => {
  const t = tokens();
  reply = () => ({ status: 503, body: { error: 'temporarily_unavailable' } });
  expect(await t.token('e', auth, { timeoutMs: 5000 })).toMatchObject({ ok: false, failure: { kind: 'response', status: 503 } });
  // A port just closed (fetch refuses some low ports outright, as "bad ports").
  const closed = http.createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
  const port = (closed.address() as AddressInfo).port;
  await new Promise((r) => closed.close(r));
  expect(await t.token('e', { ...auth, tokenUrl: `http://127.0.0.1:${port}/token` }, { timeoutMs: 5000 })).toMatchObject({ ok: false, failure: { kind: 'network', error: expect.stringMatching(/ECONNREFUSED/) } });
  const guarded = new OAuth2Tokens({ rules: { allowLoopback: false } });
  expect(await guarded.token('e', auth, { timeoutMs: 5000 })).toMatchObject({ ok: false, failure: { kind: 'blocked' } });
  await Promise.all([t.close(), guarded.close()]);
});
