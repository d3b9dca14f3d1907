import { randomBytes } from 'node:crypto';
import { chmodSync, linkSync, mkdirSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../../shared/config';
import { generateSecretsKey, SecretBox, secretsKeySchema } from '../../shared/domain/access/secret-box';

/** Where `npm start` keeps the key it made, relative to where it runs (the repository; .gitignore leaves .herald/ out). */
export const LOCAL_SECRETS_KEY_FILE = path.join('.herald', 'secrets.key');

export interface LocalSecretsKey {
  key: string;
  file: string;
  /** Made by this call (otherwise read from an earlier run's file). */
  created: boolean;
  /** The ids of its keys, the encrypting one first: what a log line may show of it. */
  keyIds: string[];
  /** Said when the file is readable by others (some file systems cannot keep 0600: a warning, not a refusal). */
  warning?: string;
}

/**
 * Local mode's HERALD_SECRETS_KEY when none is given: read from `file`, or made once and
 * written there (0600) so that a restart against the same emulator data still decrypts.
 * Processes starting at once agree on one key: each writes its own file and links it into
 * place, which only one link can do; the others read the winner's.
 */
export function loadOrCreateLocalSecretsKey(file: string): LocalSecretsKey {
  const absolute = path.resolve(file);
  const existing = readKeyFile(absolute);
  if (existing !== undefined) return found(existing, absolute);
  mkdirSync(path.dirname(absolute), { recursive: true, mode: 0o700 });
  const key = generateSecretsKey();
  const temporary = `${absolute}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(temporary, `${key}\n`, { mode: 0o600 });
  // writeFileSync's mode is filtered by the umask: make sure the key is readable by its owner only.
  chmodSync(temporary, 0o600);
  try {
    linkSync(temporary, absolute);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    const theirs = readKeyFile(absolute);
    if (theirs === undefined) throw e;
    return found(theirs, absolute);
  } finally {
    unlinkSync(temporary);
  }
  return { key, file: absolute, created: true, keyIds: SecretBox.fromConfig(key).keyIds };
}

function readKeyFile(file: string): string | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
  const key = text.trim();
  const parsed = secretsKeySchema.safeParse(key);
  if (!parsed.success) {
    throw new ConfigError(
      `${file} does not hold a valid HERALD_SECRETS_KEY (${parsed.error.issues.map((i) => i.message).join('; ')}): ` +
        'restore it, or set HERALD_SECRETS_KEY; deleting it makes a new key, and destinations stored with the old one can no longer be read',
    );
  }
  return key;
}

function found(key: string, file: string): LocalSecretsKey {
  const loose = (statSync(file).mode & 0o077) !== 0;
  return { key, file, created: false, keyIds: SecretBox.fromConfig(key).keyIds, ...(loose ? { warning: `${file} is readable by other users: chmod 600 ${file}` } : {}) };
}
