import { CliRun, runCli, stackEnv } from '../support/cli-harness';
import { Receiver } from '../support/receiver';
import { startTestStack, TestStack } from '../support/stack';

/**
 * `herald accounts`, `herald keys`, HERALD_API_KEY and --account against a real Herald on the
 * emulators: keys made by the CLI and used by it, each account seeing its own destinations,
 * a key's refusals (another account, revoked) said plainly, and publishing for an account.
 */

let stack: TestStack;
const receiver = new Receiver();
const TYPE = 'com.example.cli.accounts';

beforeAll(async () => {
  await receiver.start();
  stack = await startTestStack(`cli-accounts-test-${Date.now().toString(36)}`);
});

afterAll(async () => {
  await stack?.stop({ purge: true });
  await receiver.stop();
});

/** The operator: the stack's URL and both tokens, as npm start prints them. */
const operator = (argv: string[], overrides: Record<string, string> = {}) => runCli(argv, stackEnv(stack, overrides));

/** An account key alone: no token in the environment. */
const withKey = (key: string, argv: string[], overrides: Record<string, string> = {}) => runCli(argv, { HERALD_URL: stack.url, HERALD_API_KEY: key, ...overrides });

function ok(r: CliRun): CliRun {
  if (r.code !== 0) throw new Error(`exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
  return r;
}

const ids = (r: CliRun) => (JSON.parse(r.stdout) as { id: string }[]).map((x) => x.id);

describe('herald accounts', () => {
  test('create: lines for people, the account as JSON with --json', async () => {
    const acme = ok(await operator(['accounts', 'create', 'Acme Corp', '--id', 'acme', '--email', 'ops@acme.example']));
    expect(acme.stdout).toMatch(/^id +acme\nname +Acme Corp\ntechnical email +ops@acme\.example\nfailure policy +retry \(default\)\n/);
    expect(acme.stderr).toBe('created account acme; give it a key with: herald keys create acme --name <name>\n');
    const globex = ok(await operator(['accounts', 'create', 'Globex', '--json']));
    expect(JSON.parse(globex.stdout)).toMatchObject({ id: 'globex', name: 'Globex', settings: {} });
    const taken = await operator(['accounts', 'create', 'Again', '--id', 'acme']);
    expect(taken.code).toBe(1);
    expect(taken.stderr).toMatch(/^herald: the account id "acme" is taken/);
  });

  test('list: a table with default among them; --json the accounts', async () => {
    const table = ok(await operator(['accounts', 'list']));
    const [header, ...rows] = table.stdout.trimEnd().split('\n');
    expect(header).toMatch(/^ID\s+NAME\s+TECHNICAL EMAIL\s+FAILURE POLICY\s+CREATED AT$/);
    expect(rows.map((r) => r.split(/\s{2,}/).slice(0, 3))).toEqual([
      ['acme', 'Acme Corp', 'ops@acme.example'],
      ['default', 'Default account', '-'],
      ['globex', 'Globex', '-'],
    ]);
    expect(ids(ok(await operator(['accounts', 'list', '--json'])))).toEqual(['acme', 'default', 'globex']);
  });

  test('show, update; a missing account is exit 1 with how to list them', async () => {
    const updated = ok(await operator(['accounts', 'update', 'acme', '--name', 'Acme Inc', '--no-email', '--json']));
    expect(JSON.parse(updated.stdout)).toMatchObject({ id: 'acme', name: 'Acme Inc' });
    expect(JSON.parse(updated.stdout)).not.toHaveProperty('technicalEmail');
    ok(await operator(['accounts', 'update', 'acme', '--email', 'ops@acme.example']));
    const shown = ok(await operator(['accounts', 'show', 'acme', '--json']));
    expect(JSON.parse(shown.stdout)).toMatchObject({ id: 'acme', name: 'Acme Inc', technicalEmail: 'ops@acme.example' });
    const missing = await operator(['accounts', 'show', 'nope']);
    expect(missing).toEqual({ code: 1, stdout: '', stderr: 'herald: no account "nope"\nhint: see the accounts there are with: herald accounts list\n' });
  });

  test('settings: retry when never set; --failure-policy queue changes it (seed 003)', async () => {
    expect(ok(await operator(['accounts', 'settings', 'globex'])).stdout).toMatch(/^notification\.webhook\.failure\.policy +retry \(the default: never set\)\n$/);
    const changed = ok(await operator(['accounts', 'settings', 'globex', '--failure-policy', 'queue']));
    expect(changed.stdout).toMatch(/^notification\.webhook\.failure\.policy +queue\n$/);
    expect(changed.stderr).toMatch(/^account globex: failure policy queue; destinations without a failureMode/);
    expect(JSON.parse(ok(await operator(['accounts', 'settings', 'globex', '--json'])).stdout)).toEqual({ 'notification.webhook.failure.policy': 'queue' });
    expect(ok(await operator(['accounts', 'list'])).stdout).toMatch(/\nglobex +Globex +- +queue +/);
  });
});

describe('herald keys, and every command with an account key', () => {
  let key = '';
  let keyId = '';

  test('keys create prints the key alone on stdout, and says it is shown this once', async () => {
    const r = ok(await operator(['keys', 'create', 'acme', '--name', 'ci', '--scopes', 'read,write']));
    expect(r.stdout).toMatch(/^hk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}\n$/);
    key = r.stdout.trim();
    keyId = key.slice(3, 19);
    expect(r.stderr).toContain(`created key ${keyId} ("ci") for account acme: scopes read, write; expires never\n`);
    expect(r.stderr).toContain('this key is shown only this once');
    const listed = ok(await operator(['keys', 'list', 'acme']));
    expect(listed.stdout).toMatch(new RegExp(`\\n${keyId} +ci +read,write +active +\\S+ +never +admin\n$`));
    expect(listed.stdout).not.toContain(key);
  });

  test('HERALD_API_KEY: the key adds and lists the destinations of its own account', async () => {
    const added = ok(await withKey(key, ['destinations', 'add', 'orders', '--url', `${receiver.url}/acme-orders`, '--event-types', TYPE]));
    expect(JSON.parse(added.stdout)).toMatchObject({ id: 'orders', account: 'acme' });
    ok(await operator(['destinations', 'add', 'orders', '--url', `${receiver.url}/default-orders`, '--event-types', TYPE]));
    const mine = ok(await withKey(key, ['destinations', 'list', '--json']));
    expect(JSON.parse(mine.stdout)).toEqual([expect.objectContaining({ id: 'orders', account: 'acme', url: `${receiver.url}/acme-orders` })]);
    // Both in the environment: the key comes first (docs/cli.md, "Acting as an account").
    const both = ok(await withKey(key, ['destinations', 'list', '--json'], { HERALD_ADMIN_TOKEN: stack.config.adminToken }));
    expect(JSON.parse(both.stdout)).toEqual([expect.objectContaining({ account: 'acme' })]);
    // A flag beats the environment: --admin-token acts as the operator, in default.
    const flagged = ok(await withKey(key, ['destinations', 'list', '--json', '--admin-token', stack.config.adminToken]));
    expect(JSON.parse(flagged.stdout)).toEqual([expect.objectContaining({ account: 'default', url: `${receiver.url}/default-orders` })]);
  });

  test('--account with the operator token: that account; with the key: its own, and another is a clear 404', async () => {
    const theirs = ok(await operator(['destinations', 'list', '--json', '--account', 'acme']));
    expect(JSON.parse(theirs.stdout)).toEqual([expect.objectContaining({ id: 'orders', account: 'acme' })]);
    const viaEnv = ok(await operator(['destinations', 'show', 'orders', '--json'], { HERALD_ACCOUNT: 'acme' }));
    expect(JSON.parse(viaEnv.stdout)).toMatchObject({ id: 'orders', account: 'acme', url: `${receiver.url}/acme-orders` });
    ok(await withKey(key, ['destinations', 'show', 'orders', '--account', 'acme']));

    const other = await withKey(key, ['destinations', 'list', '--account', 'globex']);
    expect(other.code).toBe(1);
    expect(other.stdout).toBe('');
    expect(other.stderr).toBe(
      'herald: no account "globex"\n' +
        "hint: the account key from HERALD_API_KEY reaches only its own account and gets 404 for any other, whether it exists or not: use the key's own account (drop --account and HERALD_ACCOUNT), or the admin token for another\n",
    );
    const missing = await operator(['destinations', 'show', 'nope', '--account', 'acme']);
    expect(missing.stderr).toBe('herald: no destination "nope" in account "acme"\nhint: see the destinations there are with: herald destinations list --account acme\n');
  });

  test('publish with a publish-scoped key reaches its own account\'s destination only', async () => {
    const publisher = ok(await operator(['keys', 'create', 'acme', '--name', 'publisher', '--scopes', 'publish'])).stdout.trim();
    const r = ok(await withKey(publisher, ['publish', '--type', TYPE, '--source', '/cli', '--id', 'acct-evt-1', '--data', '{"n":1}']));
    expect(r.stdout).toBe('acct-evt-1\n');
    await receiver.waitFor(1, '/acme-orders');
    const got = receiver.on('/acme-orders')[0]!;
    expect(got.headers).toMatchObject({ 'ce-id': 'acct-evt-1', 'ce-heraldaccount': 'acme' });
    // The read/write key cannot publish: the refusal names the scope.
    const refused = await withKey(key, ['publish', '--type', TYPE, '--source', '/cli']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^herald: this key lacks the "publish" scope/);
    expect(refused.stderr).toMatch(/\nhint: the key from HERALD_API_KEY lacks that scope: create one that has it/);
  });

  test('publish --account with the ingest token stamps heraldaccount and reaches that account', async () => {
    ok(await operator(['publish', '--account', 'acme', '--type', TYPE, '--source', '/cli', '--id', 'acct-evt-2']));
    await receiver.waitFor(2, '/acme-orders');
    expect(receiver.on('/acme-orders').map((q) => q.headers['ce-id'])).toEqual(['acct-evt-1', 'acct-evt-2']);
    ok(await operator(['publish', '--type', TYPE, '--source', '/cli', '--id', 'acct-evt-3']));
    await receiver.waitFor(1, '/default-orders');
    // Neither acme event went to default's `orders`, nor default's to acme's.
    expect(receiver.on('/default-orders').map((q) => q.headers['ce-id'])).toEqual(['acct-evt-3']);
    expect(receiver.on('/acme-orders')).toHaveLength(2);
  });

  test('keys revoke: the revoked key is exit 1 with a 401 hint saying which credential', async () => {
    const r = ok(await operator(['keys', 'revoke', 'acme', keyId]));
    expect(r.stderr).toBe(`revoked key ${keyId} of account acme: Herald refuses it everywhere within 5 s\n`);
    const refused = await withKey(key, ['destinations', 'list']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^herald: missing or invalid bearer token: the account key is revoked/);
    expect(refused.stderr).toContain(`\nhint: the account key ${keyId} from HERALD_API_KEY was refused: a revoked or expired key stays refused.`);
    expect(ok(await operator(['keys', 'list', 'acme'])).stdout).toMatch(new RegExp(`\\n${keyId} +ci +read,write +revoked `));
  });

  test('accounts delete: refused while it has destinations (with what to do), then done', async () => {
    const refused = await operator(['accounts', 'delete', 'acme']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^herald: account "acme" still has 1 destination\(s\)/);
    expect(refused.stderr).toMatch(/\nhint: remove its destinations first; list them with: herald destinations list --account acme\n$/);
    ok(await operator(['destinations', 'remove', 'orders', '--account', 'acme']));
    expect(ok(await operator(['accounts', 'delete', 'acme'])).stderr).toBe('deleted account acme with its keys and data; its id is never used again\n');
    expect(ids(ok(await operator(['accounts', 'list', '--json'])))).toEqual(['default', 'globex']);
  });
});
