import { applySpec, destinationSpecSchema, viewOf } from '../../../shared/domain/destinations/destination';
import { credentialsRefused, fallbackCredentials, rotateCredentials, rotateCredentialsSchema } from '../../../shared/domain/destinations/credential-rotation';
import { receiverSecrets } from '../../../shared/domain/destinations/receiver-spec';

const T0 = new Date('2026-12-01T10:00:00.000Z');
const later = (s: number) => new Date(T0.getTime() + s * 1000);
const OLD = { type: 'apiKey' as const, header: 'X-Api-Key', value: 'old-key-value' };
const NEW = { type: 'basic' as const, username: 'herald', password: 'new-password-value' };
const base = () => applySpec('d', destinationSpecSchema.parse({ url: 'https://hooks.example.com/in', auth: OLD }), undefined, T0);

function rotated(grace?: number) {
  const r = rotateCredentials(base(), { auth: NEW }, grace, T0);
  if (!r.ok) throw new Error(r.message);
  return r.destination;
}

test('the new auth at once; the replaced one is the 401 fallback until the grace period ends (24 h by default)', () => {
  const d = rotated();
  expect(d.auth).toEqual(NEW);
  expect(fallbackCredentials(d, later(86_399))).toEqual({ auth: OLD });
  expect(fallbackCredentials(d, later(86_400))).toBeUndefined();
  expect(fallbackCredentials(rotated(0), T0)).toBeUndefined();
});

test('the view names the replaced auth’s type and expiry, never a credential; both are sealed as credentials', () => {
  const d = rotated(3600);
  expect(viewOf(d, T0).previousAuth).toEqual({ type: 'apiKey', expiresAt: later(3600).toISOString() });
  expect(viewOf(d, later(3600)).previousAuth).toBeUndefined();
  const text = JSON.stringify(viewOf(d, T0));
  expect(text).not.toContain('old-key-value');
  expect(text).not.toContain('new-password-value');
  expect(receiverSecrets(d).sort()).toEqual(['new-password-value', 'old-key-value']);
});

test('a PUT without auth keeps the grace; one with auth replaces it at once', () => {
  const d = rotated(3600);
  expect(applySpec('d', destinationSpecSchema.parse({ url: 'https://hooks.example.com/in' }), d, T0).previousAuth).toEqual(d.previousAuth);
  expect(applySpec('d', destinationSpecSchema.parse({ url: 'https://hooks.example.com/in', auth: OLD }), d, T0).previousAuth).toBeUndefined();
});

test('nothing to rotate without auth, nor on a topic destination', () => {
  const none = applySpec('d', destinationSpecSchema.parse({ url: 'https://hooks.example.com/in' }), undefined, T0);
  expect(rotateCredentials(none, { auth: NEW }, 0, T0)).toMatchObject({ ok: false, message: expect.stringMatching(/no auth to rotate/) });
  const topic = applySpec('t', destinationSpecSchema.parse({ topic: 'projects/my-project/topics/events' }), undefined, T0);
  expect(rotateCredentials(topic, { auth: NEW }, 0, T0)).toMatchObject({ ok: false, message: expect.stringMatching(/Pub\/Sub/) });
});

const OLD_HEADERS = { 'X-Partner-Key': { secret: 'old-header-key' }, 'X-Plain': 'plain' };
const NEW_HEADERS = { 'X-Partner-Key': { secret: 'new-header-key' }, 'X-Plain': 'plain' };
const withHeaders = () => applySpec('h', destinationSpecSchema.parse({ url: 'https://hooks.example.com/in', auth: OLD, headers: OLD_HEADERS }), undefined, T0);

test('headers rotate as auth does: the new ones at once, the replaced ones the fallback for the grace, sealed, never shown', () => {
  const r = rotateCredentials(withHeaders(), { headers: NEW_HEADERS }, 600, T0);
  if (!r.ok) throw new Error(r.message);
  expect(r.rotated).toEqual(['headers']);
  const d = r.destination;
  expect(d.headers).toEqual(NEW_HEADERS);
  expect(d.auth).toEqual(OLD);
  expect(d.previousAuth).toBeUndefined();
  expect(fallbackCredentials(d, later(599))).toEqual({ headers: OLD_HEADERS });
  expect(fallbackCredentials(d, later(600))).toBeUndefined();
  expect(viewOf(d, T0)).toMatchObject({ previousHeaders: { expiresAt: later(600).toISOString() } });
  expect(viewOf(d, later(600)).previousHeaders).toBeUndefined();
  expect(JSON.stringify(viewOf(d, T0))).not.toMatch(/old-header-key|new-header-key|old-key-value/);
  expect(receiverSecrets(d).sort()).toEqual(['new-header-key', 'old-header-key', 'old-key-value']);
  // A PUT that leaves headers out keeps the grace; one that gives them ends it.
  expect(applySpec('h', destinationSpecSchema.parse({ url: 'https://hooks.example.com/in' }), d, T0).previousHeaders).toEqual(d.previousHeaders);
  expect(applySpec('h', destinationSpecSchema.parse({ url: 'https://hooks.example.com/in', headers: NEW_HEADERS }), d, T0).previousHeaders).toBeUndefined();
  // Several at once share one grace; each kept apart.
  const both = rotateCredentials(withHeaders(), { headers: NEW_HEADERS, auth: NEW }, 60, T0);
  expect(both.ok && fallbackCredentials(both.destination, T0)).toEqual({ auth: OLD, headers: OLD_HEADERS });
  expect(rotateCredentials(base(), { headers: NEW_HEADERS }, 60, T0)).toMatchObject({ ok: false, message: expect.stringMatching(/no headers to rotate/) });
  expect(rotateCredentials(base(), { tls: { clientCertificate: 'c', clientKey: 'k' } }, 60, T0)).toMatchObject({ ok: false, message: expect.stringMatching(/no tls to rotate/) });
});

test('the body gives at least one credential; the refusals a replaced credential is tried again for', () => {
  expect(rotateCredentialsSchema.safeParse({ graceSeconds: 60 }).error?.issues[0]?.message).toMatch(/give the new "auth", "headers" or "tls"/);
  expect(rotateCredentialsSchema.safeParse({ headers: { Host: 'x' } }).success).toBe(false);
  expect(rotateCredentialsSchema.safeParse({ headers: NEW_HEADERS, graceSeconds: 60 }).success).toBe(true);
  const response = (status: number) => ({ kind: 'response' as const, status, durationMs: 1, bodyExcerpt: '' });
  expect([401, 403, 404, 500, 200].map((s) => credentialsRefused(response(s), { headers: OLD_HEADERS }))).toEqual([true, true, false, false, false]);
  // A refused handshake counts only when a replaced certificate is there to try.
  const replacedTls = { tls: { clientCertificate: 'c', clientKey: 'k' } };
  const network = (error: string, replaced: object = replacedTls) => credentialsRefused({ kind: 'network', durationMs: 1, error }, replaced);
  expect(network('ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED: tlsv13 alert certificate required')).toBe(true);
  expect(network('ERR_SSL_TLSV1_ALERT_UNKNOWN_CA: tlsv1 alert unknown ca')).toBe(true);
  expect(network('UND_ERR_SOCKET: other side closed')).toBe(true);
  expect(network('UND_ERR_SOCKET: other side closed', { headers: OLD_HEADERS })).toBe(false);
  expect(network('ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:9')).toBe(false);
  expect(credentialsRefused({ kind: 'timeout', durationMs: 1, timeoutMs: 1 }, replacedTls)).toBe(false);
});
