import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ConfigError, loadConfig } from '../../shared/config';
import { createLogger } from '../../shared/log';
import { loadOrCreateLocalSecretsKey } from '../../apps/local/secrets-key';
import { SecretBox } from '../../shared/domain/access/secret-box';
import { secretBoxOf } from '../../shared/config';

const ROOT = path.resolve(__dirname, '../..');
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'herald-key-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('local mode keeps the key it makes', () => {
  test('made once, owner-only, in a directory it creates; the next start reads the same key', () => {
    const file = path.join(dir, '.herald', 'secrets.key');
    const first = loadOrCreateLocalSecretsKey(file);
    expect(first).toMatchObject({ file, created: true });
    expect(() => SecretBox.fromConfig(first.key)).not.toThrow();
    expect(first.keyIds).toEqual(SecretBox.fromConfig(first.key).keyIds);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, 'utf8')).toBe(`${first.key}\n`);
    const again = loadOrCreateLocalSecretsKey(file);
    expect(again).toEqual({ ...first, created: false });
    // No temporary file is left beside it.
    expect(readdirSync(path.dirname(file))).toEqual(['secrets.key']);
  });

  test('processes starting at once all end up with one key', async () => {
    const file = path.join(dir, 'secrets.key');
    const script = `const { loadOrCreateLocalSecretsKey } = require(${JSON.stringify(path.join(ROOT, 'apps/local/secrets-key.ts'))}); process.stdout.write(loadOrCreateLocalSecretsKey(${JSON.stringify(file)}).key);`;
    const run = () => promisify(execFile)(process.execPath, ['--import', 'tsx', '-e', script], { cwd: ROOT });
    const keys = await Promise.all(Array.from({ length: 4 }, run));
    expect(new Set(keys.map((k) => k.stdout)).size).toBe(1);
    expect(keys[0]!.stdout).toBe(readFileSync(file, 'utf8').trim());
    expect(readdirSync(dir)).toEqual(['secrets.key']);
  }, 60_000);

  test('a file that holds no valid key stops start-up, without showing what it holds', () => {
    const file = path.join(dir, 'secrets.key');
    writeFileSync(file, 'c2hvcnQ=\n', { mode: 0o600 });
    expect(() => loadOrCreateLocalSecretsKey(file)).toThrow(ConfigError);
    expect(() => loadOrCreateLocalSecretsKey(file)).toThrow(`${file} does not hold a valid HERALD_SECRETS_KEY (the key decodes to 5 bytes, not 32`);
    expect(() => loadOrCreateLocalSecretsKey(file)).not.toThrow(/c2hvcnQ/);
  });

  test('a key file others may read is used, with a warning', () => {
    const file = path.join(dir, 'secrets.key');
    const made = loadOrCreateLocalSecretsKey(file);
    chmodSync(file, 0o644);
    expect(loadOrCreateLocalSecretsKey(file)).toMatchObject({ key: made.key, warning: `${file} is readable by other users: chmod 600 ${file}` });
  });
});

describe('the runtime and the key', () => {
  const logged: string[] = [];
  const log = createLogger({ write: (line) => logged.push(line) });

  test('against real Firestore (no emulator), no key stops start-up and says how to set it', () => {
    const open = () => secretBoxOf(loadConfig({}), log, {});
    expect(open).toThrow(ConfigError);
    expect(open).toThrow(/^HERALD_SECRETS_KEY is not set: Herald encrypts destination signing secrets in Firestore with it\. The Pulumi program sets it from Secret Manager/);
    expect(open).toThrow('HERALD_SECRETS_KEY=$(openssl rand -base64 32)');
  });

  test('on the emulator without a key, secrets are stored as they are, with a warning', () => {
    expect(secretBoxOf(loadConfig({}), log, { FIRESTORE_EMULATOR_HOST: '127.0.0.1:8081' })).toBeUndefined();
    expect(logged.join('\n')).toContain('HERALD_SECRETS_KEY is not set: destination signing secrets are stored unencrypted (Firestore emulator only)');
  });

  test('with a key, a box sealing with its first key', () => {
    const keyring = [Buffer.alloc(32, 1), Buffer.alloc(32, 2)].map((k) => k.toString('base64')).join(',');
    expect(secretBoxOf(loadConfig({ HERALD_SECRETS_KEY: keyring }), log, {})?.keyIds).toEqual(SecretBox.fromConfig(keyring).keyIds);
  });
});
