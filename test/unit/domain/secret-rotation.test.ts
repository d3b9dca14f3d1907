import { Webhook } from 'standardwebhooks';
import { applySpec, generateSecret, viewOf } from '../../../shared/domain/destinations/destination';
import { MAX_PREVIOUS_SECRETS, rotateSecret, rotateSecretSchema, signingSecrets } from '../../../shared/domain/destinations/secret-rotation';
import { signatureHeaders } from '../../../shared/domain/delivery/signing';

const T0 = new Date('2026-11-23T10:00:00.000Z');
const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);
const DAY = 86_400;

const OLD = generateSecret();
const NEW = generateSecret();
const base = () => applySpec('orders', { url: 'https://hooks.example.com/orders', secret: OLD }, undefined, T0);

function rotated(graceSeconds = DAY, secret = NEW, from = base(), now = T0) {
  const result = rotateSecret(from, secret, graceSeconds, now);
  if (!result.ok) throw new Error(result.message);
  return result;
}

describe('rotateSecret', () => {
  test('the new secret signs at once; the old one beside it until the grace period ends', () => {
    const { destination, previousExpiresAt } = rotated();
    expect(destination.secret).toBe(NEW);
    expect(previousExpiresAt).toBe(at(DAY).toISOString());
    expect(signingSecrets(destination, at(0))).toEqual([NEW, OLD]);
    expect(signingSecrets(destination, at(DAY - 1))).toEqual([NEW, OLD]);
    // Dropped lazily: past its expiry the old secret neither signs nor shows.
    expect(signingSecrets(destination, at(DAY))).toEqual([NEW]);
    expect(viewOf(destination, at(DAY - 1)).previousSecrets).toEqual([{ expiresAt: at(DAY).toISOString() }]);
    expect(viewOf(destination, at(DAY)).previousSecrets).toBeUndefined();
  });

  test('graceSeconds 0 drops the old secret at once', () => {
    const { destination, previousExpiresAt } = rotated(0);
    expect(signingSecrets(destination, T0)).toEqual([NEW]);
    expect(previousExpiresAt).toBeUndefined();
    expect(destination.previousSecrets).toBeUndefined();
  });

  test('rotating again within the grace period keeps both older secrets (newest first), up to a bound', () => {
    const third = generateSecret();
    const twice = rotated(DAY, third, rotated().destination, at(3600)).destination;
    expect(signingSecrets(twice, at(3600))).toEqual([third, NEW, OLD]);
    let d = base();
    for (let i = 0; i < MAX_PREVIOUS_SECRETS + 3; i++) d = rotated(DAY, generateSecret(), d, at(i)).destination;
    expect(d.previousSecrets).toHaveLength(MAX_PREVIOUS_SECRETS);
  });

  test('refuses the current secret, or one still in its grace period', () => {
    expect(rotateSecret(base(), OLD, DAY, T0)).toMatchObject({ ok: false, message: expect.stringContaining('must differ') as string });
    expect(rotateSecret(rotated().destination, OLD, DAY, at(60))).toMatchObject({ ok: false });
  });

  test('a PUT keeps the grace period of an unchanged secret; a PUT with another secret replaces it at once', () => {
    const during = rotated().destination;
    expect(signingSecrets(applySpec('orders', { url: 'https://hooks.example.com/v2' }, during, at(60)), at(60))).toEqual([NEW, OLD]);
    const replaced = applySpec('orders', { url: 'https://hooks.example.com/v2', secret: generateSecret() }, during, at(60));
    expect(replaced.previousSecrets).toBeUndefined();
  });

  test('no secret ever shows in the view', () => {
    const view = JSON.stringify(viewOf(rotated().destination, T0));
    expect(view).not.toContain(OLD.slice(6));
    expect(view).not.toContain(NEW.slice(6));
  });
});

describe('both signatures verify, each with its own secret (standardwebhooks)', () => {
  const body = Buffer.from('{"orderId":42}');
  const headers = signatureHeaders(signingSecrets(rotated().destination, T0), 'msg_1', new Date(), body);

  test('two space-separated v1 signatures', () => {
    expect(headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(headers['webhook-signature']).toMatch(/^v1,\S+ v1,\S+$/);
  });

  test.each([
    ['the new secret', NEW],
    ['the old secret', OLD],
  ])('%s', (_, secret) => {
    expect(() => new Webhook(secret).verify(body.toString(), headers)).not.toThrow();
  });

  test('a third secret does not', () => {
    expect(() => new Webhook(generateSecret()).verify(body.toString(), headers)).toThrow();
  });
});

describe('the rotate-secret request', () => {
  test.each<[unknown, boolean]>([
    [{}, true],
    [{ graceSeconds: 0 }, true],
    [{ graceSeconds: 3600, secret: NEW }, true],
    [{ graceSeconds: -1 }, false],
    [{ graceSeconds: 31 * DAY }, false],
    [{ graceSeconds: 1.5 }, false],
    [{ secret: 'hunter2' }, false],
    [{ colour: 'red' }, false],
    [[], false],
  ])('%j → valid: %s', (body, valid) => {
    expect(rotateSecretSchema.safeParse(body).success).toBe(valid);
  });
});
