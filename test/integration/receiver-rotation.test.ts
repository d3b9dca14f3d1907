import { randomBytes } from 'node:crypto';
import https from 'node:https';
import { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { Firestore } from '@google-cloud/firestore';
import { Receiver } from '../support/receiver';
import { stringsIn } from '../support/secret-scan';
import { startTestStack, TestStack } from '../support/stack';
import { eventually } from '../support/eventually';
import { makeThrowawayPki } from '../support/throwaway-ca';

/**
 * Issue 55: a rotation's grace period for the credentials a receiver takes one at a time, on the
 * emulators with real receivers. A receiver that checks a key in a custom header, and an HTTPS
 * receiver that checks the client certificate on a throwaway CA, each take only the old
 * credential until they switch: within the grace period the refused attempt is sent once more
 * with the replaced credential, and the attempt detail says so; once switched, only the new
 * one is sent. No credential is in an answer, log line or Firestore document.
 */

const RUN = randomBytes(3).toString('hex');
const PROJECT = `receiver-rotation-${RUN}`;
const TYPE = 'com.example.rotation';
const OLD_KEY = `oldkey-${randomBytes(12).toString('hex')}`;
const NEW_KEY = `newkey-${randomBytes(12).toString('hex')}`;
const pki = makeThrowawayPki(['127.0.0.1']);

/** The key the header receiver takes now. */
let acceptedKey = OLD_KEY;
const receiver = new Receiver((req) => ({ status: req.headers['x-partner-key'] === acceptedKey ? 204 : 403 }));
/** The mTLS receiver trusts the first CA's client certificates until it is switched to the other CA's. */
const mtlsSeen: { id: string; client: string }[] = [];
const mtls = https.createServer({ key: pki.serverKey, cert: pki.serverCert, ca: pki.ca, requestCert: true, rejectUnauthorized: true }, (req, res) => {
  req.resume();
  req.on('end', () => {
    mtlsSeen.push({ id: String(req.headers['ce-id']), client: String((req.socket as TLSSocket).getPeerCertificate().subject.CN) });
    res.writeHead(204).end();
  });
});
let stack: TestStack;
let db: Firestore;
const answers: unknown[] = [];

async function admin(method: string, path: string, body?: unknown) {
  const res = await stack.admin(method, path, body);
  answers.push(res.body);
  return res;
}

async function publish(destination: string, id: string): Promise<void> {
  const res = await stack.ingest({ 'ce-id': id, 'ce-source': '/rotation', 'ce-type': `${TYPE}.${destination}`, 'ce-specversion': '1.0', 'content-type': 'application/json' }, `{"n":"${id}"}`);
  expect(res.status).toBe(202);
}

/** The delivered record of `id`, with its attempts. */
async function delivered(destination: string, id: string): Promise<{ attempts: { receiver?: Record<string, unknown>; response?: { status: number }; request: { headers: Record<string, string> } }[] }> {
  return eventually(
    `${id} DELIVERED to ${destination}`,
    async () => {
      const list = await admin('GET', `/destinations/${destination}/deliveries?status=DELIVERED`);
      const found = (list.body as { deliveries: { id: string; eventId?: string; status: string }[] }).deliveries.find((d) => d.status === 'DELIVERED' && (d.eventId === undefined || d.eventId === id));
      if (!found) return undefined;
      const one = await admin('GET', `/deliveries/${encodeURIComponent(found.id)}`);
      const body = one.body as Record<string, unknown>;
      return one.status === 200 ? { attempts: body.attemptLog as never } : undefined;
    },
    30_000,
    250,
  );
}

beforeAll(async () => {
  await receiver.start();
  await new Promise<void>((resolve) => mtls.listen(0, '127.0.0.1', resolve));
  db = new Firestore({ projectId: PROJECT });
  stack = await startTestStack(PROJECT, { HERALD_TIME_SCALE: '100', HERALD_PUMP_INTERVAL_MS: '100' });
  const put = async (id: string, spec: Record<string, unknown>) => expect(await admin('PUT', `/destinations/${id}`, { eventTypes: [`${TYPE}.${id}`], ...spec })).toMatchObject({ status: 201 });
  await put('headerkey', { url: `${receiver.url}/headerkey`, headers: { 'X-Partner-Key': { secret: OLD_KEY }, 'X-Tenant': 'acme' } });
  await put('mtls', { url: `https://127.0.0.1:${(mtls.address() as AddressInfo).port}/mtls`, tls: { clientCertificate: pki.clientCert, clientKey: pki.clientKey, ca: pki.ca } });
}, 120_000);

afterAll(async () => {
  await stack?.stop({ purge: true });
  await db?.terminate();
  await receiver.stop();
  await new Promise((r) => mtls.close(r));
});

test('a secret header replaced with a grace period: refused with the new key, sent once more with the old; only the new once the receiver switched', async () => {
  const rotated = await admin('POST', '/destinations/headerkey/rotate-auth', { headers: { 'X-Partner-Key': { secret: NEW_KEY }, 'X-Tenant': 'acme' }, graceSeconds: 3600 });
  expect(rotated).toMatchObject({ status: 200, body: { headers: { 'X-Partner-Key': { secret: true }, 'X-Tenant': 'acme' }, previousHeaders: { expiresAt: expect.any(String) } } });
  await publish('headerkey', 'h1');
  const record = await delivered('headerkey', 'h1');
  expect(receiver.on('/headerkey').filter((r) => r.headers['ce-id'] === 'h1').map((r) => r.headers['x-partner-key'])).toEqual([NEW_KEY, OLD_KEY]);
  // One attempt, sent twice within it: its detail says the replaced headers were used, masked.
  expect(record.attempts).toHaveLength(1);
  expect(record.attempts[0]).toMatchObject({ receiver: { signature: ['standard-webhooks'], replaced: ['headers'] }, response: { status: 204 }, request: { headers: { 'x-partner-key': '••••••', 'x-tenant': 'acme' } } });
  acceptedKey = NEW_KEY;
  await publish('headerkey', 'h2');
  const second = await delivered('headerkey', 'h2');
  expect(receiver.on('/headerkey').filter((r) => r.headers['ce-id'] === 'h2').map((r) => r.headers['x-partner-key'])).toEqual([NEW_KEY]);
  expect(second.attempts[0]!.receiver?.replaced).toBeUndefined();
});

test('without a grace period a refused new key is not followed by the old one', async () => {
  acceptedKey = OLD_KEY;
  expect(await admin('POST', '/destinations/headerkey/rotate-auth', { headers: { 'X-Partner-Key': { secret: NEW_KEY } }, graceSeconds: 0 })).toMatchObject({ status: 200 });
  expect(((await admin('GET', '/destinations/headerkey')).body as Record<string, unknown>).previousHeaders).toBeUndefined();
  await publish('headerkey', 'h3');
  // The attempt recorded: whatever it sent is at the receiver by then.
  await eventually(
    'h3 attempted',
    async () => ((await admin('GET', '/destinations/headerkey/deliveries')).body as { deliveries: { eventId?: string; attempts: number }[] }).deliveries.find((d) => d.eventId === 'h3' && d.attempts >= 1),
    30_000,
    250,
  );
  expect(receiver.on('/headerkey').filter((r) => r.headers['ce-id'] === 'h3').map((r) => r.headers['x-partner-key'])).toContain(NEW_KEY);
  expect(receiver.on('/headerkey').filter((r) => r.headers['ce-id'] === 'h3' && r.headers['x-partner-key'] === OLD_KEY)).toEqual([]);
  acceptedKey = NEW_KEY;
});

test('a client certificate replaced with a grace period: the handshake refused with the new one, sent with the old; only the new once the receiver trusts it', async () => {
  const rotated = await admin('POST', '/destinations/mtls/rotate-auth', { tls: { clientCertificate: pki.strangerCert, clientKey: pki.strangerKey, ca: pki.ca }, graceSeconds: 3600 });
  expect(rotated).toMatchObject({ status: 200, body: { tls: { clientCertificate: { subject: 'CN=stranger' } }, previousTls: { expiresAt: expect.any(String) } } });
  await publish('mtls', 'm1');
  const record = await delivered('mtls', 'm1');
  expect(mtlsSeen.filter((s) => s.id === 'm1')).toEqual([{ id: 'm1', client: 'client' }]);
  expect(record.attempts[0]).toMatchObject({ receiver: { auth: 'mtls', replaced: ['tls'] }, response: { status: 204 } });
  // The receiver switches to the new CA only: the new certificate is taken, the old one never sent again.
  mtls.setSecureContext({ key: pki.serverKey, cert: pki.serverCert, ca: pki.otherCa });
  await publish('mtls', 'm2');
  const second = await delivered('mtls', 'm2');
  expect(mtlsSeen.filter((s) => s.id === 'm2')).toEqual([{ id: 'm2', client: 'stranger' }]);
  expect(second.attempts[0]!.receiver).toMatchObject({ auth: 'mtls' });
  expect(second.attempts[0]!.receiver?.replaced).toBeUndefined();
});

test('the replaced credentials are sealed where stored and in no answer, log line or document', async () => {
  answers.push((await admin('GET', '/destinations')).body);
  const documents: { where: string; data: unknown }[] = [];
  for (const collection of await db.listCollections()) for (const doc of (await collection.get()).docs) documents.push({ where: doc.ref.path, data: doc.data() });
  const stored = documents.find((d) => d.where.endsWith('/mtls') && (d.data as Record<string, unknown>).previousTls)!.data as { previousTls: { tls: { clientKey: string; clientCertificate: string } } };
  expect([stored.previousTls.tls.clientKey, stored.previousTls.tls.clientCertificate].map((v) => v.slice(0, 7))).toEqual(['enc:v1:', 'enc:v1:']);
  const keyBody = (pem: string) => pem.split('\n').filter((l) => l && !l.startsWith('-----')).join('').slice(0, 40);
  const credentials = [OLD_KEY, NEW_KEY, keyBody(pki.clientKey), keyBody(pki.strangerKey)];
  const places = [...answers.map((a, i) => ({ where: `answer ${i}`, data: a })), ...stack.logs.map((l, i) => ({ where: `log line ${i}`, data: l })), ...documents];
  const leaks = places.flatMap((p) => stringsIn(p.data).flatMap((text) => credentials.filter((c) => text.includes(c)).map((c) => `${p.where} holds ${c.slice(0, 8)}…`)));
  expect(leaks).toEqual([]);
});
