import { createHash } from 'node:crypto';
import { ConfigError, loadConfig } from '../../../shared/config';
import { generateSecretsKey, isSealed, keyIdOf, SecretBox, SecretBoxError, sealedKeyId, secretsKeySchema } from '../../../shared/domain/access/secret-box';

const KEY_A = Buffer.alloc(32, 0xa1).toString('base64');
const KEY_B = Buffer.alloc(32, 0xb2).toString('base64');
const idOf = (key: string) => createHash('sha256').update(Buffer.from(key, 'base64')).digest('hex').slice(0, 8);
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const CONTEXT = 'herald:destination:default~orders:secret';

describe('sealing and opening', () => {
  test('a round trip: the sealed form names its key, holds neither the secret nor the key, and opens to the secret', () => {
    const box = SecretBox.fromConfig(KEY_A);
    const sealed = box.seal(SECRET, CONTEXT);
    expect(sealed).toMatch(new RegExp(`^enc:v1:${idOf(KEY_A)}:[A-Za-z0-9_-]{16}:[A-Za-z0-9_-]+$`));
    expect(sealed).not.toContain('whsec_');
    expect(sealed).not.toContain(SECRET.slice(6, 20));
    expect(sealed).not.toContain(KEY_A);
    expect(isSealed(sealed)).toBe(true);
    expect(isSealed(SECRET)).toBe(false);
    expect(sealedKeyId(sealed)).toBe(idOf(KEY_A));
    expect(box.open(sealed, CONTEXT)).toBe(SECRET);
  });

  test('every seal draws a new IV: the same secret never seals to the same text', () => {
    const box = SecretBox.fromConfig(KEY_A);
    const sealed = new Set(Array.from({ length: 50 }, () => box.seal(SECRET, CONTEXT)));
    expect(sealed.size).toBe(50);
  });

  test('the key id is the first 8 hex digits of the key’s SHA-256', () => {
    expect(keyIdOf(Buffer.from(KEY_A, 'base64'))).toBe(idOf(KEY_A));
    expect(SecretBox.fromConfig(`${KEY_B},${KEY_A}`).keyIds).toEqual([idOf(KEY_B), idOf(KEY_A)]);
  });

  test('URL-safe base64, with or without padding, is the same key', () => {
    const bytes = Buffer.alloc(32, 0xfb);
    const standard = bytes.toString('base64');
    expect(standard).toMatch(/[+/]/);
    const sealed = SecretBox.fromConfig(standard).seal(SECRET, CONTEXT);
    expect(SecretBox.fromConfig(bytes.toString('base64url')).open(sealed, CONTEXT)).toBe(SECRET);
    expect(SecretBox.fromConfig(`${bytes.toString('base64url')}=`).open(sealed, CONTEXT)).toBe(SECRET);
  });
});

describe('rotation: the first key seals, every key opens', () => {
  test('a new key put first seals from then on; what the old one sealed still opens', () => {
    const before = SecretBox.fromConfig(KEY_A).seal(SECRET, CONTEXT);
    const rotated = SecretBox.fromConfig(`${KEY_B}, ${KEY_A}`);
    expect(rotated.open(before, CONTEXT)).toBe(SECRET);
    const after = rotated.seal(SECRET, CONTEXT);
    expect(sealedKeyId(after)).toBe(idOf(KEY_B));
    // Once every record is sealed again, the old key can go.
    expect(SecretBox.fromConfig(KEY_B).open(after, CONTEXT)).toBe(SECRET);
  });

  test('an unknown key id is named, with what to do', () => {
    const sealed = SecretBox.fromConfig(KEY_A).seal(SECRET, CONTEXT);
    const open = () => SecretBox.fromConfig(KEY_B).open(sealed, CONTEXT);
    expect(open).toThrow(SecretBoxError);
    expect(open).toThrow(`a secret is sealed with key id ${idOf(KEY_A)}, which is not in HERALD_SECRETS_KEY (key ids ${idOf(KEY_B)}): put that key back into HERALD_SECRETS_KEY, after the first, to read it`);
  });
});

describe('what does not open', () => {
  const box = SecretBox.fromConfig(KEY_A);
  const sealed = box.seal(SECRET, CONTEXT);
  const parts = sealed.split(':');
  const flip = (text: string, at: number) => {
    const bytes = Buffer.from(text, 'base64url');
    bytes[at] = bytes[at]! ^ 0x01;
    return bytes.toString('base64url');
  };

  test.each([
    ['a flipped ciphertext bit', [...parts.slice(0, 4), flip(parts[4]!, 0)].join(':')],
    ['a flipped tag bit', [...parts.slice(0, 4), flip(parts[4]!, Buffer.from(parts[4]!, 'base64url').length - 1)].join(':')],
    ['a changed IV', [...parts.slice(0, 3), flip(parts[3]!, 0), parts[4]].join(':')],
  ])('%s fails authentication', (_what, tampered) => {
    expect(() => box.open(tampered, CONTEXT)).toThrow(/failed authentication: the stored value was altered, or copied from another record/);
  });

  test('a value sealed for one record does not open for another', () => {
    expect(() => box.open(sealed, 'herald:destination:default~other:secret')).toThrow(/failed authentication/);
  });

  test.each([
    ['not sealed at all', SECRET, /malformed/],
    ['a part missing', parts.slice(0, 4).join(':'), /malformed/],
    ['a part too many', `${sealed}:x`, /malformed/],
    ['a format from the future', ['enc', 'v2', ...parts.slice(2)].join(':'), /format v2; this Herald reads v1 only/],
    ['an IV cut short', [...parts.slice(0, 3), 'AAAA', parts[4]].join(':'), /cut short/],
    ['a ciphertext shorter than a tag', [...parts.slice(0, 4), 'AAAA'].join(':'), /cut short/],
  ])('%s is refused as such', (_what, value, message) => {
    expect(() => box.open(value, CONTEXT)).toThrow(message);
  });
});

describe('HERALD_SECRETS_KEY validation', () => {
  const problems = (value: string) => {
    const parsed = secretsKeySchema.safeParse(value);
    return parsed.success ? [] : parsed.error.issues.map((i) => i.message);
  };

  test('one key or several, spaces around commas allowed; a generated key is valid', () => {
    expect(problems(KEY_A)).toEqual([]);
    expect(problems(`${KEY_A}, ${KEY_B}`)).toEqual([]);
    expect(problems(generateSecretsKey())).toEqual([]);
    expect(Buffer.from(generateSecretsKey(), 'base64')).toHaveLength(32);
  });

  test.each([
    ['too short', Buffer.alloc(16, 1).toString('base64'), 'the key decodes to 16 bytes, not 32: make one with openssl rand -base64 32'],
    ['too long', Buffer.alloc(48, 1).toString('base64'), 'the key decodes to 48 bytes, not 32'],
    ['not base64', 'this is not base64!', 'the key is not base64'],
    ['hex, not base64', 'ab'.repeat(32), 'the key decodes to 48 bytes, not 32 (it looks like hex: give the same bytes in base64'],
    ['empty', '', 'the key is empty'],
    ['an empty entry', `${KEY_A},`, 'key 2 of 2 is empty'],
    ['a bad second entry', `${KEY_A},${Buffer.alloc(31).toString('base64')}`, 'key 2 of 2 decodes to 31 bytes, not 32'],
    ['the same key twice', `${KEY_A},${Buffer.from(KEY_A, 'base64').toString('base64url')}`, `key 2 of 2 is the same key as key 1 (key id ${idOf(KEY_A)})`],
  ])('%s: a precise message', (_what, value, message) => {
    expect(problems(value).join('\n')).toContain(message);
  });

  test('loadConfig names the variable, redacts the value, and never shows the key', () => {
    const bad = Buffer.alloc(16, 0x5a).toString('base64');
    const load = () => loadConfig({ HERALD_SECRETS_KEY: `${KEY_A},${bad}` });
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(/HERALD_SECRETS_KEY=\[redacted\]: key 2 of 2 decodes to 16 bytes, not 32/);
    let message = '';
    try {
      load();
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).not.toContain(KEY_A);
    expect(message).not.toContain(bad);
    expect(loadConfig({ HERALD_SECRETS_KEY: KEY_A }).secretsKey).toBe(KEY_A);
  });

  test('fromConfig refuses an invalid value without echoing it', () => {
    const bad = Buffer.alloc(8, 0x33).toString('base64');
    expect(() => SecretBox.fromConfig(bad)).toThrow('invalid HERALD_SECRETS_KEY: the key decodes to 8 bytes, not 32');
    expect(() => SecretBox.fromConfig(bad)).not.toThrow(bad);
  });
});
