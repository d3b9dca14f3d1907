import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { z } from 'zod';

/**
 * Secrets at rest: AES-256-GCM under a keyring (HERALD_SECRETS_KEY). The first key seals,
 * every key opens, so a key is rotated by putting a new one first and dropping the old one
 * once nothing sealed with it is left. A sealed value names its key by a fingerprint (never
 * the key), so a missing key is reported by name instead of as a bare decryption failure.
 *
 * Format: `enc:v1:<key id>:<iv>:<ciphertext and tag>`; the key id is the first 8 hex digits of
 * the key's SHA-256, iv and ciphertext are base64url. The caller's `context` is authenticated
 * (GCM additional data) but not stored: a sealed value copied into another record (another
 * context) does not open there.
 */

const ALGORITHM = 'aes-256-gcm';
export const SECRETS_KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const VERSION = 'v1';
const SEALED = /^enc:/;
/** The setting's name, in messages: the box is configured from it and only from it. */
const SETTING = 'HERALD_SECRETS_KEY';
const HOW_TO_MAKE = 'openssl rand -base64 32';
// Standard or URL-safe alphabet, padding optional: both are what base64 tools print.
const BASE64 = /^[A-Za-z0-9+/_-]+={0,2}$/;

export class SecretBoxError extends Error {
  override name = 'SecretBoxError';
}

interface Key {
  id: string;
  key: Buffer;
}

/** The fingerprint a sealed value names its key by: short, and says nothing usable about the key. */
export function keyIdOf(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 8);
}

/** Why a HERALD_SECRETS_KEY value is not a keyring; each message names an entry by position, never by value. */
function keyringProblems(value: string): string[] {
  const entries = value.split(',').map((e) => e.trim());
  const total = entries.length;
  const which = (i: number) => (total === 1 ? 'the key' : `key ${i + 1} of ${total}`);
  const problems: string[] = [];
  const seen = new Map<string, number>();
  entries.forEach((entry, i) => {
    if (entry === '') {
      problems.push(`${which(i)} is empty: give one or more base64 keys separated by commas`);
      return;
    }
    if (!BASE64.test(entry)) {
      problems.push(`${which(i)} is not base64 (letters, digits, + / or - _, then at most two =): make one with ${HOW_TO_MAKE}`);
      return;
    }
    const bytes = Buffer.from(entry, 'base64');
    if (bytes.length !== SECRETS_KEY_BYTES) {
      // 64 hex digits are valid base64 too (of 48 bytes): say what was probably meant.
      const hex = /^[0-9a-fA-F]{64}$/.test(entry) ? ' (it looks like hex: give the same bytes in base64, e.g. xxd -r -p | base64)' : '';
      problems.push(`${which(i)} decodes to ${bytes.length} bytes, not ${SECRETS_KEY_BYTES}${hex}: make one with ${HOW_TO_MAKE}`);
      return;
    }
    const id = keyIdOf(bytes);
    const earlier = seen.get(id);
    if (earlier !== undefined) problems.push(`${which(i)} is the same key as key ${earlier + 1} (key id ${id})`);
    else seen.set(id, i);
  });
  return problems;
}

/** HERALD_SECRETS_KEY: one or more base64 encodings of 32 random bytes, comma-separated, the first sealing. */
export const secretsKeySchema = z.string().superRefine((value, ctx) => {
  for (const message of keyringProblems(value)) ctx.addIssue({ code: 'custom', message });
});

/** A new key for HERALD_SECRETS_KEY (local mode and test stacks make their own). */
export function generateSecretsKey(): string {
  return randomBytes(SECRETS_KEY_BYTES).toString('base64');
}

/** Whether a stored value is sealed (otherwise it is a plaintext value from before encryption). */
export function isSealed(stored: string): boolean {
  return SEALED.test(stored);
}

/** The key id a sealed value names, if it has the shape of one. */
export function sealedKeyId(stored: string): string | undefined {
  const parts = stored.split(':');
  return parts.length === 5 && parts[0] === 'enc' && /^[0-9a-f]{8}$/.test(parts[2]!) ? parts[2] : undefined;
}

export class SecretBox {
  private constructor(private readonly keys: readonly Key[]) {}

  /** From a HERALD_SECRETS_KEY value; an invalid one is refused with what is wrong, never with the value. */
  static fromConfig(value: string): SecretBox {
    const problems = keyringProblems(value);
    if (problems.length) throw new SecretBoxError(`invalid ${SETTING}: ${problems.join('; ')}`);
    return new SecretBox(
      value.split(',').map((entry) => {
        const key = Buffer.from(entry.trim(), 'base64');
        return { id: keyIdOf(key), key };
      }),
    );
  }

  /** The ids of the keys, the sealing one first. */
  get keyIds(): string[] {
    return this.keys.map((k) => k.id);
  }

  seal(plaintext: string, context: string): string {
    const { id, key } = this.keys[0]!;
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv(ALGORITHM, key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return `enc:${VERSION}:${id}:${iv.toString('base64url')}:${body.toString('base64url')}`;
  }

  /** The plaintext of a value `seal` made with the same context; throws a SecretBoxError saying what to do otherwise. */
  open(sealed: string, context: string): string {
    const [prefix, version, keyId, ivText, bodyText, ...extra] = sealed.split(':');
    if (prefix !== 'enc' || keyId === undefined || ivText === undefined || bodyText === undefined || extra.length > 0) {
      throw new SecretBoxError(`a sealed secret is malformed: expected enc:${VERSION}:<key id>:<iv>:<ciphertext>`);
    }
    if (version !== VERSION) throw new SecretBoxError(`a sealed secret has format ${version ?? '(none)'}; this Herald reads ${VERSION} only (was it written by a newer Herald?)`);
    const key = this.keys.find((k) => k.id === keyId);
    if (!key) {
      throw new SecretBoxError(
        `a secret is sealed with key id ${keyId}, which is not in ${SETTING} (key ids ${this.keyIds.join(', ')}): put that key back into ${SETTING}, after the first, to read it`,
      );
    }
    const iv = Buffer.from(ivText, 'base64url');
    const body = Buffer.from(bodyText, 'base64url');
    if (iv.length !== IV_BYTES || body.length < TAG_BYTES) throw new SecretBoxError(`a sealed secret (key id ${keyId}) is malformed: its iv or ciphertext is cut short`);
    try {
      const decipher = createDecipheriv(ALGORITHM, key.key, iv, { authTagLength: TAG_BYTES });
      decipher.setAAD(Buffer.from(context, 'utf8'));
      decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
      return Buffer.concat([decipher.update(body.subarray(0, body.length - TAG_BYTES)), decipher.final()]).toString('utf8');
    } catch {
      // GCM's only answer is "not authentic": the value was altered, or sealed for another record.
      throw new SecretBoxError(`a secret sealed with key id ${keyId} failed authentication: the stored value was altered, or copied from another record`);
    }
  }
}
