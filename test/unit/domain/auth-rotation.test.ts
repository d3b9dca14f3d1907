import { applySpec, destinationSpecSchema, viewOf } from '../../../shared/domain/destinations/destination';
import { fallbackAuth, rotateAuth } from '../../../shared/domain/destinations/auth-rotation';
import { receiverSecrets } from '../../../shared/domain/destinations/receiver-spec';

const T0 = new Date('2026-12-01T10:00:00.000Z');
const later = (s: number) => new Date(T0.getTime() + s * 1000);
const OLD = { type: 'apiKey' as const, header: 'X-Api-Key', value: 'old-key-value' };
const NEW = { type: 'basic' as const, username: 'herald', password: 'new-password-value' };
const base = () => applySpec('d', destinationSpecSchema.parse({ url: 'https://hooks.example.com/in', auth: OLD }), undefined, T0);

function rotated(grace?: number) {
  const r = rotateAuth(base(), NEW, grace, T0);
  if (!r.ok) throw new Error(r.message);
  return r.destination;
}

test('the new auth at once; the replaced one is the 401 fallback until the grace period ends (24 h by default)', () => {
  const d = rotated();
  expect(d.auth).toEqual(NEW);
  expect(fallbackAuth(d, later(86_399))).toEqual(OLD);
  expect(fallbackAuth(d, later(86_400))).toBeUndefined();
  expect(fallbackAuth(rotated(0), T0)).toBeUndefined();
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
  expect(rotateAuth(none, NEW, 0, T0)).toMatchObject({ ok: false, message: expect.stringMatching(/no auth to rotate/) });
  const topic = applySpec('t', destinationSpecSchema.parse({ topic: 'projects/my-project/topics/events' }), undefined, T0);
  expect(rotateAuth(topic, NEW, 0, T0)).toMatchObject({ ok: false, message: expect.stringMatching(/Pub\/Sub/) });
});
