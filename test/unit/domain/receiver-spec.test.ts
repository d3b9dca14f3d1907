import { createHmac, timingSafeEqual } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { applySpec, destinationSpecSchema, generateSecret, viewOf } from '../../../shared/domain/destinations/destination';
import { receiverSecrets } from '../../../shared/domain/destinations/receiver-spec';
import { receiverHeaders } from '../../../shared/domain/delivery/receiver-headers';
import { requestFor, detailOf } from '../../../shared/domain/delivery/attempt-request';
import { makeThrowawayPki } from '../../support/throwaway-ca';

const T0 = new Date('2026-12-01T10:00:00.000Z');
const URL = 'https://hooks.example.com/in';
const pki = makeThrowawayPki();

const problems = (spec: unknown) => {
  const r = destinationSpecSchema.safeParse(spec);
  return r.success ? [] : r.error.issues.map((i) => i.message);
};

const FULL = {
  url: URL,
  headers: { 'X-Tenant': 'acme', 'X-Shared-Token': { secret: 'hdr-secret-value-1' } },
  auth: { type: 'apiKey', header: 'X-Api-Key', value: 'apikey-secret-value-2' },
  tls: { clientCertificate: pki.clientCert, clientKey: pki.clientKey, ca: pki.ca },
  signature: { from: 'standard-webhooks', to: 'github', cutoverAt: '2026-12-02T00:00:00Z' },
};

/** GitHub's documented check: HMAC-SHA256 of the raw body with the secret, hex, "sha256=" prefixed, compared in constant time. */
function githubVerifies(secret: string, body: Buffer, header: string | undefined): boolean {
  if (header === undefined) return false;
  const expected = Buffer.from(`sha256=${createHmac('sha256', secret).update(body).digest('hex')}`);
  return header.split(', ').some((h) => Buffer.from(h).length === expected.length && timingSafeEqual(Buffer.from(h), expected));
}

describe('the receiver fields of a destination spec', () => {
  test('a spec with headers, auth, tls and a signature migration is accepted', () => {
    expect(problems(FULL)).toEqual([]);
    expect(problems({ url: URL, auth: { type: 'basic', username: 'u', password: 'p' }, signature: 'github' })).toEqual([]);
    expect(problems({ url: URL, auth: { type: 'oauth2ClientCredentials', tokenUrl: 'https://id.example.com/token', clientId: 'c', clientSecret: 's', scopes: ['a', 'b'], audience: 'x' } })).toEqual([]);
  });

  test.each([
    [{ headers: { 'X-A': 'v\r\nX-Injected: 1' } }, /visible ASCII/],
    [{ headers: { 'X-A': { secret: 'v\nx' } } }, /visible ASCII/],
    [{ headers: { 'X-A': 'v'.repeat(1025) } }, /at most 1024/],
    [{ headers: { 'Bad Name': 'v' } }, /token characters/],
    [{ headers: { Host: 'evil' } }, /set by Herald or the transport/],
    [{ headers: { 'Content-Length': '1' } }, /set by Herald or the transport/],
    [{ headers: { Connection: 'close' } }, /set by Herald or the transport/],
    [{ headers: { 'webhook-signature': 'x' } }, /set by Herald/],
    [{ headers: { 'X-Hub-Signature-256': 'x' } }, /set by Herald/],
    [{ headers: { 'ce-type': 'x' } }, /ce-\* headers/],
    [{ headers: { 'X-A': 'a', 'x-a': 'b' } }, /given twice/],
    [{ headers: Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`X-H${i}`, 'v'])) }, /at most 10 headers/],
    [{ headers: { 'X-A': { secret: 'v', extra: 1 } } }, /nothing else/],
    [{ auth: { type: 'apiKey', header: 'ce-id', value: 'v' } }, /Herald owns/],
    [{ auth: { type: 'basic', username: 'a:b', password: 'p' } }, /may not contain ":"/],
    [{ auth: { type: 'bearer', token: 'x' } }, /auth must be/],
    [{ auth: { type: 'oauth2ClientCredentials', tokenUrl: 'nope', clientId: 'c', clientSecret: 's' } }, /tokenUrl must be an absolute URL/],
    [{ tls: { clientCertificate: 'x', clientKey: 'y' } }, /must be PEM/],
    [{ tls: { clientCertificate: pki.clientCert, clientKey: pki.strangerKey } }, /not the key of/],
    [{ signature: 'hmac' }, /signature must be/],
    [{ signature: { from: 'github', to: 'github', cutoverAt: '2026-12-02T00:00:00Z' } }, /must differ/],
  ])('%j is refused with a precise message', (extra, message) => {
    const found = problems({ url: URL, ...extra });
    expect(found.length).toBeGreaterThan(0);
    expect(found.join('; ')).toMatch(message);
  });

  test('a topic destination takes none of them', () => {
    expect(problems({ topic: 'projects/p/topics/t', signature: 'github' }).join()).toMatch(/for a url destination/);
  });

  test('left out keeps a setting (secrets need not be sent again), null removes it', () => {
    const first = applySpec('d', destinationSpecSchema.parse(FULL), undefined, T0);
    const kept = applySpec('d', destinationSpecSchema.parse({ url: URL }), first, T0);
    expect(kept.auth).toEqual(first.auth);
    expect(kept.tls).toEqual(first.tls);
    const removed = applySpec('d', destinationSpecSchema.parse({ url: URL, auth: null, tls: null, headers: null, signature: null }), kept, T0);
    expect([removed.auth, removed.tls, removed.headers, removed.signature]).toEqual([undefined, undefined, undefined, undefined]);
  });

  test('the view names each setting and holds no credential', () => {
    const dest = applySpec('d', destinationSpecSchema.parse(FULL), undefined, T0);
    const view = viewOf(dest);
    expect(view.headers).toEqual({ 'X-Tenant': 'acme', 'X-Shared-Token': { secret: true } });
    expect(view.auth).toEqual({ type: 'apiKey', header: 'X-Api-Key' });
    expect(view.tls).toMatchObject({ clientCertificate: { subject: 'CN=client', fingerprint256: expect.any(String) }, ca: true });
    const text = JSON.stringify(view);
    const secrets = receiverSecrets(dest);
    expect(secrets).toHaveLength(4);
    for (const s of secrets) expect(text).not.toContain(s);
    expect(text).not.toContain('PRIVATE KEY');
  });
});

describe('the headers an attempt carries', () => {
  const secret = generateSecret();
  const body = Buffer.from('{"n":1}');
  const event = { attributes: { specversion: '1.0', id: 'e1', source: '/s', type: 't', datacontenttype: 'application/json' }, data: body } as never;

  test('custom headers and the API key go first; Herald’s own cannot be overridden; secrets are masked in the detail', () => {
    const dest = { ...applySpec('d', destinationSpecSchema.parse({ ...FULL, secret, tls: null }), undefined, T0) };
    const sent = requestFor(dest, event, 'd.e1', T0);
    expect(sent.headers).toMatchObject({ 'x-tenant': 'acme', 'x-shared-token': 'hdr-secret-value-1', 'x-api-key': 'apikey-secret-value-2', 'user-agent': 'Herald/0.1' });
    const detail = detailOf(sent, { kind: 'response', status: 200, durationMs: 1, bodyExcerpt: '' }, { kind: 'delivered' } as never, T0);
    const text = JSON.stringify(detail);
    for (const s of ['hdr-secret-value-1', 'apikey-secret-value-2']) expect(text).not.toContain(s);
    expect(detail.receiver).toEqual({ auth: 'apiKey', signature: ['standard-webhooks', 'github'] });
  });

  test('basic auth is RFC 7617', () => {
    const r = receiverHeaders({ auth: { type: 'basic', username: 'herald', password: 'pa ss' } }, { secrets: [secret], webhookId: 'msg_1', at: T0, body });
    expect(r.before.authorization).toBe(`Basic ${Buffer.from('herald:pa ss').toString('base64')}`);
  });

  test('a migration sends both signatures until the cut-over, then only the new one; each verifies', () => {
    const now = new Date();
    const cutover = new Date(now.getTime() + 3600_000);
    const signature = { from: 'standard-webhooks' as const, to: 'github' as const, cutoverAt: cutover.toISOString() };
    const before = receiverHeaders({ signature }, { secrets: [secret], webhookId: 'msg_1', at: now, body });
    expect(githubVerifies(secret, body, before.signatures['x-hub-signature-256'])).toBe(true);
    expect(() => new Webhook(secret).verify(body.toString(), before.signatures)).not.toThrow();
    const after = receiverHeaders({ signature }, { secrets: [secret], webhookId: 'msg_1', at: cutover, body });
    expect(Object.keys(after.signatures)).toEqual(['x-hub-signature-256']);
    expect(after.use).toEqual({ signature: ['github'] });
  });

  test('during a rotation every live secret signs the github header too', () => {
    const old = generateSecret();
    const r = receiverHeaders({ signature: 'github' }, { secrets: [secret, old], webhookId: 'msg_1', at: T0, body });
    expect(githubVerifies(old, body, r.signatures['x-hub-signature-256'])).toBe(true);
    expect(githubVerifies(secret, body, r.signatures['x-hub-signature-256'])).toBe(true);
  });

  test('a destination reached the default way keeps its detail as before', () => {
    const r = receiverHeaders({}, { secrets: [secret], webhookId: 'msg_1', at: T0, body });
    expect(r.use).toBeUndefined();
    expect(Object.keys(r.signatures).sort()).toEqual(['webhook-id', 'webhook-signature', 'webhook-timestamp']);
  });
});
