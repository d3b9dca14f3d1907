import http from 'node:http';
import { AddressInfo } from 'node:net';
import { OAuth2Tokens } from '../../shared/adapters/oauth2-tokens';
import { tokenRefreshAt } from '../../shared/domain/delivery/token-lifetime';
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

test('the refresh margin shrinks with the token’s life: a minute for an hour, a second for 10 s', () => {
  expect(tokenRefreshAt(0, 3600)).toBe(3_540_000);
  expect(tokenRefreshAt(0, 10)).toBe(9_000);
  expect(tokenRefreshAt(0, undefined)).toBe(270_000);
  // Cost at 10 events/s: an hour's token is one request per 35 400 deliveries (≤ 0.01 a delivery).
  expect(1 / ((tokenRefreshAt(0, 3600) / 1000) * 10)).toBeLessThan(0.01);
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
