import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { AddressInfo } from 'node:net';
import { Receiver } from '../support/receiver';
import { startTestStack, TestStack } from '../support/stack';
import { eventually } from '../support/eventually';
import { stringsIn } from '../support/secret-scan';

/**
 * OAuth2 client credentials on the emulators (issue 55): a local token endpoint and a receiver
 * that accepts only the bearer tokens it issued. The token is fetched once for many deliveries,
 * again after it expires and after a 401; with the token endpoint down deliveries are retried
 * per the policy and none is lost; the client secret is in no answer or log line.
 */

const RUN = randomBytes(3).toString('hex');
const PROJECT = `receiver-oauth2-${RUN}`;
const TYPE = 'com.example.oauth';
const CLIENT_ID = 'herald-client';
const CLIENT_SECRET = `cs-${randomBytes(16).toString('hex')}`;
const RETRY_5XX = { retryOn: { statuses: ['5xx'] }, backoff: { kind: 'fixed', delaysMs: [1000] }, maxAttempts: 20 };

/** Issued tokens and until when each is good; requests by client. */
const issued = new Map<string, number>();
const tokenRequests: { scope: string | null; audience: string | null; at: number }[] = [];
let tokenDown = false;
let lifetimeS = 3600;
const endpoint = http.createServer((req, res) => {
  let body = '';
  req.on('data', (c: Buffer) => (body += c.toString()));
  req.on('end', () => {
    const params = new URLSearchParams(body);
    tokenRequests.push({ scope: params.get('scope'), audience: params.get('audience'), at: Date.now() });
    if (tokenDown) return void res.writeHead(503).end('down');
    // RFC 6749 §2.3.1: the id and secret are form-urlencoded, then joined and base64'd.
    const [id, secret] = Buffer.from(String(req.headers.authorization).replace(/^Basic /, ''), 'base64')
      .toString()
      .split(':')
      .map((p) => decodeURIComponent(p.replace(/\+/g, ' ')));
    if (id !== CLIENT_ID || secret !== CLIENT_SECRET || params.get('grant_type') !== 'client_credentials') {
      return void res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"invalid_client"}');
    }
    const token = `at-${randomBytes(8).toString('hex')}`;
    issued.set(token, Date.now() + lifetimeS * 1000);
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify({ access_token: token, token_type: 'Bearer', expires_in: lifetimeS }));
  });
});
const receiver = new Receiver((req) => {
  const token = /^Bearer (.+)$/.exec(String(req.headers.authorization ?? ''))?.[1];
  const until = token === undefined ? undefined : issued.get(token);
  return { status: until !== undefined && until > Date.now() ? 204 : 401 };
});
let stack: TestStack;
let tokenUrl = '';
const answers: unknown[] = [];

const accepted = (path: string) => receiver.on(path).filter((r) => issued.has(String(r.headers.authorization).slice('Bearer '.length)) && r.headers['ce-id'] !== undefined);
const deliveredIds = (path: string) => new Set(receiver.requests.filter((r) => r.path === path && r.headers.authorization !== undefined).map((r) => String(r.headers['ce-id'])));

async function allDelivered(destination: string, ids: string[]): Promise<void> {
  await eventually(
    `${ids.length} deliveries to ${destination}`,
    async () => {
      const res = await stack.admin('GET', `/destinations/${destination}/deliveries?status=DELIVERED`);
      answers.push(res.body);
      const list = (res.body as { deliveries: { status: string }[] }).deliveries.filter((d) => d.status === 'DELIVERED');
      return list.length >= ids.length ? true : undefined;
    },
    60_000,
    250,
  );
}

beforeAll(async () => {
  await receiver.start();
  await new Promise<void>((resolve) => endpoint.listen(0, '127.0.0.1', resolve));
  tokenUrl = `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}/token`;
  stack = await startTestStack(PROJECT, { HERALD_TIME_SCALE: '1', HERALD_PUMP_INTERVAL_MS: '200' });
  const put = async (id: string, extra: Record<string, unknown> = {}) => {
    const res = await stack.admin('PUT', `/destinations/${id}`, {
      url: `${receiver.url}/${id}`,
      eventTypes: [`${TYPE}.${id}`],
      policy: RETRY_5XX,
      auth: { type: 'oauth2ClientCredentials', tokenUrl, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, scopes: ['events:write', 'events:read'], audience: 'https://receiver.example' },
      ...extra,
    });
    answers.push(res.body);
    expect(res.status).toBe(201);
  };
  await put('many');
}, 120_000);

afterAll(async () => {
  await stack?.stop({ purge: true });
  await receiver.stop();
  await new Promise((r) => endpoint.close(r));
});

const ids = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
const typed = async (destination: string, list: string[]) => {
  for (const id of list) {
    const res = await stack.ingest({ 'ce-id': id, 'ce-source': '/oauth', 'ce-type': `${TYPE}.${destination}`, 'ce-specversion': '1.0', 'content-type': 'application/json' }, `{"n":"${id}"}`);
    expect(res.status).toBe(202);
  }
};

test('one token for many deliveries, with the scopes and audience asked for', async () => {
  const before = tokenRequests.length;
  const list = ids('many', 40);
  await typed('many', list);
  await allDelivered('many', list);
  expect(accepted('/many').length).toBeGreaterThanOrEqual(40);
  expect(tokenRequests.length - before).toBe(1);
  expect(tokenRequests.at(-1)).toMatchObject({ scope: 'events:write events:read', audience: 'https://receiver.example' });
  // Cost: ≤ 0.01 token requests per delivery (here 1 for 40; at 10 events/s a 10 s token is one per 100: test/unit/oauth2-tokens.test.ts).
  expect((tokenRequests.length - before) / list.length).toBeLessThanOrEqual(0.025);
});

test('a 401 to the cached token fetches a new one once, and the delivery succeeds', async () => {
  const before = tokenRequests.length;
  issued.clear(); // the receiver forgets every token: the cached one is refused
  await typed('many', ['after-revoke']);
  await eventually('after-revoke accepted', () => accepted('/many').find((r) => r.headers['ce-id'] === 'after-revoke'), 30_000);
  expect(tokenRequests.length - before).toBe(1);
});

test('an expired token is fetched again before it is used', async () => {
  lifetimeS = 2;
  await stack.admin('PUT', '/destinations/short', { url: `${receiver.url}/short`, eventTypes: [`${TYPE}.short`], policy: RETRY_5XX, auth: { type: 'oauth2ClientCredentials', tokenUrl, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET } });
  const before = tokenRequests.length;
  await typed('short', ['s-1', 's-2']);
  await allDelivered('short', ['s-1', 's-2']);
  expect(tokenRequests.length - before).toBe(1);
  await new Promise((r) => setTimeout(r, 2500));
  const refused = receiver.on('/short').filter((r) => r.headers['ce-id'] !== undefined).length;
  await typed('short', ['s-3']);
  await allDelivered('short', ['s-1', 's-2', 's-3']);
  expect(tokenRequests.length - before).toBe(2);
  // Refreshed before use: no attempt carried the expired token.
  expect(receiver.on('/short').length - refused).toBe(1);
  lifetimeS = 3600;
});

test('the token endpoint down: deliveries are retried per the policy, none reaches the receiver without a token, none is lost', async () => {
  await stack.admin('PUT', '/destinations/outage', { url: `${receiver.url}/outage`, eventTypes: [`${TYPE}.outage`], policy: RETRY_5XX, auth: { type: 'oauth2ClientCredentials', tokenUrl, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET } });
  tokenDown = true;
  const list = ids('outage', 5);
  await typed('outage', list);
  const record = await eventually(
    'a failed attempt recorded',
    async () => {
      const res = await stack.admin('GET', '/destinations/outage/deliveries');
      answers.push(res.body);
      return (res.body as { deliveries: { attempts: number; lastError?: unknown }[] }).deliveries.find((d) => d.attempts >= 1 && d.lastError);
    },
    30_000,
    250,
  );
  expect(JSON.stringify(record)).toMatch(/503/);
  expect(receiver.on('/outage')).toEqual([]);
  tokenDown = false;
  await allDelivered('outage', list);
  expect(deliveredIds('/outage')).toEqual(new Set(list));
});

test('the client secret is in no API answer or log line', async () => {
  answers.push((await stack.admin('GET', '/destinations/many')).body);
  expect(answers.at(-1)).toMatchObject({ auth: { type: 'oauth2ClientCredentials', tokenUrl, clientId: CLIENT_ID, scopes: ['events:write', 'events:read'] } });
  const places = [...answers, ...stack.logs];
  const leaks = places.flatMap((p, i) => stringsIn(p).filter((t) => t.includes(CLIENT_SECRET)).map(() => `place ${i}`));
  expect(leaks).toEqual([]);
});
