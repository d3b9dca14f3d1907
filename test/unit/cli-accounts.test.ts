import { harness, Sent } from '../support/cli-harness';

/**
 * `herald accounts`, `herald keys`, account keys (HERALD_API_KEY / --api-key) and --account,
 * in-process against scripted answers: which credential is sent, where, with what body, and
 * what a refusal says.
 */

const KEY = `hk_0123456789abcdef_${'A'.repeat(43)}`;
const OTHER_KEY = `hk_fedcba9876543210_${'b'.repeat(43)}`;
const URL0 = 'http://127.0.0.1:8080';

const ACME = { id: 'acme', name: 'Acme Corp', technicalEmail: 'ops@acme.example', settings: {}, createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T00:00:00.000Z' };
const GLOBEX = { id: 'globex', name: 'Globex', settings: { 'notification.webhook.failure.policy': 'queue' }, createdAt: '2026-01-02T00:00:00.000Z', updatedAt: '2026-01-02T00:00:00.000Z' };

type Route = (req: Sent, body: unknown) => Response;

/** Answers by `METHOD /path` (the query string left out); anything else is Herald's 404 for no route. */
function server(routes: Record<string, Route>) {
  return (req: Sent): Response => {
    const url = new URL(req.url);
    const route = routes[`${req.method} ${url.pathname}`];
    if (!route) return Response.json({ error: `no admin route ${req.method} ${url.pathname}` }, { status: 404 });
    return route(req, req.body === undefined ? undefined : (JSON.parse(req.body.toString()) as unknown));
  };
}

const json = (body: unknown, status = 200) => () => Response.json(body, { status });
const noContent = () => new Response(null, { status: 204 });
const sentBody = (s: Sent | undefined) => JSON.parse(s!.body!.toString()) as unknown;

describe('credentials: which one is sent (docs/cli.md, "Acting as an account")', () => {
  const list = ['destinations', 'list', '--json'];
  const auth = async (argv: string[], env: Record<string, string>) => {
    const h = harness(json({ destinations: [] }));
    const code = await h.run(argv, { env });
    return { code, sent: h.sent[0]?.headers.authorization, stderr: h.stderr() };
  };

  test.each([
    ['the admin token from the environment', list, { HERALD_ADMIN_TOKEN: 'admin-token' }, 'Bearer admin-token'],
    ['an account key from the environment', list, { HERALD_API_KEY: KEY }, `Bearer ${KEY}`],
    ['both in the environment: the account key', list, { HERALD_ADMIN_TOKEN: 'admin-token', HERALD_API_KEY: KEY }, `Bearer ${KEY}`],
    ['--api-key beats HERALD_ADMIN_TOKEN', [...list, '--api-key', KEY], { HERALD_ADMIN_TOKEN: 'admin-token' }, `Bearer ${KEY}`],
    ['--admin-token beats HERALD_API_KEY', [...list, '--admin-token', 'flag-token'], { HERALD_API_KEY: KEY }, 'Bearer flag-token'],
    ['--api-key beats HERALD_API_KEY', [...list, '--api-key', OTHER_KEY], { HERALD_API_KEY: KEY }, `Bearer ${OTHER_KEY}`],
    ['herald --api-key before the command', ['--api-key', KEY, ...list], { HERALD_ADMIN_TOKEN: 'admin-token' }, `Bearer ${KEY}`],
  ])('%s', async (_what, argv, env, expected) => {
    const r = await auth(argv, env);
    expect(r).toEqual({ code: 0, sent: expected, stderr: '' });
  });

  test('--api-key and --admin-token together: exit 2, nothing sent', async () => {
    const r = await auth([...list, '--api-key', KEY, '--admin-token', 't'], {});
    expect(r).toEqual({
      code: 2,
      sent: undefined,
      stderr: "herald: give --admin-token or --api-key, not both\nhint: --admin-token acts as the operator, --api-key as the key's own account: pick the one you mean\n",
    });
    expect((await auth(['--admin-token', 't', ...list, '--api-key', KEY], {})).code).toBe(2);
  });

  test('a key that is not one is named where it came from, before sending', async () => {
    const fromEnv = await auth(list, { HERALD_API_KEY: 'hk_nope' });
    expect(fromEnv.code).toBe(2);
    expect(fromEnv.stderr).toContain('  - HERALD_API_KEY: must be an account key, hk_<16 hex digits>_<43 characters>, as herald keys create printed it\n');
    const fromFlag = await auth([...list, '--api-key', `${KEY}x`], {});
    expect(fromFlag.stderr).toContain('  - --api-key: must be an account key');
    expect(fromFlag.sent).toBeUndefined();
  });

  test('publish sends the key to /ingest as it does the ingest token', async () => {
    const h = harness();
    expect(await h.run(['publish', '--type', 't.x', '--source', '/s'], { env: { HERALD_INGEST_TOKEN: 'ingest-token', HERALD_API_KEY: KEY } })).toBe(0);
    expect(await h.run(['publish', '--type', 't.x', '--source', '/s', '--ingest-token', 'flag-token'], { env: { HERALD_API_KEY: KEY } })).toBe(0);
    expect(h.sent.map((s) => [s.url, s.headers.authorization])).toEqual([
      [`${URL0}/ingest`, `Bearer ${KEY}`],
      [`${URL0}/ingest`, 'Bearer flag-token'],
    ]);
  });
});

describe('--account: destinations and deliveries under /admin/accounts/{id}', () => {
  const answer = server({
    'GET /admin/accounts/acme/destinations': json({ destinations: [] }),
    'GET /admin/accounts/acme/destinations/orders': json({ id: 'orders', account: 'acme', status: 'active', eventTypes: [] }),
    'PUT /admin/accounts/acme/destinations/orders': json({ id: 'orders', account: 'acme', secret: 'whsec_x' }, 201),
    'DELETE /admin/accounts/acme/destinations/orders': noContent,
    'POST /admin/accounts/acme/destinations/orders/reactivate': json({ destination: { id: 'orders' }, redelivered: 0 }),
    'POST /admin/accounts/acme/destinations/orders/redeliver': json({ redelivered: 0, status: 'QUEUED' }, 202),
    'POST /admin/accounts/acme/destinations/orders/rotate-secret': json({ id: 'orders', secret: 'whsec_y', previousSecrets: [] }),
    'GET /admin/accounts/acme/destinations/orders/deliveries': json({ deliveries: [] }),
    'GET /admin/accounts/acme/deliveries/acme_orders.k1': json({ id: 'acme_orders.k1' }),
    'GET /admin/destinations': json({ destinations: [] }),
  });

  test.each([
    [['destinations', 'list'], 'GET /admin/accounts/acme/destinations'],
    [['destinations', 'show', 'orders'], 'GET /admin/accounts/acme/destinations/orders'],
    [['destinations', 'add', 'orders', '--url', 'https://o.example/hook'], 'PUT /admin/accounts/acme/destinations/orders'],
    [['destinations', 'remove', 'orders'], 'DELETE /admin/accounts/acme/destinations/orders'],
    [['destinations', 'reactivate', 'orders'], 'POST /admin/accounts/acme/destinations/orders/reactivate'],
    [['destinations', 'redeliver', 'orders'], 'POST /admin/accounts/acme/destinations/orders/redeliver'],
    [['destinations', 'rotate-secret', 'orders'], 'POST /admin/accounts/acme/destinations/orders/rotate-secret'],
    [['deliveries', 'list', 'orders'], 'GET /admin/accounts/acme/destinations/orders/deliveries'],
    [['deliveries', 'show', 'acme_orders.k1'], 'GET /admin/accounts/acme/deliveries/acme_orders.k1'],
  ])('%j --account acme → %s', async (argv, call) => {
    const h = harness(answer);
    expect(await h.run([...argv, '--account', 'acme'])).toBe(0);
    expect(h.sent.map((s) => `${s.method} ${s.url.replace(URL0, '').replace(/\?.*/, '')}`)).toEqual([call]);
  });

  test('HERALD_ACCOUNT, and herald --account before the command, do the same; without either: /admin/destinations', async () => {
    const h = harness(answer);
    await h.run(['destinations', 'list'], { env: { HERALD_ADMIN_TOKEN: 't', HERALD_ACCOUNT: 'acme' } });
    await h.run(['--account', 'acme', 'destinations', 'list']);
    await h.run(['destinations', 'list', '--account', 'acme'], { env: { HERALD_ADMIN_TOKEN: 't', HERALD_ACCOUNT: 'globex' } });
    await h.run(['destinations', 'list']);
    expect(h.sent.map((s) => s.url.replace(URL0, ''))).toEqual(['/admin/accounts/acme/destinations', '/admin/accounts/acme/destinations', '/admin/accounts/acme/destinations', '/admin/destinations']);
  });

  test("deliveries show without --account follows the id's own account", async () => {
    const h = harness(answer);
    expect(await h.run(['deliveries', 'show', 'acme_orders.k1'])).toBe(0);
    expect(h.sent[0]!.url).toBe(`${URL0}/admin/accounts/acme/deliveries/acme_orders.k1`);
  });

  test('a bad account id is exit 2, named by where it came from', async () => {
    const h = harness(answer);
    expect(await h.run(['destinations', 'list', '--account', 'Acme!'])).toBe(2);
    expect(await h.run(['destinations', 'list'], { env: { HERALD_ADMIN_TOKEN: 't', HERALD_ACCOUNT: 'a_b' } })).toBe(2);
    expect(h.stderr()).toContain('  - --account: an account id is 1-63 lowercase letters');
    expect(h.stderr()).toContain('  - HERALD_ACCOUNT: an account id is 1-63 lowercase letters');
    expect(h.sent).toHaveLength(0);
  });

  test('missing things name the account and the command to list them in it', async () => {
    const h = harness(json({ error: 'no destination "gone"' }, 404));
    expect(await h.run(['destinations', 'show', 'gone', '--account', 'acme'])).toBe(1);
    expect(h.stderr()).toBe('herald: no destination "gone" in account "acme"\nhint: see the destinations there are with: herald destinations list --account acme\n');
  });

  test('publish --account (or HERALD_ACCOUNT) sets the heraldaccount attribute; --ext heraldaccount is refused', async () => {
    const h = harness();
    expect(await h.run(['publish', '--type', 't.x', '--source', '/s', '--account', 'acme'])).toBe(0);
    expect(await h.run(['publish', '--type', 't.x', '--source', '/s'], { env: { HERALD_INGEST_TOKEN: 'i', HERALD_ACCOUNT: 'globex' } })).toBe(0);
    expect(await h.run(['publish', '--type', 't.x', '--source', '/s'])).toBe(0);
    expect(h.sent.map((s) => [s.url, s.headers['ce-heraldaccount']])).toEqual([
      [`${URL0}/ingest`, 'acme'],
      [`${URL0}/ingest`, 'globex'],
      [`${URL0}/ingest`, undefined],
    ]);
    const refused = harness();
    expect(await refused.run(['publish', '--type', 't.x', '--source', '/s', '--ext', 'heraldaccount=acme'])).toBe(2);
    expect(refused.stderr()).toContain('heraldaccount is not an extension attribute; use --account (or HERALD_ACCOUNT)');
  });

  test("replay and replays list|show --account: that account's replays", async () => {
    const report = { id: 'r1', status: 'done', dryRun: false, request: { destination: 'orders' }, matched: 0, redelivered: 0, wouldRedeliver: 0, skipped: 0, failed: 0, scanned: 0, skippedBy: {}, items: [], itemsOmitted: 0 };
    const h = harness(
      server({
        'POST /admin/accounts/acme/replays': json({ id: 'r1', status: 'queued', dryRun: false, request: { destination: 'orders' }, report: '/admin/accounts/acme/replays/r1' }, 202),
        'GET /admin/accounts/acme/replays/r1': json(report),
        'GET /admin/accounts/acme/replays': json({ replays: [] }),
      }),
    );
    expect(await h.run(['replay', '--destination', 'orders', '--since', '1h', '--no-wait'], { env: { HERALD_ADMIN_TOKEN: 't', HERALD_ACCOUNT: 'acme' } })).toBe(0);
    expect(h.stderr()).toBe('replay r1 queued; follow it with: herald replays show r1 --account acme\n');
    expect(await h.run(['replays', 'show', 'r1', '--account', 'acme'])).toBe(0);
    expect(await h.run(['replays', 'list', '--account', 'acme'])).toBe(0);
    expect(h.sent.map((s) => `${s.method} ${s.url.replace(URL0, '')}`)).toEqual(['POST /admin/accounts/acme/replays', 'GET /admin/accounts/acme/replays/r1', 'GET /admin/accounts/acme/replays']);
  });
});

describe('refusals say which credential, and what to do', () => {
  const refuse = (status: number, error: string) => harness(json({ error }, status));

  test('401 for an account key: which key, from where, and how to get a new one', async () => {
    const h = refuse(401, 'missing or invalid bearer token: the account key is revoked; ask for a new one');
    expect(await h.run(['destinations', 'list'], { env: { HERALD_API_KEY: KEY } })).toBe(1);
    expect(h.stderr()).toBe(
      'herald: missing or invalid bearer token: the account key is revoked; ask for a new one\n' +
        'hint: the account key 0123456789abcdef from HERALD_API_KEY was refused: a revoked or expired key stays refused. Get a new one (herald keys create <account> --name <name>) and pass it with --api-key or HERALD_API_KEY\n',
    );
  });

  test('401 with both in the environment: the hint says the key came first', async () => {
    const h = refuse(401, 'missing or invalid bearer token: the account key is expired; ask for a new one');
    expect(await h.run(['destinations', 'list'], { env: { HERALD_API_KEY: KEY, HERALD_ADMIN_TOKEN: 'a' } })).toBe(1);
    expect(h.stderr()).toMatch(/; HERALD_ADMIN_TOKEN is set too, but HERALD_API_KEY comes first: pass --admin-token to use it\n$/);
  });

  test('401 for a token keeps pointing at its variable', async () => {
    const h = refuse(401, 'missing or invalid bearer token');
    expect(await h.run(['publish', '--type', 't.x', '--source', '/s'])).toBe(1);
    expect(h.stderr()).toMatch(/\nhint: check HERALD_INGEST_TOKEN — npm start prints it\n$/);
  });

  test.each([
    ['a missing scope', 'this key lacks the "write" scope; create a key with it (POST /admin/accounts/acme/keys)', /hint: the key from --api-key lacks that scope: create one that has it \(herald keys create <account> --name <name> --scopes read,write,publish\)\n$/],
    ['an operator-only call', 'creating an account is for the operator (the admin token) only; an account key cannot', /hint: this needs the admin token \(--admin-token or HERALD_ADMIN_TOKEN\); an account key cannot\n$/],
    ['an event for another account', "an event names another account than the key's (acme); nothing accepted", /hint: an account key acts for its own account only: drop --account \(and HERALD_ACCOUNT\) or use the admin token\n$/],
  ])('403 for %s', async (_what, error, hint) => {
    const h = refuse(403, error);
    expect(await h.run(['accounts', 'list', '--api-key', KEY])).toBe(1);
    expect(h.stderr()).toMatch(hint);
  });

  test('404 for an account: to a key, that it reaches its own alone; to the operator, how to list them', async () => {
    const error = 'no account "globex"; list them with GET /admin/accounts';
    const asKey = refuse(404, error);
    expect(await asKey.run(['destinations', 'list', '--account', 'globex', '--api-key', KEY])).toBe(1);
    expect(asKey.stderr()).toBe(
      'herald: no account "globex"\n' +
        "hint: the account key from --api-key reaches only its own account and gets 404 for any other, whether it exists or not: use the key's own account (drop --account and HERALD_ACCOUNT), or the admin token for another\n",
    );
    const asOperator = refuse(404, error);
    expect(await asOperator.run(['destinations', 'show', 'orders', '--account', 'globex'])).toBe(1);
    expect(asOperator.stderr()).toBe('herald: no account "globex"\nhint: see the accounts there are with: herald accounts list\n');
  });
});

describe('herald accounts', () => {
  test('list follows every page and prints a table; --json the accounts', async () => {
    const h = harness((req) => Response.json(new URL(req.url).searchParams.get('cursor') === 'acme' ? { accounts: [GLOBEX] } : { accounts: [ACME], nextCursor: 'acme' }));
    expect(await h.run(['accounts', 'list'])).toBe(0);
    expect(h.stdout()).toBe(
      [
        'ID      NAME       TECHNICAL EMAIL   FAILURE POLICY   CREATED AT',
        'acme    Acme Corp  ops@acme.example  retry (default)  2026-01-01T00:00:00.000Z',
        'globex  Globex     -                 queue            2026-01-02T00:00:00.000Z',
        '',
      ].join('\n'),
    );
    expect(h.sent.map((s) => s.url.replace(URL0, ''))).toEqual(['/admin/accounts?limit=500', '/admin/accounts?limit=500&cursor=acme']);
    const j = harness(json({ accounts: [ACME] }));
    expect(await j.run(['accounts', 'list', '--json'])).toBe(0);
    expect(JSON.parse(j.stdout())).toEqual([ACME]);
  });

  test('show: a line per field; --json the account', async () => {
    const h = harness(json(ACME));
    expect(await h.run(['accounts', 'show', 'acme'])).toBe(0);
    expect(h.stdout()).toBe(
      [
        'id               acme',
        'name             Acme Corp',
        'technical email  ops@acme.example',
        'failure policy   retry (default)',
        'allowed topics   none (no topic destinations)',
        'created at       2026-01-01T00:00:00.000Z',
        'updated at       2026-01-01T00:00:00.000Z',
        '',
      ].join('\n'),
    );
    expect(await h.run(['accounts', 'show', 'acme', '--json'])).toBe(0);
    expect(JSON.parse(h.stdout().slice(h.stdout().indexOf('{')))).toEqual(ACME);
  });

  test('create sends {name, id, technicalEmail}', async () => {
    const h = harness((_req) => Response.json(ACME, { status: 201 }));
    expect(await h.run(['accounts', 'create', 'Acme Corp', '--id', 'acme', '--email', 'ops@acme.example', '--json'])).toBe(0);
    expect([h.sent[0]!.method, h.sent[0]!.url]).toEqual(['POST', `${URL0}/admin/accounts`]);
    expect(sentBody(h.sent[0])).toEqual({ name: 'Acme Corp', id: 'acme', technicalEmail: 'ops@acme.example' });
    expect(h.stderr()).toBe('created account acme; give it a key with: herald keys create acme --name <name>\n');
    const bare = harness(() => Response.json(ACME, { status: 201 }));
    expect(await bare.run(['accounts', 'create', 'Acme Corp'])).toBe(0);
    expect(sentBody(bare.sent[0])).toEqual({ name: 'Acme Corp' });
  });

  test('update: --name, --email, --no-email (null)', async () => {
    const h = harness(json(ACME));
    expect(await h.run(['accounts', 'update', 'acme', '--name', 'Acme Inc'])).toBe(0);
    expect(await h.run(['accounts', 'update', 'acme', '--no-email'])).toBe(0);
    expect(await h.run(['accounts', 'update', 'acme', '--email', 'new@acme.example'])).toBe(0);
    expect(h.sent.map((s) => [s.method, s.url.replace(URL0, ''), sentBody(s)])).toEqual([
      ['PATCH', '/admin/accounts/acme', { name: 'Acme Inc' }],
      ['PATCH', '/admin/accounts/acme', { technicalEmail: null }],
      ['PATCH', '/admin/accounts/acme', { technicalEmail: 'new@acme.example' }],
    ]);
  });

  test('update --allowed-topic (repeatable) replaces the allowed topics, --no-allowed-topics removes them; show lists those in force', async () => {
    const h = harness(json({ ...ACME, allowedTopics: ['projects/acme-prod/topics/acme-*'], allowedTopicsInForce: ['projects/acme-prod/topics/acme-*'] }));
    expect(await h.run(['accounts', 'update', 'acme', '--allowed-topic', 'projects/acme-prod/topics/acme-*', '--allowed-topic', 'projects/acme-prod/topics/orders'])).toBe(0);
    expect(await h.run(['accounts', 'update', 'acme', '--no-allowed-topics'])).toBe(0);
    expect(h.sent.map((s) => [s.method, s.url.replace(URL0, ''), sentBody(s)])).toEqual([
      ['PATCH', '/admin/accounts/acme', { allowedTopics: ['projects/acme-prod/topics/acme-*', 'projects/acme-prod/topics/orders'] }],
      ['PATCH', '/admin/accounts/acme', { allowedTopics: null }],
    ]);
    expect(h.stdout()).toContain('allowed topics   projects/acme-prod/topics/acme-*\n');
  });

  test('delete; a 409 says to remove its destinations first', async () => {
    const h = harness(noContent);
    expect(await h.run(['accounts', 'delete', 'acme'])).toBe(0);
    expect([h.sent[0]!.method, h.sent[0]!.url]).toEqual(['DELETE', `${URL0}/admin/accounts/acme`]);
    expect(h.stderr()).toBe('deleted account acme with its keys and data; its id is never used again\n');
    const busy = harness(json({ error: 'account "acme" still has 2 destination(s): delete them first (GET /admin/accounts/acme/destinations)' }, 409));
    expect(await busy.run(['accounts', 'delete', 'acme'])).toBe(1);
    expect(busy.stderr()).toMatch(/\nhint: remove its destinations first; list them with: herald destinations list --account acme\n$/);
  });

  test('settings: GET shows, --failure-policy PATCHes', async () => {
    const h = harness((req) => Response.json(req.method === 'GET' ? {} : { 'notification.webhook.failure.policy': 'queue' }));
    expect(await h.run(['accounts', 'settings', 'acme'])).toBe(0);
    expect(await h.run(['accounts', 'settings', 'acme', '--failure-policy', 'QUEUE'])).toBe(0);
    expect(h.sent.map((s) => [s.method, s.url.replace(URL0, '')])).toEqual([
      ['GET', '/admin/accounts/acme/settings'],
      ['PATCH', '/admin/accounts/acme/settings'],
    ]);
    expect(sentBody(h.sent[1])).toEqual({ 'notification.webhook.failure.policy': 'queue' });
    expect(h.stdout()).toBe('notification.webhook.failure.policy  retry (the default: never set)\nnotification.webhook.failure.policy  queue\n');
  });

  test.each([
    [['accounts', 'create', ' ', '--id', 'Acme', '--email', 'nope'], ['  - --id: an account id is 1-63', '  - <name>: must not be empty', '  - --email: must be an email address']],
    [['accounts', 'update', 'acme'], ['  - arguments: nothing to change: give --name, --email <email>, --no-email, --allowed-topic <topic> or --no-allowed-topics']],
    [['accounts', 'update', 'acme', '--allowed-topic', 'projects/*/topics/x'], ['  - --allowed-topic.0: an allowed topic is a topic (projects/PROJECT/topics/TOPIC) or a prefix ending in *']],
    [['accounts', 'update', 'acme', '--allowed-topic', 'projects/acme-prod/topics/x1x', '--no-allowed-topics'], ['  - --no-allowed-topics: give --allowed-topic or --no-allowed-topics, not both']],
    [['accounts', 'update', 'acme', '--email', 'x'], ['  - --email: must be an email address']],
    [['accounts', 'delete', 'default'], ['  - <id>: the account "default" always exists and cannot be deleted']],
    [['accounts', 'settings', 'acme', '--failure-policy', 'drop'], ['  - --failure-policy: must be "retry" or "queue"']],
    [['accounts', 'show', 'ACME'], ['  - <id>: an account id is 1-63']],
  ])('%j: exit 2, each problem, nothing sent', async (argv, lines) => {
    const h = harness();
    expect(await h.run(argv)).toBe(2);
    for (const line of lines) expect(h.stderr()).toContain(line);
    expect(h.sent).toHaveLength(0);
  });
});

describe('herald keys', () => {
  const created = { id: '0123456789abcdef', account: 'acme', name: 'ci', scopes: ['read', 'write'], createdAt: '2026-01-01T00:00:00.000Z', createdBy: 'admin', key: KEY };

  test('create: the key alone on stdout, the "shown only this once" note on stderr', async () => {
    const h = harness(json(created, 201));
    expect(await h.run(['keys', 'create', 'acme', '--name', 'ci', '--scopes', 'read, write', '--expires-at', '2099-01-01T00:00:00Z'])).toBe(0);
    expect([h.sent[0]!.method, h.sent[0]!.url]).toEqual(['POST', `${URL0}/admin/accounts/acme/keys`]);
    expect(sentBody(h.sent[0])).toEqual({ name: 'ci', scopes: ['read', 'write'], expiresAt: '2099-01-01T00:00:00Z' });
    expect(h.stdout()).toBe(`${KEY}\n`);
    expect(h.stderr()).toBe(
      [
        'created key 0123456789abcdef ("ci") for account acme: scopes read, write; expires never',
        'this key is shown only this once: store it now, Herald keeps only its hash and cannot show it again',
        'use it with HERALD_API_KEY=<key> or --api-key <key>; revoke it with: herald keys revoke acme 0123456789abcdef',
        '',
      ].join('\n'),
    );
    const j = harness(json(created, 201));
    expect(await j.run(['keys', 'create', 'acme', '--name', 'ci', '--json'])).toBe(0);
    expect(sentBody(j.sent[0])).toEqual({ name: 'ci' });
    expect(JSON.parse(j.stdout())).toEqual(created);
    expect(j.stderr()).toContain('shown only this once');
  });

  test('create: every problem at once, nothing sent', async () => {
    const h = harness();
    expect(await h.run(['keys', 'create', 'Acme', '--scopes', 'read,admin', '--expires-at', '2001-01-01T00:00:00Z'])).toBe(2);
    expect(h.stderr()).toBe(
      [
        'herald: invalid arguments for herald keys create',
        '  - <account>: an account id is 1-63 lowercase letters, digits and hyphens, starting and ending with a letter or digit',
        '  - --name: is required: what the key is for, e.g. --name ci',
        '  - --scopes: "admin" is not a scope: they are read, write, publish, comma-separated',
        '  - --expires-at: must be in the future',
        'hint: run "herald keys create --help" for usage',
        '',
      ].join('\n'),
    );
    expect(await h.run(['keys', 'create', 'acme', '--name', 'ci', '--scopes', ',', '--expires-at', 'tomorrow'])).toBe(2);
    expect(h.stderr()).toContain('  - --scopes: give at least one scope (read, write, publish), or leave --scopes out for every scope you may grant\n');
    expect(h.stderr()).toContain('  - --expires-at: must be an ISO 8601 time with a zone, e.g. 2027-01-01T00:00:00Z\n');
    expect(h.sent).toHaveLength(0);
  });

  test('list: a table with each key\'s state, never a key', async () => {
    const keys = [
      { id: '0123456789abcdef', account: 'acme', name: 'ci', scopes: ['read', 'write'], createdAt: '2026-01-01T00:00:00.000Z', createdBy: 'admin' },
      { id: '1111111111111111', account: 'acme', name: 'old', scopes: ['publish'], createdAt: '2026-01-01T00:00:00.000Z', expiresAt: '2026-01-02T00:00:00.000Z', createdBy: 'key:0123456789abcdef' },
      { id: '2222222222222222', account: 'acme', name: 'gone', scopes: ['read'], createdAt: '2026-01-01T00:00:00.000Z', revokedAt: '2026-01-03T00:00:00.000Z', createdBy: 'admin' },
    ];
    const h = harness(json({ keys }));
    expect(await h.run(['keys', 'list', 'acme'])).toBe(0);
    expect(h.sent[0]!.url).toBe(`${URL0}/admin/accounts/acme/keys`);
    expect(h.stdout()).toBe(
      [
        'ID                NAME  SCOPES      STATE                             CREATED AT                EXPIRES AT                CREATED BY',
        '0123456789abcdef  ci    read,write  active                            2026-01-01T00:00:00.000Z  never                     admin',
        '1111111111111111  old   publish     expired                           2026-01-01T00:00:00.000Z  2026-01-02T00:00:00.000Z  key:0123456789abcdef',
        '2222222222222222  gone  read        revoked 2026-01-03T00:00:00.000Z  2026-01-01T00:00:00.000Z  never                     admin',
        '',
      ].join('\n'),
    );
    const none = harness(json({ keys: [] }));
    expect(await none.run(['keys', 'list', 'acme'])).toBe(0);
    expect(none.stderr()).toBe('account acme has no keys yet; create one with: herald keys create acme --name <name>\n');
  });

  test('revoke takes the key id or the whole key; a missing key says how to list them', async () => {
    const h = harness(noContent);
    expect(await h.run(['keys', 'revoke', 'acme', '0123456789abcdef'])).toBe(0);
    expect(await h.run(['keys', 'revoke', 'acme', KEY])).toBe(0);
    expect(h.sent.map((s) => `${s.method} ${s.url.replace(URL0, '')}`)).toEqual(['DELETE /admin/accounts/acme/keys/0123456789abcdef', 'DELETE /admin/accounts/acme/keys/0123456789abcdef']);
    expect(h.stderr()).toBe('revoked key 0123456789abcdef of account acme: Herald refuses it everywhere within 5 s\n'.repeat(2));
    const missing = harness(json({ error: 'no key "0123456789abcdef" in account "acme"; list them with GET /admin/accounts/acme/keys' }, 404));
    expect(await missing.run(['keys', 'revoke', 'acme', '0123456789abcdef'])).toBe(1);
    expect(missing.stderr()).toBe('herald: no key "0123456789abcdef" in account "acme"\nhint: see the keys there are with: herald keys list acme\n');
    const bad = harness();
    expect(await bad.run(['keys', 'revoke', 'acme', 'nope'])).toBe(2);
    expect(bad.stderr()).toContain('  - <key-id>: a key id is 16 hex digits, as herald keys list shows it (or give the whole hk_… key)\n');
  });
});
