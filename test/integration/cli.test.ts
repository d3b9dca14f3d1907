import { encodeLogCursor } from '../../shared/domain/stats/delivery-log';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { Webhook } from 'standardwebhooks';
import { suspendDestination } from '../../shared/app/delivery/suspend-and-reactivate';
import { run } from '../../apps/cli/main';
import { DeliveryRecord, deliveryId } from '../../shared/domain/retry/delivery';
import { eventKey } from '../../shared/domain/events/event';
import { suspensionDeps } from '../../shared/runtime/delivery-deps';
import { Receiver } from '../support/receiver';
import { startTestStack, TestStack } from '../support/stack';

/** The herald CLI against a real local stack and a real receiver, in-process via run(). */

let stack: TestStack;
const receiver = new Receiver();

beforeAll(async () => {
  await receiver.start();
  stack = await startTestStack(`cli-test-${Date.now().toString(36)}`);
});

afterAll(async () => {
  await stack?.stop({ purge: true });
  await receiver.stop();
});

function env(overrides: Record<string, string> = {}): Record<string, string> {
  return { HERALD_URL: stack.url, HERALD_ADMIN_TOKEN: stack.config.adminToken, HERALD_INGEST_TOKEN: stack.config.ingestToken, ...overrides };
}

async function herald(argv: string[], options: { env?: Record<string, string>; stdin?: string } = {}) {
  let stdout = '';
  let stderr = '';
  const code = await run(argv, {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    env: options.env ?? env(),
    ...(options.stdin !== undefined ? { stdin: Readable.from([Buffer.from(options.stdin)]) } : {}),
  });
  return { code, stdout, stderr };
}

/** Runs bin/herald.cjs as a real child process. */
function spawnHerald(argv: string[], childEnv: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(__dirname, '..', '..', 'bin', 'herald.cjs'), ...argv], {
      env: { PATH: process.env.PATH ?? '', ...childEnv },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => {
      child.kill();
      reject(new Error(`herald ${argv.join(' ')} did not exit within 30s; stderr: ${stderr}`));
    }, 30_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('herald CLI against a running Herald', () => {
  let secret = '';

  test('destinations add creates a destination and prints its secret once', async () => {
    const r = await herald(['destinations', 'add', 'cli-hook', '--url', `${receiver.url}/cli-hook`, '--event-types', 'com.example.cli.*', '--technical-email', 'ops@example.com']);
    expect(r.stderr).toBe('created destination cli-hook\nstore this secret: it is shown once\n');
    expect(r.code).toBe(0);
    const created = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(created).toMatchObject({ id: 'cli-hook', url: `${receiver.url}/cli-hook`, eventTypes: ['com.example.cli.*'], status: 'active', technicalEmail: 'ops@example.com' });
    expect(created.secret).toMatch(/^whsec_/);
    secret = created.secret as string;
  });

  test('destinations list shows it as a table and as JSON', async () => {
    const table = await herald(['destinations', 'list']);
    expect(table.code).toBe(0);
    const [header, row] = table.stdout.trimEnd().split('\n');
    expect(header).toMatch(/^ID\s+STATUS\s+POLICY\s+ON FAILURE\s+EVENT TYPES\s+TARGET$/);
    // No failureMode of its own: its account's policy decides (seed 003).
    expect(row!.split(/\s+/)).toEqual(['cli-hook', 'active', 'event-platform', 'account', 'com.example.cli.*', `${receiver.url}/cli-hook`]);
    const json = await herald(['destinations', 'list', '--json']);
    expect(json.code).toBe(0);
    const list = JSON.parse(json.stdout) as Record<string, unknown>[];
    expect(list.map((d) => d.id)).toEqual(['cli-hook']);
    expect(list[0]).not.toHaveProperty('secret');
  });

  test('destinations show prints it as JSON, without the secret', async () => {
    const r = await herald(['destinations', 'show', 'cli-hook']);
    expect(r.code).toBe(0);
    const shown = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(shown).toMatchObject({ id: 'cli-hook', account: 'default', policy: 'event-platform' });
    expect(shown).not.toHaveProperty('failureMode');
    expect(shown).not.toHaveProperty('secret');
  });

  test('publish sends an event that reaches the receiver, signed with the printed secret', async () => {
    const r = await herald(['publish', '--type', 'com.example.cli.hello', '--source', '/cli', '--id', 'cli-evt-1', '--subject', 'greeting one', '--ext', 'tenant=acme', '--data', '{"hi": 1}']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('cli-evt-1\n');
    await receiver.waitFor(1, '/cli-hook');
    const req = receiver.on('/cli-hook')[0]!;
    new Webhook(secret).verify(req.body, req.headers as Record<string, string>);
    expect(req.headers).toMatchObject({
      'ce-id': 'cli-evt-1',
      'ce-type': 'com.example.cli.hello',
      'ce-source': '/cli',
      'ce-subject': 'greeting%20one',
      'ce-tenant': 'acme',
      'content-type': 'application/json',
    });
    expect(req.body.toString()).toBe('{"hi": 1}');
  });

  test('publish reads data from stdin and generates an id', async () => {
    const r = await herald(['publish', '--type', 'com.example.cli.note', '--source', '/cli', '--data', '-'], { stdin: 'plain text from stdin' });
    expect(r.code).toBe(0);
    const id = r.stdout.trim();
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    await receiver.waitFor(2, '/cli-hook');
    const req = receiver.on('/cli-hook').find((q) => q.headers['ce-id'] === id)!;
    expect(req.body.toString()).toBe('plain text from stdin');
    expect(req.headers['content-type']).toBe('text/plain');
  });

  test('publish: what only Herald can refuse (an event over its size limit) is exit 1 with its issues', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'herald-cli-'));
    const file = join(dir, 'big.json');
    writeFileSync(file, JSON.stringify({ blob: 'x'.repeat(300 * 1024) }));
    const r = await herald(['publish', '--type', 'com.example.cli.big', '--source', '/cli', '--id', 'big-1', '--data-file', file]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^herald: event over the \d+-byte limit/);
    expect(r.stderr).toMatch(/\n {2}- body: event is \d+ bytes; the limit is \d+\n/);
    expect(r.stderr).toMatch(/\nhint: send less data/);
  });

  test('publish: a sure refusal is caught before sending (exit 2)', async () => {
    const r = await herald(['publish', '--type', 'com.example.cli.x', '--source', '/my shop']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('  - --source: must be a URI-reference (no whitespace)');
  });

  test('destinations add: a spec Herald refuses is exit 2 with its issues, before sending', async () => {
    const r = await herald(['destinations', 'add', 'cli-topic', '--topic', 'projects/cli-test/topics/google-things']);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('herald: invalid arguments for herald destinations add\n  - --topic: a topic name may not start with "goog" (Pub/Sub reserves it)\nhint: run "herald destinations add --help" for usage\n');
  });

  test('destinations add --batch-*: Herald stores the batch, list and show say so, and adding it again without the flags turns it off', async () => {
    const added = await herald(['destinations', 'add', 'cli-bulk', '--url', `${receiver.url}/cli-bulk`, '--event-types', 'com.example.never', '--batch-max-events', '100', '--batch-max-wait-ms', '2000']);
    expect(added.code).toBe(0);
    expect((JSON.parse(added.stdout) as { batch?: unknown }).batch).toEqual({ maxEvents: 100, maxWaitMs: 2000 });
    expect((await stack.admin('GET', '/destinations/cli-bulk')).body).toMatchObject({ batch: { maxEvents: 100, maxWaitMs: 2000 } });
    const list = await herald(['destinations', 'list']);
    expect(list.stdout).toMatch(/^ID\s+STATUS\s+POLICY\s+ON FAILURE\s+EVENT TYPES\s+BATCH\s+TARGET\n/);
    expect(list.stdout).toMatch(/\ncli-bulk\s+active\s+.*\s+100 events \/ 2000 ms\s+http/);
    const shown = await herald(['destinations', 'show', 'cli-bulk']);
    expect(shown.stderr).toContain('  sends batches of up to 100 events and 1048576 bytes (the default), each sent at the latest 2000 ms after its oldest event was accepted\n');

    const bytes = await herald(['destinations', 'add', 'cli-bulk', '--url', `${receiver.url}/cli-bulk`, '--batch-max-events', '100', '--batch-max-wait-ms', '2000', '--batch-max-bytes', '4096']);
    expect(bytes.code).toBe(0);
    expect((await stack.admin('GET', '/destinations/cli-bulk')).body).toMatchObject({ batch: { maxEvents: 100, maxWaitMs: 2000, maxBytes: 4096 } });
    const off = await herald(['destinations', 'add', 'cli-bulk', '--url', `${receiver.url}/cli-bulk`]);
    expect(off.code).toBe(0);
    expect((await stack.admin('GET', '/destinations/cli-bulk')).body).not.toHaveProperty('batch');
    // The CLI refuses what the API would, in the API's words less the field's name.
    const api = await stack.admin('PUT', '/destinations/cli-bulk', { url: `${receiver.url}/cli-bulk`, batch: { maxEvents: 1, maxWaitMs: 2000 } });
    expect(api).toEqual({ status: 400, body: expect.objectContaining({ issues: [{ path: 'batch.maxEvents', message: 'batch.maxEvents must be 2–1000' }] }) });
    const refused = await herald(['destinations', 'add', 'cli-bulk', '--url', `${receiver.url}/cli-bulk`, '--batch-max-events', '1', '--batch-max-wait-ms', '2000']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('  - --batch-max-events: must be 2–1000\n');
    expect((await herald(['destinations', 'remove', 'cli-bulk'])).code).toBe(0);
  });

  test('destinations remove deletes it; show is then exit 1 with a 404 message', async () => {
    const removed = await herald(['destinations', 'remove', 'cli-hook']);
    expect(removed).toEqual({ code: 0, stdout: '', stderr: 'removed destination cli-hook\n' });
    const shown = await herald(['destinations', 'show', 'cli-hook']);
    expect(shown.code).toBe(1);
    expect(shown.stdout).toBe('');
    expect(shown.stderr).toBe('herald: no destination "cli-hook"\nhint: see the destinations there are with: herald destinations list\n');
    const again = await herald(['destinations', 'remove', 'cli-hook']);
    expect(again.code).toBe(1);
  });

  test('a wrong admin token: exit 1 and the hint', async () => {
    const r = await herald(['destinations', 'list'], { env: env({ HERALD_ADMIN_TOKEN: 'not-the-admin-token' }) });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^herald: missing or invalid bearer token/);
    expect(r.stderr).toMatch(/\nhint: check HERALD_ADMIN_TOKEN — npm start prints it\n$/);
  });

  test('a wrong ingest token: exit 1 and the hint', async () => {
    const r = await herald(['publish', '--type', 'com.example.cli.x', '--source', '/cli', '--ingest-token', 'not-the-ingest-token']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/\nhint: check HERALD_INGEST_TOKEN — npm start prints it\n$/);
  });

  test('an unreachable Herald (a closed port): exit 3 and how to start it', async () => {
    const server = http.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const r = await herald(['destinations', 'list'], { env: env({ HERALD_URL: `http://127.0.0.1:${port}` }) });
    expect(r.code).toBe(3);
    expect(r.stderr).toBe(`herald: cannot connect to http://127.0.0.1:${port} (ECONNREFUSED)\nhint: is Herald running? start it with npm start, or set HERALD_URL\n`);
    const viaFlag = await herald(['--url', `http://127.0.0.1:${port}`, 'publish', '--type', 'com.example.cli.x', '--source', '/cli']);
    expect(viaFlag.code).toBe(3);
  });
});

describe('herald deliveries against a running Herald (records seeded in its store)', () => {
  const dest = 'cli-deliveries';
  const seeded: DeliveryRecord[] = (['DEAD', 'DELIVERED', 'DEAD'] as const).map((status, i) => ({
    id: `${dest}.key${i + 1}`,
    destinationId: dest,
    eventId: `seed-${i + 1}`,
    eventSource: '/cli',
    eventType: 'com.example.seeded',
    status,
    attempts: status === 'DEAD' ? 4 : 1,
    availableAt: '2025-01-01T00:00:00.000Z',
    // The log is newest published first: key1 the newest.
    publishedAt: `2024-12-31T23:59:5${9 - i}.000Z`,
    ...(status === 'DEAD'
      ? {
          lastError: { at: '2025-01-01T00:35:00.000Z', status: 500, error: 'HTTP 500' },
          event: { attributes: { specversion: '1.0' as const, id: `seed-${i + 1}`, source: '/cli', type: 'com.example.seeded' }, data: Buffer.from('secret bytes') },
        }
      : {}),
  }));

  beforeAll(async () => {
    // Nothing routes to it (no event has this type) and nothing seeded is due, so the pump leaves them be.
    const added = await herald(['destinations', 'add', dest, '--url', `${receiver.url}/${dest}`, '--event-types', 'com.example.never']);
    expect(added.code).toBe(0);
    for (const r of seeded) await stack.runtime.deliveries.put(r);
  });

  test('list: a page as a table and the --cursor of the next one; --all --json reaches the end', async () => {
    const first = await herald(['deliveries', 'list', dest, '--limit', '2']);
    expect(first.code).toBe(0);
    const [header, ...rows] = first.stdout.trimEnd().split('\n');
    expect(header).toMatch(/^DELIVERY ID\s+EVENT ID\s+TYPE\s+STATUS\s+ATTEMPTS\s+LAST ERROR\s+AVAILABLE AT$/);
    expect(rows.map((r) => r.split(/\s{2,}/))).toEqual([
      [`${dest}.key1`, 'seed-1', 'com.example.seeded', 'DEAD', '4', 'HTTP 500', '2025-01-01T00:00:00.000Z'],
      [`${dest}.key2`, 'seed-2', 'com.example.seeded', 'DELIVERED', '1', '-', '2025-01-01T00:00:00.000Z'],
    ]);
    expect(first.stderr).toBe(`more deliveries: herald deliveries list ${dest} --limit 2 --cursor ${encodeLogCursor({ publishedAt: seeded[1]!.publishedAt!, id: `${dest}.key2` })}   (or --all for every page)\n`);
    const all = await herald(['deliveries', 'list', dest, '--all', '--limit', '2', '--json']);
    expect(all.code).toBe(0);
    const page = JSON.parse(all.stdout) as { deliveries: Record<string, unknown>[] };
    expect(page.deliveries.map((d) => d.id)).toEqual(seeded.map((r) => r.id));
    expect(all.stdout).not.toContain('event"');
    const dead = await herald(['deliveries', 'list', dest, '--status', 'dead', '--json']);
    expect((JSON.parse(dead.stdout) as { deliveries: { id: string }[] }).deliveries.map((d) => d.id)).toEqual([`${dest}.key1`, `${dest}.key3`]);
  });

  test('show: one delivery as JSON without its event; a missing one is exit 1', async () => {
    const shown = await herald(['deliveries', 'show', `${dest}.key3`]);
    expect(shown.code).toBe(0);
    const { event: _event, ...view } = seeded[2]!;
    expect(JSON.parse(shown.stdout)).toEqual({ ...view, account: 'default' });
    const missing = await herald(['deliveries', 'show', `${dest}.nope`]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe(`herald: no delivery "${dest}.nope"\nhint: see the deliveries there are with: herald deliveries list ${dest}\n`);
  });

  test('the admin API: the query string reaches the route; bad values are a 400 naming each', async () => {
    const bad = await stack.admin('GET', `/destinations/${dest}/deliveries?status=lost&limit=0`);
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({
      error: 'invalid deliveries query',
      issues: [
        { path: 'status', message: 'status must be one of PENDING, IN_FLIGHT, DELIVERED, DEAD, QUEUED (any case)' },
        { path: 'limit', message: 'limit must be a whole number from 1 to 500 (default 50)' },
      ],
    });
    const ok = await stack.admin('GET', `/destinations/${dest}/deliveries?status=delivered`);
    expect(ok).toEqual({ status: 200, body: { deliveries: [expect.objectContaining({ id: `${dest}.key2`, status: 'DELIVERED' })] } });
    expect((await stack.admin('GET', '/destinations/no-such-dest/deliveries')).status).toBe(404);
    expect((await stack.admin('GET', `/deliveries/${dest}.nope`)).status).toBe(404);
  });

  afterAll(async () => {
    await herald(['destinations', 'remove', dest]);
  });
});

describe('herald destinations reactivate / redeliver against a running Herald', () => {
  const dest = 'cli-suspend';
  const path = `/${dest}`;

  beforeAll(async () => {
    // Nothing is published to its type here: the only deliveries are the ones seeded below.
    const added = await herald(['destinations', 'add', dest, '--url', `${receiver.url}${path}`, '--event-types', 'com.example.cli.queued', '--technical-email', 'ops@example.com']);
    expect(added.code).toBe(0);
  });

  afterAll(async () => {
    await herald(['destinations', 'remove', dest]);
  });

  test('redeliver on an active destination with nothing queued: exit 0 and 0 sent again', async () => {
    const r = await herald(['destinations', 'redeliver', dest]);
    expect(r).toEqual({ code: 0, stdout: `${dest}: 0 queued deliveries sent again\n`, stderr: '' });
    const dead = await herald(['destinations', 'redeliver', dest, '--dead', '--json']);
    expect(dead.code).toBe(0);
    expect(JSON.parse(dead.stdout)).toEqual({ redelivered: 0, status: 'DEAD' });
  });

  test('reactivate on an active destination: exit 1 with the 409 message', async () => {
    const r = await herald(['destinations', 'reactivate', dest]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      `herald: destination "${dest}" is not suspended; to send its queued events again use POST /admin/destinations/${dest}/redeliver\n` +
        `hint: to send its queued deliveries again: herald destinations redeliver ${dest}\n`,
    );
  });

  test('show: an active destination has its status and its hour', async () => {
    const r = await herald(['destinations', 'show', dest]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ id: dest, status: 'active', stats: { attempts1h: 0, lastErrors: [] } });
    expect(r.stderr).toBe(`${dest}: active\n  last hour: 0 attempts\n`);
  });

  test('suspended: show says so, redeliver is refused; reactivate sends the queued event to the receiver', async () => {
    const attributes = { specversion: '1.0' as const, id: 'cli-queued-1', source: '/cli', type: 'com.example.cli.queued' };
    const id = deliveryId(dest, eventKey(attributes));
    await stack.runtime.deliveries.put({
      id,
      destinationId: dest,
      eventId: attributes.id,
      eventSource: attributes.source,
      eventType: attributes.type,
      status: 'QUEUED',
      attempts: 1,
      availableAt: new Date().toISOString(),
      lastError: { at: new Date().toISOString(), status: 404, error: 'HTTP 404' },
      event: { attributes, data: Buffer.from('{"queued":true}') },
    });
    const suspended = await suspendDestination(suspensionDeps(stack.runtime), dest, { cause: 'criteria', reason: 'HTTP 404 suspends the destination at once under event-platform' });
    expect(suspended?.status).toBe('suspended');

    const shown = await herald(['destinations', 'show', dest]);
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({
      status: 'suspended',
      suspension: { cause: 'criteria', reason: 'HTTP 404 suspends the destination at once under event-platform', notification: { to: 'ops@example.com' } },
    });
    expect(shown.stderr).toMatch(new RegExp(`^${dest}: SUSPENDED since \\S+ \\(criteria\\): HTTP 404 suspends`));
    expect(shown.stderr).toContain('  notified: ops@example.com\n');

    const refused = await herald(['destinations', 'redeliver', dest]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(new RegExp(`^herald: destination "${dest}" is suspended \\(HTTP 404 suspends`));
    expect(refused.stderr).toMatch(new RegExp(`\\nhint: reactivate it, which also sends its queued deliveries: herald destinations reactivate ${dest}\\n$`));

    const r = await herald(['destinations', 'reactivate', dest]);
    expect(r).toEqual({ code: 0, stdout: `${dest} reactivated; 1 queued delivery sent again\n`, stderr: '' });
    await receiver.waitFor(1, path);
    const req = receiver.on(path)[0]!;
    expect(req.headers['ce-id']).toBe('cli-queued-1');
    expect(req.body.toString()).toBe('{"queued":true}');
    const listed = await herald(['destinations', 'list', '--json']);
    expect((JSON.parse(listed.stdout) as { id: string; status: string }[]).find((d) => d.id === dest)?.status).toBe('active');
  });
});

describe('bin/herald.cjs as a process', () => {
  test('--help: exit 0 and the commands', async () => {
    const r = await spawnHerald(['--help']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Usage: herald /);
    expect(r.stdout).toMatch(/\n {2}publish /);
    expect(r.stdout).toMatch(/\n {2}destinations /);
    expect(r.stdout).toMatch(/Exit codes:/);
  });

  test('simulate runs with no Herald, URL or token', async () => {
    const r = await spawnHerald(['simulate', '--policy', 'adobe-best-effort', '--responses', '400']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout.trimEnd().split('\n').map((l) => (JSON.parse(l) as { outcome?: string; state?: string }).outcome ?? (JSON.parse(l) as { state?: string }).state)).toEqual(['dead', 'DEAD']);
  });

  test('a real call exits on its own with the right code', async () => {
    const ok = await spawnHerald(['destinations', 'list', '--json'], env());
    expect(ok.stderr).toBe('');
    expect(ok.code).toBe(0);
    expect(Array.isArray(JSON.parse(ok.stdout))).toBe(true);
    const usage = await spawnHerald(['publish'], env());
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/--type: is required/);
  });
});
