import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inferContentType } from '../../apps/cli/commands/publish';
import { headerValue } from '../../apps/cli/client';
import { harness } from '../support/cli-harness';

/** The CLI in-process, no server: argument parsing and validation, and what it would send. */

const PUBLISH = ['publish', '--type', 'com.example.order.created', '--source', '/shop'];

describe('help and usage errors (exit 2, nothing sent)', () => {
  test('--help lists the commands and documents the exit codes and the connection', async () => {
    const h = harness();
    expect(await h.run(['--help'])).toBe(0);
    const help = h.stdout();
    expect(help).toMatch(/publish/);
    expect(help).toMatch(/destinations/);
    expect(help).toMatch(/Exit codes:[\s\S]*0 +success[\s\S]*1 +Herald answered[\s\S]*2 +usage error[\s\S]*3 +cannot connect/);
    expect(help).toMatch(/HERALD_URL/);
    expect(help).toMatch(/HERALD_ADMIN_TOKEN/);
    expect(help).toMatch(/HERALD_INGEST_TOKEN/);
  });

  test('a command group without a command shows its help and is a usage error', async () => {
    const h = harness();
    expect(await h.run(['destinations'])).toBe(2);
    expect(h.stderr()).toMatch(/add[\s\S]*list[\s\S]*show[\s\S]*remove/);
  });

  test('missing --type: exit 2 with a precise message and a hint', async () => {
    const h = harness();
    expect(await h.run(['publish', '--source', '/shop'])).toBe(2);
    expect(h.stderr()).toBe(
      [
        'herald: invalid arguments for herald publish',
        '  - --type: is required: the event type, e.g. --type com.example.order.created',
        'hint: run "herald publish --help" for usage',
        '',
      ].join('\n'),
    );
    expect(h.sent).toHaveLength(0);
  });

  test('every bad option is listed at once', async () => {
    const h = harness();
    const code = await h.run(['publish', '--type', '', '--time', 'yesterday', '--content-type', 'json', '--ext', 'Tenant=acme']);
    expect(code).toBe(2);
    const lines = h.stderr().split('\n');
    expect(lines).toEqual(
      expect.arrayContaining([
        '  - --type: must not be empty: the event type, e.g. --type com.example.order.created',
        expect.stringMatching(/^ {2}- --source: is required/),
        '  - --time: must be an RFC 3339 timestamp such as 2026-01-02T03:04:05Z',
        '  - --content-type: must be a media type such as application/json or text/plain',
        expect.stringMatching(/^ {2}- --ext: "Tenant=acme": an extension name is 1 to 20 lowercase letters or digits/),
      ]),
    );
    expect(h.sent).toHaveLength(0);
  });

  test('--data and --data-file together', async () => {
    const h = harness();
    expect(await h.run([...PUBLISH, '--data', '{}', '--data-file', 'x.json'])).toBe(2);
    expect(h.stderr()).toMatch(/--data: give --data or --data-file, not both/);
  });

  test.each([
    [['--ext', 'tenant'], '"tenant": write it as key=value'],
    [['--ext', 'type=x'], '"type=x": type is not an extension attribute; use --type'],
    [['--ext', 'time=x'], '"time=x": time is not an extension attribute; use --time'],
    [['--ext', 'datacontenttype=x'], 'use --content-type'],
    [['--ext', 'specversion=2'], 'it is always 1.0'],
    [['--ext', 'a=1', '--ext', 'a=2'], '"a=2": a is given twice'],
    [['--ext', 'waytoolongforanextension=1'], 'an extension name is 1 to 20 lowercase letters or digits'],
    [['--ext', 'has-dash=1'], 'an extension name is 1 to 20 lowercase letters or digits'],
  ])('--ext %j is refused', async (ext, message) => {
    const h = harness();
    expect(await h.run([...PUBLISH, ...ext])).toBe(2);
    expect(h.stderr()).toMatch(/^herald: invalid arguments for herald publish\n {2}- --ext: "/);
    expect(h.stderr()).toContain(message);
  });

  test("Herald's own attribute rules are checked before sending", async () => {
    const h = harness();
    expect(await h.run(['publish', '--type', 't', '--source', '/my shop', '--ext', `tenant=${'x'.repeat(1100)}`])).toBe(2);
    expect(h.stderr()).toContain('  - --source: must be a URI-reference (no whitespace)');
    expect(h.stderr()).toContain('  - --ext tenant: longer than 1024 bytes');
    expect(h.sent).toHaveLength(0);
  });

  test('an unknown option names itself and suggests the right one', async () => {
    const h = harness();
    expect(await h.run(['publish', '--typo', 'x'])).toBe(2);
    expect(h.stderr()).toMatch(/^herald: unknown option '--typo'/);
    expect(h.stderr()).toMatch(/--type/);
    expect(h.stderr()).toMatch(/hint: run "herald publish --help" for usage/);
  });

  test('an unknown command', async () => {
    const h = harness();
    expect(await h.run(['frobnicate'])).toBe(2);
    expect(h.stderr()).toMatch(/^herald: unknown command 'frobnicate'/);
  });

  test('a missing argument', async () => {
    const h = harness();
    expect(await h.run(['destinations', 'show'])).toBe(2);
    expect(h.stderr()).toMatch(/^herald: missing required argument 'id'/);
    expect(h.stderr()).toMatch(/hint: run "herald destinations show --help"/);
  });

  test('no ingest token: exit 2 and where to get one', async () => {
    const h = harness();
    expect(await h.run(PUBLISH, { env: {} })).toBe(2);
    expect(h.stderr()).toBe('herald: no ingest token or account key\nhint: pass --ingest-token or set HERALD_INGEST_TOKEN (npm start prints it), or use an account key: --api-key or HERALD_API_KEY\n');
    expect(h.sent).toHaveLength(0);
  });

  test('no admin token', async () => {
    const h = harness();
    expect(await h.run(['destinations', 'list'], { env: { HERALD_INGEST_TOKEN: 'x' } })).toBe(2);
    expect(h.stderr()).toMatch(/^herald: no admin token or account key\nhint: pass --admin-token or set HERALD_ADMIN_TOKEN/);
  });

  test('a bad Herald URL, from the flag or from HERALD_URL', async () => {
    const h = harness();
    expect(await h.run(['--url', 'localhost:8080', 'destinations', 'list'])).toBe(2);
    expect(h.stderr()).toContain('  - --url: must be an http(s) URL such as http://127.0.0.1:8080');
    const h2 = harness();
    expect(await h2.run(['destinations', 'list'], { env: { HERALD_ADMIN_TOKEN: 't', HERALD_URL: 'nope' } })).toBe(2);
    expect(h2.stderr()).toContain('  - HERALD_URL: must be an http(s) URL');
  });

  test('destinations add: the id and every spec problem, with flag names', async () => {
    const h = harness();
    const code = await h.run(['destinations', 'add', 'Bad_Id', '--url', 'not a url', '--policy', 'nope', '--failure-mode', 'never', '--event-types', 'a*b', '--technical-email', 'x']);
    expect(code).toBe(2);
    const err = h.stderr();
    expect(err).toMatch(/^herald: invalid arguments for herald destinations add\n/);
    expect(err).toContain('  - <id>: a destination id is 1-63 lowercase letters, digits and hyphens');
    expect(err).toContain('  - --url: must be an absolute URL');
    expect(err).toContain('  - --policy: must be one of event-platform, eventarc');
    expect(err).toContain('  - --failure-mode: must be "retry" or "queue"');
    expect(err).toContain('  - --event-types: a wildcard * may only end an event type');
    expect(err).toContain('  - --technical-email: must be an email address');
    expect(h.sent).toHaveLength(0);
  });

  test('destinations add needs exactly one of --url and --topic', async () => {
    const h = harness();
    expect(await h.run(['destinations', 'add', 'hook'])).toBe(2);
    expect(h.stderr()).toContain('  - --url: give exactly one of url or topic');
  });

  test('destinations show/remove check the id before sending', async () => {
    const h = harness();
    expect(await h.run(['destinations', 'show', 'NO'])).toBe(2);
    expect(await h.run(['destinations', 'remove', '-bad-'])).toBe(2);
    expect(h.sent).toHaveLength(0);
  });
});

describe('what publish sends (binary mode)', () => {
  test('ce-* headers, bearer token, JSON data and its content type; prints the accepted id', async () => {
    const h = harness((req) => Response.json({ accepted: [req.headers['ce-id']] }, { status: 202 }));
    const code = await h.run([
      ...PUBLISH,
      '--id', 'evt-1',
      '--subject', 'order 42',
      '--time', '2026-01-02T03:04:05Z',
      '--data', '{"orderId":42}',
      '--ext', 'tenant=acme',
      '--ext', 'traceparent=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      '--ext', 'note=a=b',
    ]);
    expect(h.stderr()).toBe('');
    expect(code).toBe(0);
    expect(h.stdout()).toBe('evt-1\n');
    const [req] = h.sent;
    expect(req!.url).toBe('http://127.0.0.1:8080/ingest');
    expect(req!.method).toBe('POST');
    expect(req!.headers).toMatchObject({
      authorization: 'Bearer ingest-token',
      'ce-specversion': '1.0',
      'ce-id': 'evt-1',
      'ce-source': '/shop',
      'ce-type': 'com.example.order.created',
      'ce-subject': 'order%2042',
      'ce-time': '2026-01-02T03:04:05Z',
      'ce-tenant': 'acme',
      'ce-traceparent': '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      'ce-note': 'a=b',
      'content-type': 'application/json',
    });
    expect(req!.body!.toString()).toBe('{"orderId":42}');
  });

  test('defaults: a random UUID id, text/plain for text, no time', async () => {
    const h = harness();
    expect(await h.run([...PUBLISH, '--data', 'hello there'])).toBe(0);
    const headers = h.sent[0]!.headers;
    expect(headers['ce-id']).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(headers['content-type']).toBe('text/plain');
    expect(headers['ce-time']).toBeUndefined();
  });

  test('no data: no body and no content type', async () => {
    const h = harness();
    expect(await h.run(PUBLISH)).toBe(0);
    expect(h.sent[0]!.body).toBeUndefined();
    expect(h.sent[0]!.headers['content-type']).toBeUndefined();
  });

  test('--content-type wins over the guess', async () => {
    const h = harness();
    expect(await h.run([...PUBLISH, '--data', '{"a":1}', '--content-type', 'application/vnd.acme+json'])).toBe(0);
    expect(h.sent[0]!.headers['content-type']).toBe('application/vnd.acme+json');
  });

  test('--data - and --data-file - read stdin', async () => {
    const h = harness();
    expect(await h.run([...PUBLISH, '--data', '-'], { stdin: '[1,2,3]' })).toBe(0);
    expect(await h.run([...PUBLISH, '--data-file', '-'], { stdin: 'plain words' })).toBe(0);
    expect(h.sent[0]!.body!.toString()).toBe('[1,2,3]');
    expect(h.sent[0]!.headers['content-type']).toBe('application/json');
    expect(h.sent[1]!.body!.toString()).toBe('plain words');
    expect(h.sent[1]!.headers['content-type']).toBe('text/plain');
  });

  test('--data-file sends the exact bytes; a missing file is a usage error', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'herald-cli-'));
    const file = join(dir, 'blob.bin');
    writeFileSync(file, Buffer.from([0, 1, 2, 255]));
    const h = harness();
    expect(await h.run([...PUBLISH, '--data-file', file])).toBe(0);
    expect([...h.sent[0]!.body!]).toEqual([0, 1, 2, 255]);
    expect(h.sent[0]!.headers['content-type']).toBe('application/octet-stream');
    const h2 = harness();
    expect(await h2.run([...PUBLISH, '--data-file', join(dir, 'missing.json')])).toBe(2);
    expect(h2.stderr()).toMatch(/^herald: cannot read --data-file .*missing\.json: no such file/);
  });

  test('connection: flag after the command, flag before it, env, default', async () => {
    const h = harness();
    await h.run([...PUBLISH, '--url', 'http://a.test:1/', '--ingest-token', 'flag-token']);
    await h.run(['--url', 'http://b.test:2', '--ingest-token', 'root-token', ...PUBLISH]);
    await h.run(PUBLISH, { env: { HERALD_URL: 'https://c.test', HERALD_INGEST_TOKEN: 'env-token' } });
    expect(h.sent.map((s) => [s.url, s.headers.authorization])).toEqual([
      ['http://a.test:1/ingest', 'Bearer flag-token'],
      ['http://b.test:2/ingest', 'Bearer root-token'],
      ['https://c.test/ingest', 'Bearer env-token'],
    ]);
  });

  test('inferContentType and header encoding', () => {
    expect(inferContentType(Buffer.from('42'))).toBe('application/json');
    expect(inferContentType(Buffer.from('"text"'))).toBe('application/json');
    expect(inferContentType(Buffer.from('text'))).toBe('text/plain');
    expect(inferContentType(Buffer.from([0xff, 0xfe]))).toBe('application/octet-stream');
    expect(headerValue('a b"c%d/é')).toBe('a%20b%22c%25d/%C3%A9');
  });
});

describe('answers from Herald', () => {
  test('an API error: exit 1, the message, each issue', async () => {
    const h = harness(() =>
      Response.json({ error: 'invalid CloudEvent: 1 problem(s)', issues: [{ path: 'ce-source', message: 'source must be a URI-reference' }] }, { status: 400 }),
    );
    expect(await h.run(PUBLISH)).toBe(1);
    expect(h.stderr()).toBe('herald: invalid CloudEvent: 1 problem(s)\n  - ce-source: source must be a URI-reference\n');
  });

  test('401 points at the token', async () => {
    const h = harness(() => Response.json({ error: 'missing or invalid bearer token: send Authorization: Bearer <admin token>' }, { status: 401 }));
    expect(await h.run(['destinations', 'list'])).toBe(1);
    expect(h.stderr()).toMatch(/hint: check HERALD_ADMIN_TOKEN — npm start prints it\n$/);
  });

  test('a 404 destination names it and says how to list them', async () => {
    const h = harness(() => Response.json({ error: 'no destination "gone"; list them with GET /admin/destinations' }, { status: 404 }));
    expect(await h.run(['destinations', 'show', 'gone'])).toBe(1);
    expect(h.stderr()).toBe('herald: no destination "gone"\nhint: see the destinations there are with: herald destinations list\n');
  });

  test('something that is not Herald', async () => {
    const h = harness(() => new Response('<html>nope</html>', { status: 404, headers: { 'content-type': 'text/html' } }));
    expect(await h.run(['destinations', 'list'])).toBe(1);
    expect(h.stderr()).toMatch(/not a Herald answer\nhint: is http:\/\/127\.0\.0\.1:8080 Herald's URL\?/);
  });

  test('cannot connect: exit 3 and how to start Herald', async () => {
    const h = harness(() => {
      throw Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } });
    });
    expect(await h.run(['destinations', 'list'])).toBe(3);
    expect(h.stderr()).toBe('herald: cannot connect to http://127.0.0.1:8080 (ECONNREFUSED)\nhint: is Herald running? start it with npm start, or set HERALD_URL\n');
  });

  test('destinations list prints a table, or JSON with --json', async () => {
    const destinations = [
      { id: 'users', url: 'https://u.example/hook', eventTypes: [], policy: 'eventarc', failureMode: 'queue', status: 'suspended', createdAt: 't', updatedAt: 't' },
      { id: 'orders', url: 'https://o.example/hook', eventTypes: ['com.example.order.*'], policy: 'event-platform', failureMode: 'retry', status: 'active', createdAt: 't', updatedAt: 't' },
    ];
    const h = harness(() => Response.json({ destinations }));
    expect(await h.run(['destinations', 'list'])).toBe(0);
    expect(h.stdout()).toBe(
      [
        'ID      STATUS     POLICY          ON FAILURE  EVENT TYPES          TARGET',
        'orders  active     event-platform  retry       com.example.order.*  https://o.example/hook',
        'users   suspended  eventarc        queue       (all)                https://u.example/hook',
        '',
      ].join('\n'),
    );
    const h2 = harness(() => Response.json({ destinations }));
    expect(await h2.run(['destinations', 'list', '--json'])).toBe(0);
    expect(JSON.parse(h2.stdout())).toEqual(destinations);
  });

  test('destinations add sends the spec and shows the secret once', async () => {
    const h = harness((req) => Response.json({ id: 'orders', ...JSON.parse(req.body!.toString()), secret: 'whsec_abc' }, { status: 201 }));
    const code = await h.run(['destinations', 'add', 'orders', '--url', 'https://o.example/hook', '--event-types', 'a.b, c.*', '--policy', 'eventarc', '--failure-mode', 'queue']);
    expect(code).toBe(0);
    const req = h.sent[0]!;
    expect([req.method, req.url]).toEqual(['PUT', 'http://127.0.0.1:8080/admin/destinations/orders']);
    expect(JSON.parse(req.body!.toString())).toEqual({ url: 'https://o.example/hook', eventTypes: ['a.b', 'c.*'], policy: 'eventarc', failureMode: 'queue' });
    expect(JSON.parse(h.stdout()).secret).toBe('whsec_abc');
    expect(h.stderr()).toBe('created destination orders\nstore this secret: it is shown once\n');
  });

  test('destinations add --rate-min/--rate-max/--lane become the spec\'s rate bounds and lane; a rate that is no number is refused by flag', async () => {
    const h = harness((req) => Response.json({ id: 'partner', ...JSON.parse(req.body!.toString()) }, { status: 201 }));
    expect(await h.run(['destinations', 'add', 'partner', '--url', 'https://p.example/hook', '--rate-max', '20', '--rate-min', '2.5', '--lane', 'dedicated'])).toBe(0);
    expect(JSON.parse(h.sent[0]!.body!.toString())).toEqual({ url: 'https://p.example/hook', rate: { min: 2.5, max: 20 }, lane: 'dedicated' });
    const only = harness((req) => Response.json({ id: 'partner', ...JSON.parse(req.body!.toString()) }, { status: 201 }));
    expect(await only.run(['destinations', 'add', 'partner', '--url', 'https://p.example/hook', '--rate-max', '20'])).toBe(0);
    expect(JSON.parse(only.sent[0]!.body!.toString())).toEqual({ url: 'https://p.example/hook', rate: { max: 20 } });
    const bad = harness();
    expect(await bad.run(['destinations', 'add', 'partner', '--url', 'https://p.example/hook', '--rate-max', 'fast'])).toBe(2);
    expect(bad.stderr()).toContain('--rate-max: must be a number of events per second');
    expect(bad.sent).toEqual([]);
  });

  test('destinations add on an existing id says which settings the replaced spec had that this one left out', async () => {
    const h = harness(() => Response.json({ id: 'orders', url: 'https://o.example/v2', reset: [{ setting: 'rate', was: { max: 20 } }, { setting: 'batch', was: { maxEvents: 100, maxWaitMs: 1000 } }] }, { status: 200 }));
    expect(await h.run(['destinations', 'add', 'orders', '--url', 'https://o.example/v2'])).toBe(0);
    expect(h.stderr()).toBe('updated destination orders\nback to the default, not given this time: rate (was {"max":20}); batch (was {"maxEvents":100,"maxWaitMs":1000}) — add the id again with those flags to keep them\n');
  });

  test('destinations add on an existing id updates it; no secret, no note', async () => {
    const h = harness(() => Response.json({ id: 'orders', url: 'https://o.example/v2' }, { status: 200 }));
    expect(await h.run(['destinations', 'add', 'orders', '--url', 'https://o.example/v2'])).toBe(0);
    expect(JSON.parse(h.stdout())).not.toHaveProperty('secret');
    expect(h.stderr()).toBe('updated destination orders\n');
  });
});
