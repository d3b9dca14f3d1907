import { MemoryDeliveryStore } from '../../shared/adapters/memory/delivery-store';
import { DeliveriesDeps, getDelivery, listDeliveries } from '../../shared/app/admin/deliveries-admin';
import { AdminResult } from '../../functions/admin/route';
import { statusOf } from '../../functions/http';
import { DeliveryRecord, DeliveryStatus } from '../../shared/domain/retry/delivery';
import { encodeLogCursor } from '../../shared/domain/stats/delivery-log';
import { harness, Sent } from '../support/cli-harness';
import { MemoryDestinationStore } from '../../shared/adapters/memory/destination-store';
import { webhookDestination } from '../support/destinations';

/** `herald deliveries list|show` in-process, against the real admin use cases over memory stores. */

function record(n: number, status: DeliveryStatus, extra: Partial<DeliveryRecord> = {}): DeliveryRecord {
  const key = String(n).padStart(2, '0');
  return {
    id: `orders.key${key}`,
    destinationId: 'orders',
    eventId: `evt-${key}`,
    eventSource: '/shop',
    eventType: 'com.example.order.created',
    status,
    attempts: 0,
    availableAt: `2025-01-01T00:00:${key}.000Z`,
    // The log lists newest published first: key01 the newest.
    publishedAt: new Date(Date.parse('2025-01-01T00:00:00.000Z') - n * 1000).toISOString(),
    event: { attributes: { specversion: '1.0', id: `evt-${key}`, source: '/shop', type: 'com.example.order.created' }, data: Buffer.from('payload') },
    ...extra,
  };
}

/** The cursor a page ending at key0n gives (the log's: publish time and id). */
function cursorAfter(n: number): string {
  const r = record(n, 'DELIVERED');
  return encodeLogCursor({ publishedAt: r.publishedAt!, id: r.id });
}

async function stores(): Promise<DeliveriesDeps> {
  const destinations = new MemoryDestinationStore();
  const deliveries = new MemoryDeliveryStore();
  await destinations.put(webhookDestination('orders'));
  await destinations.put(webhookDestination('empty'));
  const statuses: DeliveryStatus[] = ['DELIVERED', 'DEAD', 'PENDING', 'DEAD', 'QUEUED', 'DELIVERED', 'DEAD'];
  for (const [i, status] of statuses.entries()) {
    const failed = status === 'DEAD' || status === 'QUEUED';
    await deliveries.put(
      record(i + 1, status, failed ? { attempts: 4, lastError: { at: '2025-01-01T01:00:00.000Z', status: 503, error: 'HTTP 503' } } : { attempts: status === 'PENDING' ? 0 : 1 }),
    );
  }
  return { destinations, deliveries };
}

/** The admin API's two delivery routes, answering the CLI's fetch as functions/admin/ would. */
function adminApi(deps: DeliveriesDeps) {
  return async (req: Sent): Promise<Response> => {
    const url = new URL(req.url);
    const query: Record<string, string | string[]> = {};
    for (const key of new Set(url.searchParams.keys())) {
      const values = url.searchParams.getAll(key);
      query[key] = values.length === 1 ? values[0]! : values;
    }
    let result: AdminResult;
    const list = /^\/admin\/destinations\/([^/]+)\/deliveries$/.exec(url.pathname);
    const one = /^\/admin\/deliveries\/([^/]+)$/.exec(url.pathname);
    if (list) result = await listDeliveries(deps, decodeURIComponent(list[1]!), query);
    else if (one) result = await getDelivery(deps, decodeURIComponent(one[1]!), 'default');
    else return Response.json({ error: `no admin route GET ${url.pathname}` }, { status: 404 });
    return 'body' in result ? Response.json(result.body, { status: statusOf(result.kind) }) : new Response(null, { status: statusOf(result.kind) });
  };
}

async function cli() {
  return harness(adminApi(await stores()));
}

describe('herald deliveries list', () => {
  test('a table of one page; no hint when it is the last', async () => {
    const h = await cli();
    expect(await h.run(['deliveries', 'list', 'orders', '--status', 'dead'])).toBe(0);
    expect(h.stdout()).toBe(
      [
        'DELIVERY ID   EVENT ID  TYPE                       STATUS  ATTEMPTS  LAST ERROR  AVAILABLE AT',
        'orders.key02  evt-02    com.example.order.created  DEAD    4         HTTP 503    2025-01-01T00:00:02.000Z',
        'orders.key04  evt-04    com.example.order.created  DEAD    4         HTTP 503    2025-01-01T00:00:04.000Z',
        'orders.key07  evt-07    com.example.order.created  DEAD    4         HTTP 503    2025-01-01T00:00:07.000Z',
        '',
      ].join('\n'),
    );
    expect(h.stderr()).toBe('');
    expect(h.sent.map((s) => [s.method, s.url, s.headers.authorization])).toEqual([
      ['GET', 'http://127.0.0.1:8080/admin/destinations/orders/deliveries?status=DEAD', 'Bearer admin-token'],
    ]);
  });

  test('no last error and no availableAt print as -', async () => {
    const deps = await stores();
    await deps.deliveries.put(record(8, 'IN_FLIGHT', { attempts: 1, claimedAt: 'x' }));
    await deps.deliveries.update('orders.key08', (r) => {
      const { availableAt: _a, ...rest } = r!;
      return rest;
    });
    const h = harness(adminApi(deps));
    expect(await h.run(['deliveries', 'list', 'orders', '--status', 'in_flight'])).toBe(0);
    expect(h.stdout().split('\n')[1]).toBe('orders.key08  evt-08    com.example.order.created  IN_FLIGHT  1         -           -');
  });

  test('a delivery waiting for a turn of its rate says so beside its time (it may come sooner); a retry does not', async () => {
    const deps = await stores();
    await deps.deliveries.put(record(8, 'PENDING', { availableAt: '2025-01-01T05:00:00.000Z', rateDeferred: true }));
    const h = harness(adminApi(deps));
    expect(await h.run(['deliveries', 'list', 'orders', '--status', 'pending'])).toBe(0);
    expect(h.stdout().split('\n').slice(1, 3)).toEqual([
      'orders.key03  evt-03    com.example.order.created  PENDING  0         -           2025-01-01T00:00:03.000Z',
      'orders.key08  evt-08    com.example.order.created  PENDING  0         -           2025-01-01T05:00:00.000Z (rate)',
    ]);
  });

  test('pages: the hint on stderr gives the --cursor of the next page, and following it reaches the end', async () => {
    const h = await cli();
    expect(await h.run(['deliveries', 'list', 'orders', '--limit', '3'])).toBe(0);
    expect(h.stdout().trimEnd().split('\n').slice(1).map((l) => l.split(/\s+/)[0])).toEqual(['orders.key01', 'orders.key02', 'orders.key03']);
    expect(h.stderr()).toBe(`more deliveries: herald deliveries list orders --limit 3 --cursor ${cursorAfter(3)}   (or --all for every page)\n`);

    const pages: string[][] = [];
    let argv = ['deliveries', 'list', 'orders', '--limit', '3'];
    for (let i = 0; i < 5; i++) {
      const p = await cli();
      expect(await p.run(argv)).toBe(0);
      pages.push(p.stdout().trimEnd().split('\n').slice(1).map((l) => l.split(/\s+/)[0]!));
      const next = /--cursor (\S+)/.exec(p.stderr());
      if (!next) break;
      argv = ['deliveries', 'list', 'orders', '--limit', '3', '--cursor', next[1]!];
    }
    expect(pages).toEqual([
      ['orders.key01', 'orders.key02', 'orders.key03'],
      ['orders.key04', 'orders.key05', 'orders.key06'],
      ['orders.key07'],
    ]);
  });

  test('--type, --event-id, --from and --to filter, and the next-page hint keeps them', async () => {
    const h = await cli();
    // key0n was published n seconds before 2025-01-01: key02..key06 lie in [23:59:54, 23:59:59).
    expect(await h.run(['deliveries', 'list', 'orders', '--type', 'com.example.order.created', '--from', '2024-12-31T23:59:54Z', '--to', '2024-12-31T23:59:59Z', '--limit', '2'])).toBe(0);
    expect(new URL(h.sent[0]!.url).searchParams.get('type')).toBe('com.example.order.created');
    expect(h.stdout().trimEnd().split('\n').slice(1).map((l) => l.split(/\s+/)[0])).toEqual(['orders.key02', 'orders.key03']);
    expect(h.stderr()).toContain('--type com.example.order.created --from 2024-12-31T23:59:54Z --to 2024-12-31T23:59:59Z --limit 2 --cursor ');
    const one = await cli();
    expect(await one.run(['deliveries', 'list', 'orders', '--event-id', 'evt-05'])).toBe(0);
    expect(one.stdout().trimEnd().split('\n').slice(1).map((l) => l.split(/\s+/)[0])).toEqual(['orders.key05']);
    const bad = await cli();
    expect(await bad.run(['deliveries', 'list', 'orders', '--from', 'yesterday'])).toBe(2);
    expect(bad.stderr()).toMatch(/--from.*ISO 8601/);
    expect(bad.sent).toHaveLength(0);
  });

  test('--all follows the cursors to the last page (here 3 pages of 3)', async () => {
    const h = await cli();
    expect(await h.run(['deliveries', 'list', 'orders', '--all', '--limit', '3'])).toBe(0);
    expect(h.sent.map((s) => new URL(s.url).search)).toEqual(['?limit=3', `?limit=3&cursor=${cursorAfter(3)}`, `?limit=3&cursor=${cursorAfter(6)}`]);
    expect(h.stdout().trimEnd().split('\n')).toHaveLength(1 + 7);
    expect(h.stderr()).toBe('');
  });

  test('--all without --limit asks for the largest pages', async () => {
    const h = await cli();
    expect(await h.run(['deliveries', 'list', 'orders', '--all', '--json'])).toBe(0);
    expect(h.sent.map((s) => new URL(s.url).search)).toEqual(['?limit=500']);
    const out = JSON.parse(h.stdout()) as { deliveries: Record<string, unknown>[] };
    expect(out).toEqual({ deliveries: expect.any(Array) });
    expect(out.deliveries).toHaveLength(7);
  });

  test('--json prints the page with its nextCursor; never the event', async () => {
    const h = await cli();
    expect(await h.run(['deliveries', 'list', 'orders', '--limit', '2', '--status', 'DEAD', '--json'])).toBe(0);
    const out = JSON.parse(h.stdout()) as { deliveries: Record<string, unknown>[]; nextCursor?: string };
    expect(out.nextCursor).toBe(cursorAfter(4));
    expect(out.deliveries.map((d) => d.id)).toEqual(['orders.key02', 'orders.key04']);
    expect(out.deliveries[0]).toEqual({
      id: 'orders.key02',
      destinationId: 'orders',
      account: 'default',
      eventId: 'evt-02',
      eventSource: '/shop',
      eventType: 'com.example.order.created',
      status: 'DEAD',
      attempts: 4,
      availableAt: '2025-01-01T00:00:02.000Z',
      publishedAt: '2024-12-31T23:59:58.000Z',
      lastError: { at: '2025-01-01T01:00:00.000Z', status: 503, error: 'HTTP 503' },
    });
    expect(h.stderr()).toBe(`more deliveries: herald deliveries list orders --status DEAD --limit 2 --json --cursor ${cursorAfter(4)}   (or --all for every page)\n`);
  });

  test('no deliveries: a note on stderr, nothing on stdout', async () => {
    const h = await cli();
    expect(await h.run(['deliveries', 'list', 'empty'])).toBe(0);
    expect(h.stdout()).toBe('');
    expect(h.stderr()).toBe('no deliveries for destination empty\n');
    const h2 = await cli();
    expect(await h2.run(['deliveries', 'list', 'orders', '--status', 'in_flight'])).toBe(0);
    expect(h2.stderr()).toBe('no deliveries with status IN_FLIGHT for destination orders\n');
  });

  test('an unknown destination: exit 1, named, and where to look', async () => {
    const h = await cli();
    expect(await h.run(['deliveries', 'list', 'gone'])).toBe(1);
    expect(h.stderr()).toBe('herald: no destination "gone"\nhint: see the destinations there are with: herald destinations list\n');
  });

  test('bad options: exit 2, each flag named, nothing sent', async () => {
    const h = await cli();
    expect(await h.run(['deliveries', 'list', 'Bad_Id', '--status', 'lost', '--limit', '501', '--cursor', ''])).toBe(2);
    expect(h.stderr()).toBe(
      [
        'herald: invalid arguments for herald deliveries list',
        '  - <destination>: a destination id is 1-63 lowercase letters, digits and hyphens, starting and ending with a letter or digit',
        '  - --status: must be one of PENDING, IN_FLIGHT, DELIVERED, DEAD, QUEUED (any case)',
        '  - --limit: must be a whole number from 1 to 500',
        '  - --cursor: must not be empty: pass the cursor the previous page printed',
        'hint: run "herald deliveries list --help" for usage',
        '',
      ].join('\n'),
    );
    expect(h.sent).toHaveLength(0);
    for (const limit of ['0', 'ten', '2.5', '-1']) {
      const h2 = await cli();
      expect(await h2.run(['deliveries', 'list', 'orders', '--limit', limit])).toBe(2);
      expect(h2.stderr()).toContain('  - --limit: must be a whole number from 1 to 500');
    }
  });

  test("Herald's own 400 is exit 1 with its issues", async () => {
    const h = harness(() => Response.json({ error: 'invalid deliveries query', issues: [{ path: 'limit', message: 'limit must be a whole number from 1 to 500 (default 50)' }] }, { status: 400 }));
    expect(await h.run(['deliveries', 'list', 'orders'])).toBe(1);
    expect(h.stderr()).toBe('herald: invalid deliveries query\n  - limit: limit must be a whole number from 1 to 500 (default 50)\n');
  });

  test('no admin token: exit 2; cannot connect: exit 3', async () => {
    const h = await cli();
    expect(await h.run(['deliveries', 'list', 'orders'], { env: {} })).toBe(2);
    expect(h.stderr()).toMatch(/^herald: no admin token or account key\n/);
    const down = harness(() => {
      throw Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } });
    });
    expect(await down.run(['deliveries', 'list', 'orders'])).toBe(3);
    expect(await down.run(['deliveries', 'show', 'orders.key01'])).toBe(3);
  });

  test('connection options after the command', async () => {
    const h = await cli();
    expect(await h.run(['deliveries', 'list', 'orders', '--url', 'http://h.test:9', '--admin-token', 'flag'])).toBe(0);
    expect([h.sent[0]!.url, h.sent[0]!.headers.authorization]).toEqual(['http://h.test:9/admin/destinations/orders/deliveries', 'Bearer flag']);
  });
});

describe('herald deliveries show', () => {
  test('prints the delivery as JSON, without its event', async () => {
    const h = await cli();
    expect(await h.run(['deliveries', 'show', 'orders.key05'])).toBe(0);
    expect(h.sent[0]!.url).toBe('http://127.0.0.1:8080/admin/deliveries/orders.key05');
    const shown = JSON.parse(h.stdout()) as Record<string, unknown>;
    expect(shown).toMatchObject({ id: 'orders.key05', status: 'QUEUED', attempts: 4, lastError: { error: 'HTTP 503' } });
    expect(shown).not.toHaveProperty('event');
  });

  test('a missing delivery: exit 1 and how to list them', async () => {
    const h = await cli();
    expect(await h.run(['deliveries', 'show', 'orders.nope'])).toBe(1);
    expect(h.stderr()).toBe('herald: no delivery "orders.nope"\nhint: see the deliveries there are with: herald deliveries list orders\n');
  });

  test('an id that cannot be a delivery: exit 2, nothing sent', async () => {
    const h = await cli();
    expect(await h.run(['deliveries', 'show', 'orders'])).toBe(2);
    expect(h.stderr()).toMatch(/^herald: invalid arguments for herald deliveries show\n {2}- <delivery-id>: a delivery id is <destination id>\.<event key>/);
    expect(h.sent).toHaveLength(0);
  });

  test('help lists both commands', async () => {
    const h = await cli();
    expect(await h.run(['deliveries'])).toBe(2);
    expect(h.stderr()).toMatch(/list[\s\S]*show/);
    const top = await cli();
    expect(await top.run(['--help'])).toBe(0);
    expect(top.stdout()).toMatch(/\n {2}deliveries /);
    expect(top.stdout()).toMatch(/\n {2}simulate /);
  });
});
