import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import https from 'node:https';
import { AddressInfo } from 'node:net';
import { Firestore } from '@google-cloud/firestore';
import { Receiver, ReceivedRequest } from '../support/receiver';
import { stringsIn, verifies } from '../support/secret-scan';
import { startTestStack, TestStack } from '../support/stack';
import { eventually } from '../support/eventually';
import { SubscriptionTap } from '../support/subscription-tap';
import { makeThrowawayPki } from '../support/throwaway-ca';

/**
 * Issue 55 on the emulators: receivers as they really are. Real local receivers check what
 * each wants (a static header, an API key, basic auth, a client certificate on a throwaway
 * CA, a GitHub or a Standard Webhooks signature); then every API answer, log line, Firestore
 * document and dead letter is scanned for the credentials, as secrets-at-rest.test.ts scans
 * Firestore for signing secrets.
 */

const RUN = randomBytes(3).toString('hex');
const PROJECT = `receivers-${RUN}`;
const TYPE = 'com.example.receiver';
const token = (what: string) => `${what}-${randomBytes(12).toString('hex')}`;
const API_KEY = token('apikey');
const WRONG_KEY = token('wrongkey');
const PASSWORD = token('password');
const HEADER_SECRET = token('hdrsecret');
/** The key rotate-auth gives, which the receiver does not take yet. */
const NEXT_KEY = token('nextkey');
const pki = makeThrowawayPki(['127.0.0.1']);
const ONE_ATTEMPT = { retryOn: { statuses: ['5xx'] }, backoff: { kind: 'fixed', delaysMs: [1000] }, maxAttempts: 1 };

const basic = `Basic ${Buffer.from(`herald:${PASSWORD}`).toString('base64')}`;
const receiver = new Receiver((req) => {
  if (req.path === '/apikey' || req.path === '/wrongkey') return { status: req.headers['x-api-key'] === API_KEY ? 204 : 401, body: 'no key' };
  if (req.path === '/basic') return { status: req.headers.authorization === basic ? 204 : 401 };
  return { status: 204 };
});
const mtlsRequests: ReceivedRequest[] = [];
const mtls = https.createServer({ key: pki.serverKey, cert: pki.serverCert, ca: pki.ca, requestCert: true, rejectUnauthorized: true }, (req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    mtlsRequests.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks), at: Date.now() });
    res.writeHead(204).end();
  });
});
let mtlsUrl = '';
let stack: TestStack;
let db: Firestore;
let dead: SubscriptionTap;
/** Every answer the API gave in this test: none may hold a credential. */
const answers: unknown[] = [];
const secrets: Record<string, string> = {};

async function admin(method: string, path: string, body?: unknown) {
  const res = await stack.admin(method, path, body);
  answers.push(res.body);
  return res;
}

async function publish(id: string): Promise<void> {
  const res = await stack.ingest({ 'ce-id': id, 'ce-source': '/receivers', 'ce-type': TYPE, 'ce-specversion': '1.0', 'content-type': 'application/json' }, `{"n":"${id}"}`);
  expect(res.status).toBe(202);
}

const arrived = (path: string, id: string, from: ReceivedRequest[] = receiver.requests) => eventually(`${id} at ${path}`, () => from.find((r) => r.path === path && r.headers['ce-id'] === id), 30_000);

/** GitHub's documented check: "sha256=" + hex HMAC-SHA256 of the raw body, keyed with the secret, compared in constant time. */
function githubVerifies(req: ReceivedRequest, secret: string): boolean {
  const header = req.headers['x-hub-signature-256'];
  if (typeof header !== 'string') return false;
  const expected = Buffer.from(`sha256=${createHmac('sha256', secret).update(req.body).digest('hex')}`);
  const given = Buffer.from(header);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

async function recordOf(destination: string, id: string, status: string) {
  return eventually(
    `${destination}'s delivery of ${id} ${status}`,
    async () => {
      const list = await admin('GET', `/destinations/${destination}/deliveries`);
      const found = (list.body as { deliveries: { id: string; status: string; eventId?: string }[] }).deliveries.find((d) => d.status === status);
      if (!found) return undefined;
      const one = await admin('GET', `/deliveries/${encodeURIComponent(found.id)}`);
      return one.status === 200 ? (one.body as Record<string, unknown>) : undefined;
    },
    30_000,
    250,
  );
}

beforeAll(async () => {
  await receiver.start();
  await new Promise<void>((resolve) => mtls.listen(0, '127.0.0.1', resolve));
  mtlsUrl = `https://127.0.0.1:${(mtls.address() as AddressInfo).port}`;
  db = new Firestore({ projectId: PROJECT });
  stack = await startTestStack(PROJECT, { HERALD_TIME_SCALE: '100', HERALD_PUMP_INTERVAL_MS: '100' });
  dead = await SubscriptionTap.create(PROJECT, `receivers-dead-${RUN}`, stack.runtime.topology.topics.deadLetter.name);
  const put = async (id: string, spec: Record<string, unknown>) => {
    const res = await admin('PUT', `/destinations/${id}`, { eventTypes: [TYPE], ...spec });
    expect(res).toMatchObject({ status: 201 });
    secrets[id] = (res.body as { secret: string }).secret;
  };
  const hour = 3600_000;
  await put('apikey', { url: `${receiver.url}/apikey`, headers: { 'X-Tenant': 'acme', 'X-Shared': { secret: HEADER_SECRET } }, auth: { type: 'apiKey', header: 'X-Api-Key', value: API_KEY } });
  await put('basic', { url: `${receiver.url}/basic`, auth: { type: 'basic', username: 'herald', password: PASSWORD } });
  await put('wrongkey', { url: `${receiver.url}/wrongkey`, auth: { type: 'apiKey', header: 'X-Api-Key', value: WRONG_KEY }, policy: ONE_ATTEMPT });
  await put('migrating', { url: `${receiver.url}/migrating`, signature: { from: 'standard-webhooks', to: 'github', cutoverAt: new Date(Date.now() + hour).toISOString() } });
  await put('cutover', { url: `${receiver.url}/cutover`, signature: { from: 'standard-webhooks', to: 'github', cutoverAt: new Date(Date.now() - 60_000).toISOString() } });
  await put('mtls', { url: `${mtlsUrl}/mtls`, tls: { clientCertificate: pki.clientCert, clientKey: pki.clientKey, ca: pki.ca } });
  await put('stranger', { url: `${mtlsUrl}/stranger`, tls: { clientCertificate: pki.strangerCert, clientKey: pki.strangerKey, ca: pki.ca }, policy: ONE_ATTEMPT });
  await publish('e1');
}, 120_000);

afterAll(async () => {
  await dead?.close();
  await stack?.stop({ purge: true });
  await db?.terminate();
  await receiver.stop();
  await new Promise((r) => mtls.close(r));
});

test('static headers and the API key reach the receiver; Herald’s own headers stay its own', async () => {
  const req = await arrived('/apikey', 'e1');
  expect(req.headers).toMatchObject({ 'x-tenant': 'acme', 'x-shared': HEADER_SECRET, 'x-api-key': API_KEY, 'user-agent': 'Herald/0.1', 'ce-type': TYPE });
  expect(verifies(req, secrets.apikey!)).toBe(true);
  const record = await recordOf('apikey', 'e1', 'DELIVERED');
  const attempt = (record.attempts as Record<string, unknown>[] | undefined)?.[0] ?? (record.attemptLog as Record<string, unknown>[])[0]!;
  expect(attempt).toMatchObject({ receiver: { auth: 'apiKey', signature: ['standard-webhooks'] }, request: { headers: { 'x-api-key': '••••••', 'x-shared': '••••••', 'x-tenant': 'acme' } } });
});

test('basic auth: the receiver accepts RFC 7617 credentials', async () => {
  const req = await arrived('/basic', 'e1');
  expect(req.headers.authorization).toBe(basic);
});

test('a receiver refusing the key: DEAD, on the dead-letter topic, with no key in it', async () => {
  await arrived('/wrongkey', 'e1');
  await recordOf('wrongkey', 'e1', 'DEAD');
  await dead.find('the dead letter', (m) => JSON.stringify(m.attributes).includes('wrongkey'), 30_000);
});

test('during a signature migration both verifiers accept; after the cut-over only the new profile is sent', async () => {
  const both = await arrived('/migrating', 'e1');
  expect(githubVerifies(both, secrets.migrating!)).toBe(true);
  expect(verifies(both, secrets.migrating!)).toBe(true);
  const after = await arrived('/cutover', 'e1');
  expect(githubVerifies(after, secrets.cutover!)).toBe(true);
  expect(after.headers['webhook-signature']).toBeUndefined();
  expect(verifies(after, secrets.cutover!)).toBe(false);
});

test('mTLS: the receiver that requires a client certificate gets it; another CA’s is refused', async () => {
  const req = await arrived('/mtls', 'e1', mtlsRequests);
  expect(verifies(req, secrets.mtls!)).toBe(true);
  // Without a certificate the receiver refuses the handshake: it really requires one.
  const bare = await new Promise<string>((resolve) => {
    const r = https.request(`${mtlsUrl}/bare`, { method: 'POST', ca: pki.ca }, (res) => resolve(`answered ${res.statusCode}`));
    r.on('error', (e) => resolve(`refused: ${e.message}`));
    r.end();
  });
  expect(bare).toMatch(/refused/);
  const record = await recordOf('stranger', 'e1', 'DEAD');
  expect(JSON.stringify(record)).toMatch(/network|certificate|alert|socket|ECONNRESET/i);
  expect(mtlsRequests.filter((r) => r.path === '/stranger')).toEqual([]);
});

test('rotate-auth: the new key at once; while the receiver still refuses it, the replaced one within the grace period', async () => {
  const rotated = await admin('POST', '/destinations/apikey/rotate-auth', { auth: { type: 'apiKey', header: 'X-Api-Key', value: NEXT_KEY }, graceSeconds: 3600 });
  expect(rotated).toMatchObject({ status: 200, body: { auth: { type: 'apiKey', header: 'X-Api-Key' }, previousAuth: { type: 'apiKey', expiresAt: expect.any(String) } } });
  await publish('e2');
  const tries = await eventually('e2 accepted', () => {
    const all = receiver.on('/apikey').filter((r) => r.headers['ce-id'] === 'e2');
    return all.some((r) => r.headers['x-api-key'] === API_KEY) ? all : undefined;
  }, 30_000);
  expect(tries.map((r) => r.headers['x-api-key'])).toEqual([NEXT_KEY, API_KEY]);
  await recordOf('apikey', 'e2', 'DELIVERED');
  expect((await admin('POST', '/destinations/basic/rotate-auth', { auth: { type: 'apiKey', header: 'X-Api-Key', value: 'x' }, graceSeconds: 99_999_999 })).status).toBe(400);
  expect((await admin('POST', '/destinations/migrating/rotate-auth', { auth: { type: 'apiKey', header: 'X-Api-Key', value: 'x' } })).status).toBe(409);
});

test('no API answer, log line, Firestore document or dead letter holds a credential', async () => {
  for (const id of ['apikey', 'basic', 'mtls']) answers.push((await admin('GET', `/destinations/${id}`)).body);
  answers.push((await admin('GET', '/destinations')).body);
  const view = (await admin('GET', '/destinations/mtls')).body as Record<string, unknown>;
  expect(view.tls).toMatchObject({ clientCertificate: { subject: 'CN=client' }, ca: true });
  expect((await admin('GET', '/destinations/apikey')).body).toMatchObject({ auth: { type: 'apiKey', header: 'X-Api-Key' }, headers: { 'X-Tenant': 'acme', 'X-Shared': { secret: true } } });
  const keyBody = (pem: string) => pem.split('\n').filter((l) => l && !l.startsWith('-----')).join('');
  const credentials = [API_KEY, NEXT_KEY, WRONG_KEY, PASSWORD, HEADER_SECRET, basic.slice('Basic '.length), keyBody(pki.clientKey).slice(0, 40), keyBody(pki.strangerKey).slice(0, 40)];
  const documents: { where: string; data: unknown }[] = [];
  for (const collection of await db.listCollections()) for (const doc of (await collection.get()).docs) documents.push({ where: doc.ref.path, data: doc.data() });
  const places = [
    ...answers.map((a, i) => ({ where: `answer ${i}`, data: a })),
    ...stack.logs.map((l, i) => ({ where: `log line ${i}`, data: l })),
    ...documents,
    ...dead.received.map((m, i) => ({ where: `dead letter ${i}`, data: [m.attributes, m.data.toString('utf8')] })),
  ];
  expect(dead.received.length).toBeGreaterThan(0);
  // Sealed where stored: each credential field of the documents is an enc:v1 value.
  const stored = documents.find((d) => d.where.endsWith('/apikey'))!.data as { auth: { value: string }; previousAuth: { auth: { value: string } }; headers: Record<string, { secret: string }> };
  expect([stored.auth.value, stored.previousAuth.auth.value, stored.headers['X-Shared']!.secret].map((v) => v.slice(0, 7))).toEqual(['enc:v1:', 'enc:v1:', 'enc:v1:']);
  const storedTls = (documents.find((d) => d.where.endsWith('/mtls'))!.data as { tls: { clientKey: string; clientCertificate: string } }).tls;
  expect([storedTls.clientKey, storedTls.clientCertificate].map((v) => v.slice(0, 7))).toEqual(['enc:v1:', 'enc:v1:']);
  expect(documents.length).toBeGreaterThan(5);
  const leaks = places.flatMap((p) => stringsIn(p.data).flatMap((text) => [...credentials.filter((c) => text.includes(c)).map((c) => `${p.where} holds ${c.slice(0, 8)}…`), ...(/PRIVATE KEY/.test(text) ? [`${p.where} holds a private key`] : [])]));
  expect(leaks).toEqual([]);
});

test('bad receiver settings are refused with 400 and a precise message; the token URL passes the SSRF guard', async () => {
  const put = (spec: Record<string, unknown>) => admin('PUT', '/destinations/refused', { url: `${receiver.url}/refused`, ...spec });
  expect(await put({ headers: { 'X-A': 'v\r\nX-Injected: 1' } })).toMatchObject({ status: 400, body: { issues: [{ path: 'headers.X-A', message: expect.stringMatching(/no line breaks/) }] } });
  expect(await put({ headers: { 'X-A': 'v'.repeat(5000) } })).toMatchObject({ status: 400, body: { issues: [{ message: expect.stringMatching(/at most 1024/) }] } });
  expect(await put({ headers: { 'ce-source': '/spoofed' } })).toMatchObject({ status: 400 });
  const metadata = await put({ auth: { type: 'oauth2ClientCredentials', tokenUrl: 'http://169.254.169.254/computeMetadata/v1/token', clientId: 'c', clientSecret: 's' } });
  expect(metadata).toMatchObject({ status: 400, body: { issues: [{ path: 'auth.tokenUrl' }] } });
  expect((await admin('GET', '/destinations/refused')).status).toBe(404);
});
