import { MemoryDeliveryStore } from '../../shared/adapters/memory/delivery-store';
import { MemoryRateLeaseStore } from '../../shared/adapters/memory/rate-lease-store';
import { MemoryCounterStore } from '../../shared/adapters/memory/counter-store';
import { DestinationDirectory } from '../../shared/app/destinations/destination-directory';
import { AdminDeps, getDestination } from '../../shared/app/admin/destinations-admin';
import { AdminResult } from '../../functions/admin/route';
import { statusOf } from '../../functions/http';
import { DestinationCounters } from '../../shared/app/destinations/destination-counters';
import { SuspensionDeps, suspendDestination } from '../../shared/app/delivery/suspend-and-reactivate';
import { postReactivate, postRedeliver, postSuspend } from '../../shared/app/admin/suspension-admin';
import { DeliveryRecord, DeliveryStatus } from '../../shared/domain/retry/delivery';
import { createLogger } from '../../shared/log';
import { harness, Sent } from '../support/cli-harness';
import { MemoryDestinationStore } from '../../shared/adapters/memory/destination-store';
import { webhookDestination } from '../support/destinations';

/**
 * `herald destinations suspend|reactivate|redeliver|show` in-process: the requests they send, and
 * what they make of the real admin use cases' answers over memory stores.
 */

const NOW = new Date('2025-01-01T01:00:00.000Z');
const NOT_FOUND_STDERR = 'herald: no destination "gone"\nhint: see the destinations there are with: herald destinations list\n';

function record(destinationId: string, n: number, status: DeliveryStatus): DeliveryRecord {
  const key = `key${n}`;
  return {
    id: `${destinationId}.${key}`,
    destinationId,
    eventId: `evt-${n}`,
    eventSource: '/shop',
    eventType: 'com.example.order.created',
    status,
    attempts: status === 'DEAD' ? 4 : 1,
    availableAt: '2025-01-01T00:00:00.000Z',
    lastError: { at: '2025-01-01T00:30:00.000Z', status: 503, error: 'HTTP 503' },
    event: { attributes: { specversion: '1.0', id: `evt-${n}`, source: '/shop', type: 'com.example.order.created' }, data: Buffer.from('{}') },
  };
}

/**
 * Three destinations: `orders` suspended with 4 QUEUED deliveries and a notification to ops@;
 * `billing` active with 2 QUEUED and 3 DEAD; `quiet` active with nothing.
 */
async function stores(): Promise<AdminDeps & SuspensionDeps> {
  const clock = { now: () => NOW };
  const log = createLogger({ write: () => undefined });
  const destinations = new MemoryDestinationStore();
  const deliveries = new MemoryDeliveryStore();
  const counters = new DestinationCounters(new MemoryCounterStore(), clock, log, { bucketMs: 60_000, flushMs: 1_000, shard: 0 });
  const deps = {
    destinations,
    deliveries,
    directory: new DestinationDirectory(destinations, clock, 0),
    counters,
    bus: { publish: async () => 'message-id' },
    notificationsTopic: 'herald-notifications',
    clock,
    log,
    policy: { presetTimeoutMs: 5_000, timeScale: 1 },
    lanes: { ensureLane: async () => undefined, removeLane: async () => undefined },
    rateLeases: new MemoryRateLeaseStore(),
    addressRules: { allowLoopback: false },
    resolver: { lookup: async () => [{ address: '93.184.215.14', family: 4 as const }] },
  };
  await destinations.put({ ...webhookDestination('orders'), technicalEmail: 'ops@example.com' });
  await destinations.put(webhookDestination('billing'));
  await destinations.put(webhookDestination('quiet'));
  for (let i = 0; i < 9; i++) counters.record('orders', 'success', new Date(NOW.getTime() - 120_000));
  const gone = { at: '2025-01-01T00:59:00.000Z', status: 404, error: 'HTTP 404' };
  counters.record('orders', 'failure', new Date(NOW.getTime() - 60_000), gone);
  await suspendDestination(deps, 'orders', { cause: 'criteria', reason: 'HTTP 404 suspends the destination at once under event-platform', lastError: gone });
  for (let i = 1; i <= 4; i++) await deliveries.put(record('orders', i, 'QUEUED'));
  for (let i = 1; i <= 5; i++) await deliveries.put(record('billing', i, i <= 2 ? 'QUEUED' : 'DEAD'));
  return deps;
}

/** The admin API's routes these commands use, answering the CLI's fetch as functions/admin/ would. */
function adminApi(deps: AdminDeps & SuspensionDeps) {
  return async (req: Sent): Promise<Response> => {
    const path = new URL(req.url).pathname;
    const action = /^\/admin\/destinations\/([^/]+)\/(reactivate|redeliver|suspend)$/.exec(path);
    const one = /^\/admin\/destinations\/([^/]+)$/.exec(path);
    let result: AdminResult;
    if (req.method === 'POST' && action?.[2] === 'reactivate') result = await postReactivate(deps, decodeURIComponent(action[1]!));
    else if (req.method === 'POST' && action?.[2] === 'suspend') {
      result = await postSuspend(deps, decodeURIComponent(action[1]!), req.body?.length ? (JSON.parse(req.body.toString()) as unknown) : undefined, 'admin');
    }
    else if (req.method === 'POST' && action?.[2] === 'redeliver') {
      result = await postRedeliver(deps, decodeURIComponent(action[1]!), req.body?.length ? (JSON.parse(req.body.toString()) as unknown) : undefined);
    } else if (req.method === 'GET' && one) result = await getDestination(deps, decodeURIComponent(one[1]!));
    else return Response.json({ error: `no admin route ${req.method} ${path}` }, { status: 404 });
    return 'body' in result ? Response.json(result.body, { status: statusOf(result.kind) }) : new Response(null, { status: statusOf(result.kind) });
  };
}

async function cli() {
  const deps = await stores();
  return { deps, h: harness(adminApi(deps)) };
}

/** The destination's records' statuses, by record id. */
const statuses = async (deps: AdminDeps, id: string) => {
  const pages = await Promise.all((['PENDING', 'IN_FLIGHT', 'QUEUED', 'DEAD'] as const).map((status) => deps.deliveries.list(id, { status, limit: 100 })));
  return pages
    .flatMap((p) => p.deliveries)
    .sort((a, b) => a.id.localeCompare(b.id))
    .map((d) => d.status);
};

describe('herald destinations reactivate', () => {
  test('sends POST /admin/destinations/{id}/reactivate with no body; prints one line; the QUEUED deliveries are PENDING again', async () => {
    const { deps, h } = await cli();
    expect(await h.run(['destinations', 'reactivate', 'orders'])).toBe(0);
    expect(h.sent.map((s) => [s.method, s.url, s.body, s.headers.authorization])).toEqual([
      ['POST', 'http://127.0.0.1:8080/admin/destinations/orders/reactivate', undefined, 'Bearer admin-token'],
    ]);
    expect(h.stdout()).toBe('orders reactivated; 4 queued deliveries sent again\n');
    expect(h.stderr()).toBe('');
    expect((await deps.destinations.get('orders'))?.status).toBe('active');
    expect(await statuses(deps, 'orders')).toEqual(['PENDING', 'PENDING', 'PENDING', 'PENDING']);
  });

  test('one queued delivery is said in the singular', async () => {
    const h = harness(() => Response.json({ destination: { id: 'orders', status: 'active' }, redelivered: 1 }));
    expect(await h.run(['destinations', 'reactivate', 'orders'])).toBe(0);
    expect(h.stdout()).toBe('orders reactivated; 1 queued delivery sent again\n');
  });

  test('--json prints the answer as it came', async () => {
    const { h } = await cli();
    expect(await h.run(['destinations', 'reactivate', 'orders', '--json'])).toBe(0);
    const out = JSON.parse(h.stdout()) as { destination: Record<string, unknown>; redelivered: number };
    expect(out.redelivered).toBe(4);
    expect(out.destination).toMatchObject({ id: 'orders', status: 'active', reactivatedAt: NOW.toISOString() });
    expect(out.destination).not.toHaveProperty('suspension');
    expect(out.destination).not.toHaveProperty('secret');
    expect(h.stderr()).toBe('');
  });

  test('409 (not suspended): exit 1, Herald\'s message, and the command to run instead', async () => {
    const { h } = await cli();
    expect(await h.run(['destinations', 'reactivate', 'billing'])).toBe(1);
    expect(h.stdout()).toBe('');
    expect(h.stderr()).toBe(
      'herald: destination "billing" is not suspended; to send its queued events again use POST /admin/destinations/billing/redeliver\n' +
        'hint: to send its queued deliveries again: herald destinations redeliver billing\n',
    );
  });

  test('404: exit 1, the destination named', async () => {
    const { h } = await cli();
    expect(await h.run(['destinations', 'reactivate', 'gone'])).toBe(1);
    expect(h.stderr()).toBe(NOT_FOUND_STDERR);
  });

  test('a bad id: exit 2, nothing sent; Herald\'s own 400: exit 1 with its issues', async () => {
    const { h } = await cli();
    expect(await h.run(['destinations', 'reactivate', 'Bad_Id'])).toBe(2);
    expect(h.stderr()).toBe(
      [
        'herald: invalid arguments for herald destinations reactivate',
        '  - <id>: a destination id is 1-63 lowercase letters, digits and hyphens, starting and ending with a letter or digit',
        'hint: run "herald destinations reactivate --help" for usage',
        '',
      ].join('\n'),
    );
    expect(h.sent).toHaveLength(0);
    const h400 = harness(() => Response.json({ error: 'invalid destination id "x"', issues: [{ path: 'id', message: 'use 1-63 lowercase letters' }] }, { status: 400 }));
    expect(await h400.run(['destinations', 'reactivate', 'x'])).toBe(1);
    expect(h400.stderr()).toBe('herald: invalid destination id "x"\n  - id: use 1-63 lowercase letters\n');
  });

  test('an answer that is not Herald\'s shape: exit 1', async () => {
    const h = harness(() => Response.json({ ok: true }));
    expect(await h.run(['destinations', 'reactivate', 'orders'])).toBe(1);
    expect(h.stderr()).toMatch(/^herald: POST \/admin\/destinations\/\{id\}\/reactivate answered an unexpected body/);
  });
});

describe('herald destinations redeliver', () => {
  test('sends {"status":"queued"} by default; prints how many; they are PENDING again', async () => {
    const { deps, h } = await cli();
    expect(await h.run(['destinations', 'redeliver', 'billing'])).toBe(0);
    const req = h.sent[0]!;
    expect([req.method, req.url, req.headers['content-type']]).toEqual(['POST', 'http://127.0.0.1:8080/admin/destinations/billing/redeliver', 'application/json']);
    expect(JSON.parse(req.body!.toString())).toEqual({ status: 'queued' });
    expect(h.stdout()).toBe('billing: 2 queued deliveries sent again\n');
    expect(h.stderr()).toBe('');
    expect(await statuses(deps, 'billing')).toEqual(['PENDING', 'PENDING', 'DEAD', 'DEAD', 'DEAD']);
  });

  test('--dead sends {"status":"dead"}; --json prints the answer', async () => {
    const { deps, h } = await cli();
    expect(await h.run(['destinations', 'redeliver', 'billing', '--dead', '--json'])).toBe(0);
    expect(JSON.parse(h.sent[0]!.body!.toString())).toEqual({ status: 'dead' });
    expect(JSON.parse(h.stdout())).toEqual({ redelivered: 3, status: 'DEAD' });
    expect(await statuses(deps, 'billing')).toEqual(['QUEUED', 'QUEUED', 'PENDING', 'PENDING', 'PENDING']);
  });

  test('nothing to redeliver: exit 0 and 0', async () => {
    const { h } = await cli();
    expect(await h.run(['destinations', 'redeliver', 'quiet', '--dead'])).toBe(0);
    expect(h.stdout()).toBe('quiet: 0 dead deliveries sent again\n');
  });

  test('409 (suspended): exit 1, Herald\'s message, and to reactivate instead; nothing moved', async () => {
    const { deps, h } = await cli();
    expect(await h.run(['destinations', 'redeliver', 'orders'])).toBe(1);
    expect(h.stdout()).toBe('');
    expect(h.stderr()).toBe(
      'herald: destination "orders" is suspended (HTTP 404 suspends the destination at once under event-platform): its events would only be queued again; ' +
        'reactivate it with POST /admin/destinations/orders/reactivate, which also sends its queued events\n' +
        'hint: reactivate it, which also sends its queued deliveries: herald destinations reactivate orders\n',
    );
    expect(await statuses(deps, 'orders')).toEqual(['QUEUED', 'QUEUED', 'QUEUED', 'QUEUED']);
  });

  test('404: exit 1, the destination named', async () => {
    const { h } = await cli();
    expect(await h.run(['destinations', 'redeliver', 'gone', '--dead'])).toBe(1);
    expect(h.stderr()).toBe(NOT_FOUND_STDERR);
  });

  test('a bad id: exit 2, nothing sent; Herald\'s own 400: exit 1 with its issues', async () => {
    const { h } = await cli();
    expect(await h.run(['destinations', 'redeliver', 'bad-', '--dead'])).toBe(2);
    expect(h.stderr()).toMatch(/^herald: invalid arguments for herald destinations redeliver\n {2}- <id>: a destination id is/);
    expect(h.sent).toHaveLength(0);
    const h400 = harness(() => Response.json({ error: 'invalid redeliver request', issues: [{ path: 'status', message: 'status must be "queued" or "dead"' }] }, { status: 400 }));
    expect(await h400.run(['destinations', 'redeliver', 'orders'])).toBe(1);
    expect(h400.stderr()).toBe('herald: invalid redeliver request\n  - status: status must be "queued" or "dead"\n');
  });

  test('an unknown flag is a usage error', async () => {
    const { h } = await cli();
    expect(await h.run(['destinations', 'redeliver', 'billing', '--status', 'dead'])).toBe(2);
    expect(h.sent).toHaveLength(0);
  });

  test('cannot connect: exit 3', async () => {
    const down = harness(() => {
      throw Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } });
    });
    expect(await down.run(['destinations', 'redeliver', 'billing'])).toBe(3);
    expect(await down.run(['destinations', 'reactivate', 'orders'])).toBe(3);
  });
});

describe('herald destinations show', () => {
  test('a suspended destination: the JSON on stdout, a summary on stderr', async () => {
    const { h } = await cli();
    expect(await h.run(['destinations', 'show', 'orders'])).toBe(0);
    const shown = JSON.parse(h.stdout()) as Record<string, unknown>;
    expect(shown).toMatchObject({
      id: 'orders',
      status: 'suspended',
      suspension: {
        cause: 'criteria',
        reason: 'HTTP 404 suspends the destination at once under event-platform',
        at: NOW.toISOString(),
        attempts1h: 10,
        successRate1h: 0.9,
        notification: { type: 'herald.destination.suspended', to: 'ops@example.com' },
      },
      stats: { attempts1h: 10, successRate1h: 0.9, lastErrors: [{ error: 'HTTP 404' }] },
    });
    expect(shown).not.toHaveProperty('secret');
    expect(h.stderr()).toBe(
      [
        `orders: SUSPENDED since ${NOW.toISOString()} (criteria): HTTP 404 suspends the destination at once under event-platform`,
        '  when suspended, last hour: 10 attempts, 90.0 % succeeded',
        '  notified: ops@example.com',
        '  last hour: 10 attempts, 90.0 % succeeded',
        '  last error: 2025-01-01T00:59:00.000Z  HTTP 404',
        '  its events are QUEUED; once the endpoint is fixed: herald destinations reactivate orders',
        '',
      ].join('\n'),
    );
  });

  test('an active destination with nothing counted; --json prints the JSON alone', async () => {
    const { h } = await cli();
    expect(await h.run(['destinations', 'show', 'quiet'])).toBe(0);
    expect(h.stderr()).toBe('quiet: active\n  last hour: 0 attempts\n');
    const { h: h2 } = await cli();
    expect(await h2.run(['destinations', 'show', 'quiet', '--json'])).toBe(0);
    expect(JSON.parse(h2.stdout())).toMatchObject({ id: 'quiet', status: 'active', stats: { attempts1h: 0, lastErrors: [] } });
    expect(h2.stderr()).toBe('');
  });

  test('a suspended destination without a technicalEmail says where the notice went', async () => {
    const h = harness(() =>
      Response.json({
        id: 'x',
        status: 'suspended',
        suspension: { cause: 'gone', reason: 'HTTP 410 Gone', at: 't', attempts1h: 1, recentErrors: [], notification: { type: 'herald.destination.suspended' } },
      }),
    );
    expect(await h.run(['destinations', 'show', 'x'])).toBe(0);
    expect(h.stderr()).toBe(
      [
        'x: SUSPENDED since t (gone): HTTP 410 Gone',
        '  when suspended, last hour: 1 attempt',
        "  notified: nobody (no technicalEmail): the notice is in Herald's log and under suspension.notification",
        '  its events are QUEUED; once the endpoint is fixed: herald destinations reactivate x',
        '',
      ].join('\n'),
    );
  });

  test('404: exit 1', async () => {
    const { h } = await cli();
    expect(await h.run(['destinations', 'show', 'gone'])).toBe(1);
    expect(h.stderr()).toBe(NOT_FOUND_STDERR);
  });
});

test('destinations help lists every command', async () => {
  const h = harness();
  expect(await h.run(['destinations'])).toBe(2);
  expect(h.stderr()).toMatch(/add[\s\S]*list[\s\S]*show[\s\S]*remove[\s\S]*suspend[\s\S]*reactivate[\s\S]*redeliver/);
  const help = harness();
  expect(await help.run(['destinations', 'redeliver', '--help'])).toBe(0);
  expect(help.stdout()).toMatch(/--dead/);
  expect(help.stdout()).toMatch(/--json/);
});

describe('herald destinations suspend', () => {
  test('sends POST /admin/destinations/{id}/suspend with the reason; prints one line; the destination is suspended by hand', async () => {
    const { deps, h } = await cli();
    expect(await h.run(['destinations', 'suspend', 'billing', '--reason', 'receiver maintenance'])).toBe(0);
    expect(h.sent.map((s) => [s.method, s.url, s.body?.toString(), s.headers['content-type']])).toEqual([
      ['POST', 'http://127.0.0.1:8080/admin/destinations/billing/suspend', '{"reason":"receiver maintenance"}', 'application/json'],
    ]);
    expect(h.stdout()).toBe('billing suspended: receiver maintenance; its events are QUEUED until: herald destinations reactivate billing\n');
    expect(h.stderr()).toBe('');
    expect((await deps.destinations.get('billing'))?.suspension).toMatchObject({ cause: 'manual', reason: 'receiver maintenance', by: 'admin' });
    // Reactivate undoes it, and sends the two QUEUED ones.
    expect(await h.run(['destinations', 'reactivate', 'billing'])).toBe(0);
    expect(h.stdout()).toContain('billing reactivated; 2 queued deliveries sent again\n');
  });

  test('without --reason an empty object; --json prints the answer', async () => {
    const { h } = await cli();
    expect(await h.run(['destinations', 'suspend', 'quiet', '--json'])).toBe(0);
    expect(h.sent[0]!.body?.toString()).toBe('{}');
    expect(JSON.parse(h.stdout())).toMatchObject({ destination: { id: 'quiet', status: 'suspended', suspension: { cause: 'manual', reason: 'suspended by hand by admin', by: 'admin' } } });
  });

  test("409 (already suspended): exit 1, Herald's message, and how to send to it again", async () => {
    const { h } = await cli();
    expect(await h.run(['destinations', 'suspend', 'orders'])).toBe(1);
    expect(h.stderr()).toMatch(/^herald: destination "orders" is already suspended since .* \(criteria\): HTTP 404 suspends the destination at once under event-platform; reactivate it with POST \/admin\/destinations\/orders\/reactivate\nhint: to send to it again: herald destinations reactivate orders\n$/);
  });

  test('404: exit 1, the destination named; a reason too long: exit 2, nothing sent', async () => {
    const { h } = await cli();
    expect(await h.run(['destinations', 'suspend', 'gone'])).toBe(1);
    expect(h.stderr()).toBe(NOT_FOUND_STDERR);
    const long = await cli();
    expect(await long.h.run(['destinations', 'suspend', 'billing', '--reason', 'x'.repeat(201)])).toBe(2);
    expect(long.h.sent).toEqual([]);
    expect(long.h.stderr()).toMatch(/the reason is at most 200 characters/);
  });
});
