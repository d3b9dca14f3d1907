import { MemoryDeliveryStore } from '../../shared/adapters/memory/delivery-store';
import { deliveryViewOf, getDelivery, isDeliveryId, listDeliveries, parseDeliveriesQuery } from '../../shared/app/admin/deliveries-admin';
import { DeliveryRecord, DeliveryStatus } from '../../shared/domain/retry/delivery';
import { RecentEntry } from '../../shared/domain/delivery/recent-log';
import { MemoryDestinationStore } from '../../shared/adapters/memory/destination-store';
import { webhookDestination } from '../support/destinations';

/** GET /admin/destinations/{id}/deliveries and GET /admin/deliveries/{id} over the memory stores. */

function record(destinationId: string, n: number, status: DeliveryStatus, extra: Partial<DeliveryRecord> = {}): DeliveryRecord {
  const eventId = `evt-${String(n).padStart(2, '0')}`;
  return {
    id: `${destinationId}.key${String(n).padStart(2, '0')}`,
    destinationId,
    eventId,
    eventSource: '/shop',
    eventType: 'com.example.order.created',
    status,
    attempts: status === 'PENDING' ? 0 : 1,
    availableAt: '2025-01-01T00:00:00.000Z',
    // The log is newest published first: key01 is the newest, so pages read key01, key02, …
    publishedAt: new Date(Date.parse('2025-01-01T00:00:00.000Z') - n * 1000).toISOString(),
    event: { attributes: { specversion: '1.0', id: eventId, source: '/shop', type: 'com.example.order.created' }, data: Buffer.from('{"card":"4242"}') },
    ...extra,
  };
}

async function setup() {
  const destinations = new MemoryDestinationStore();
  const deliveries = new MemoryDeliveryStore();
  await destinations.put(webhookDestination('orders'));
  await destinations.put(webhookDestination('users'));
  const statuses: DeliveryStatus[] = ['PENDING', 'DEAD', 'DELIVERED', 'DEAD', 'QUEUED', 'IN_FLIGHT', 'DEAD'];
  for (const [i, status] of statuses.entries()) await deliveries.put(record('orders', i + 1, status));
  await deliveries.put(record('users', 1, 'DEAD'));
  return { destinations, deliveries };
}

type Page = { deliveries: Record<string, unknown>[]; nextCursor?: string };

describe('GET /admin/destinations/{id}/deliveries', () => {
  test('pages through every delivery of the destination, 3 pages of at most 3', async () => {
    const deps = await setup();
    const seen: string[] = [];
    const cursors: (string | undefined)[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 10; page++) {
      const r = await listDeliveries(deps, 'orders', { limit: '3', ...(cursor !== undefined ? { cursor } : {}) });
      expect(r.kind).toBe('ok');
      const body = (r as { body: Page }).body;
      seen.push(...body.deliveries.map((d) => d.id as string));
      cursors.push(body.nextCursor);
      cursor = body.nextCursor;
      if (cursor === undefined) break;
    }
    expect(cursors).toHaveLength(3);
    expect(cursors[2]).toBeUndefined();
    expect(seen).toEqual(['orders.key01', 'orders.key02', 'orders.key03', 'orders.key04', 'orders.key05', 'orders.key06', 'orders.key07']);
  });

  test('a full last page has no nextCursor; the default limit is 50', async () => {
    const deps = await setup();
    const r = await listDeliveries(deps, 'orders', {});
    expect(r.kind).toBe('ok');
    const body = (r as { body: Page }).body;
    expect(body.deliveries).toHaveLength(7);
    expect(body).not.toHaveProperty('nextCursor');
    expect(parseDeliveriesQuery({})).toEqual({ ok: true, value: { limit: 50 } });
  });

  test.each(['dead', 'DEAD', 'Dead', ' dead '])('status=%j filters (case-insensitive), and pages within the filter', async (status) => {
    const deps = await setup();
    const first = await listDeliveries(deps, 'orders', { status, limit: '2' });
    const firstBody = (first as { body: Page }).body;
    expect(firstBody.deliveries.map((d) => [d.id, d.status])).toEqual([
      ['orders.key02', 'DEAD'],
      ['orders.key04', 'DEAD'],
    ]);
    const second = await listDeliveries(deps, 'orders', { status, limit: '2', cursor: firstBody.nextCursor });
    expect((second as { body: Page }).body).toEqual({ deliveries: [expect.objectContaining({ id: 'orders.key07', status: 'DEAD' })] });
  });

  test('in_flight and queued are statuses too', async () => {
    const deps = await setup();
    const ids = async (status: string) => ((await listDeliveries(deps, 'orders', { status })) as { body: Page }).body.deliveries.map((d) => d.id);
    expect(await ids('in_flight')).toEqual(['orders.key06']);
    expect(await ids('queued')).toEqual(['orders.key05']);
  });

  test('filters by event type, event id and publish time, alone or together, and pages within them', async () => {
    const deps = await setup();
    await deps.deliveries.put(record('orders', 8, 'DEAD', { eventType: 'com.example.order.paid' }));
    await deps.deliveries.put(record('orders', 9, 'DELIVERED', { eventType: 'com.example.order.paid' }));
    const ids = async (query: Record<string, string>) => ((await listDeliveries(deps, 'orders', query)) as { body: Page }).body.deliveries.map((d) => d.id);
    expect(await ids({ type: 'com.example.order.paid' })).toEqual(['orders.key08', 'orders.key09']);
    expect(await ids({ type: 'com.example.order.paid', status: 'dead' })).toEqual(['orders.key08']);
    expect(await ids({ eventId: 'evt-03' })).toEqual(['orders.key03']);
    expect(await ids({ eventId: 'evt-03', status: 'queued' })).toEqual([]);
    // key0n was published n seconds before midnight: from is inclusive, to exclusive.
    expect(await ids({ from: '2024-12-31T23:59:56Z', to: '2024-12-31T23:59:58Z' })).toEqual(['orders.key03', 'orders.key04']);
    expect(await ids({ from: '2024-12-31T23:59:56Z', status: 'DEAD' })).toEqual(['orders.key02', 'orders.key04']);
    const first = (await listDeliveries(deps, 'orders', { type: 'com.example.order.paid', limit: '1' })) as { body: Page };
    expect(first.body.nextCursor).toEqual(expect.any(String));
    expect(await ids({ type: 'com.example.order.paid', limit: '1', cursor: first.body.nextCursor! })).toEqual(['orders.key09']);
  });

  test('newest published first, whatever the ids', async () => {
    const deps = await setup();
    await deps.deliveries.put(record('orders', 90, 'DELIVERED', { publishedAt: '2026-01-01T00:00:00.000Z' }));
    expect(((await listDeliveries(deps, 'orders', { limit: '2' })) as { body: Page }).body.deliveries.map((d) => d.id)).toEqual(['orders.key90', 'orders.key01']);
  });

  test('a view is the record without its event: no payload bytes, every other field', async () => {
    const deps = await setup();
    const lastError = { at: '2025-01-01T00:00:01.000Z', status: 500, error: 'HTTP 500', bodyExcerpt: 'oops' };
    await deps.deliveries.put(record('orders', 8, 'PENDING', { attempts: 2, lastError, claimedAt: 'c', firstAttemptAt: 'f', lastAttemptAt: 'l', throttled: 1, reason: 'r', publishedAt: 'p' }));
    const r = await listDeliveries(deps, 'orders', { status: 'pending' });
    const views = (r as { body: Page }).body.deliveries;
    for (const v of views) expect(v).not.toHaveProperty('event');
    expect(JSON.stringify(views)).not.toContain('4242');
    expect(views.find((v) => v.id === 'orders.key08')).toEqual({
      id: 'orders.key08',
      destinationId: 'orders',
      account: 'default',
      eventId: 'evt-08',
      eventSource: '/shop',
      eventType: 'com.example.order.created',
      status: 'PENDING',
      attempts: 2,
      availableAt: '2025-01-01T00:00:00.000Z',
      lastError,
      claimedAt: 'c',
      firstAttemptAt: 'f',
      lastAttemptAt: 'l',
      throttled: 1,
      reason: 'r',
      publishedAt: 'p',
    });
  });

  test("deliveryViewOf drops only the event, and names the destination by its account's own id", () => {
    const r = record('orders', 1, 'PENDING');
    const { event: _event, ...rest } = r;
    expect(deliveryViewOf(r)).toEqual({ ...rest, account: 'default' });
    expect(deliveryViewOf({ ...r, destinationId: 'acme_orders', id: 'acme_orders.key01' })).toEqual({ ...rest, id: 'acme_orders.key01', destinationId: 'orders', account: 'acme' });
  });

  test.each<[Record<string, unknown>, { path: string; message: string | RegExp }[]]>([
    [{ status: 'lost' }, [{ path: 'status', message: /^status must be one of PENDING, IN_FLIGHT, DELIVERED, DEAD, QUEUED \(any case\)$/ }]],
    [{ status: '' }, [{ path: 'status', message: /^status must be one of/ }]],
    [{ status: ['dead', 'queued'] }, [{ path: 'status', message: /given once$/ }]],
    [{ limit: '0' }, [{ path: 'limit', message: /^limit must be a whole number from 1 to 500 \(default 50\)$/ }]],
    [{ limit: '501' }, [{ path: 'limit', message: /^limit must be a whole number from 1 to 500/ }]],
    [{ limit: 'ten' }, [{ path: 'limit', message: /^limit must be a whole number from 1 to 500/ }]],
    [{ limit: '2.5' }, [{ path: 'limit', message: /^limit must be a whole number/ }]],
    [{ cursor: '' }, [{ path: 'cursor', message: /^cursor must not be empty/ }]],
    [{ cursor: 'orders.key02' }, [{ path: 'cursor', message: /^cursor is not one this API gave/ }]],
    [{ type: '' }, [{ path: 'type', message: /^type must not be empty/ }]],
    [{ eventId: ['a', 'b'] }, [{ path: 'eventId', message: /given once$/ }]],
    [{ from: 'yesterday' }, [{ path: 'from', message: /^from must be an ISO 8601 date-time with a time zone/ }]],
    [{ to: '2025-01-01T00:00:00' }, [{ path: 'to', message: /^to must be an ISO 8601 date-time with a time zone/ }]],
    [{ from: '2025-01-02T00:00:00Z', to: '2025-01-01T00:00:00Z' }, [{ path: 'to', message: 'to must be later than from' }]],
    [{ statsu: 'dead' }, [{ path: 'statsu', message: 'unknown query parameter; use status, type, eventId, from, to, limit, cursor' }]],
    [
      { status: 'nope', limit: '-1' },
      [
        { path: 'status', message: /^status must be one of/ },
        { path: 'limit', message: /^limit must be/ },
      ],
    ],
  ])('bad query %j: 400 with each issue by name', async (query, issues) => {
    const deps = await setup();
    const r = await listDeliveries(deps, 'orders', query);
    expect(r).toEqual({
      kind: 'invalid',
      body: { error: 'invalid deliveries query', issues: issues.map((i) => ({ path: i.path, message: typeof i.message === 'string' ? i.message : expect.stringMatching(i.message) })) },
    });
  });

  test('an unknown destination is 404, even with no deliveries to list', async () => {
    const deps = await setup();
    expect(await listDeliveries(deps, 'gone', {})).toEqual({ kind: 'not-found', body: { error: 'no destination "gone"; list them with GET /admin/destinations' } });
  });

  test('an invalid destination id is 400', async () => {
    const deps = await setup();
    const r = await listDeliveries(deps, 'Bad_Id', {});
    expect(r).toMatchObject({ kind: 'invalid', body: { error: 'invalid destination id "Bad_Id"', issues: [{ path: 'id' }] } });
  });

  test('another destination\'s deliveries are not listed', async () => {
    const deps = await setup();
    const r = await listDeliveries(deps, 'users', {});
    expect((r as { body: Page }).body.deliveries.map((d) => d.id)).toEqual(['users.key01']);
  });
});

describe('the first page from the log head', () => {
  const head = (entries: RecentEntry[] | undefined) => ({ head: jest.fn(async () => entries) });
  const entry = (n: number): RecentEntry => [new Date(Date.parse('2025-01-01T00:00:00.000Z') - n * 1000).toISOString(), `orders.key${String(n).padStart(2, '0')}`];

  test('a complete head is read by id, never by query, and pages on by the same cursor as the query', async () => {
    const deps = await setup();
    const log = jest.spyOn(deps.deliveries, 'log');
    const logHead = head([entry(1), entry(2), entry(3)]);
    const r = (await listDeliveries({ ...deps, logHead }, 'orders', { limit: '2' })) as { body: Page };
    expect(logHead.head).toHaveBeenCalledWith('orders', 3);
    expect(log).not.toHaveBeenCalled();
    expect(r.body.deliveries.map((d) => d.id)).toEqual(['orders.key01', 'orders.key02']);
    const byQuery = (await listDeliveries(deps, 'orders', { limit: '2' })) as { body: Page };
    expect(r.body).toEqual(byQuery.body);
  });

  test('the query answers when the head is unsure, a record it names is gone, or a filter or cursor is given', async () => {
    const deps = await setup();
    const log = jest.spyOn(deps.deliveries, 'log');
    const ids = async (logHead: ReturnType<typeof head>, query: Record<string, string> = { limit: '2' }) =>
      ((await listDeliveries({ ...deps, logHead }, 'orders', query)) as { body: Page }).body.deliveries.map((d) => d.id);
    expect(await ids(head(undefined))).toEqual(['orders.key01', 'orders.key02']);
    expect(await ids(head([entry(1), entry(2), entry(99)]))).toEqual(['orders.key01', 'orders.key02']);
    const unused = head([entry(1), entry(2), entry(3)]);
    expect(await ids(unused, { status: 'dead' })).toEqual(['orders.key02', 'orders.key04', 'orders.key07']);
    expect(unused.head).not.toHaveBeenCalled();
    expect(log).toHaveBeenCalledTimes(3);
  });
});

describe('GET /admin/deliveries/{id}', () => {
  test('200 with the view', async () => {
    const deps = await setup();
    const r = await getDelivery(deps, 'orders.key02', 'default');
    expect(r.kind).toBe('ok');
    expect((r as { body: Record<string, unknown> }).body).toMatchObject({ id: 'orders.key02', eventId: 'evt-02', status: 'DEAD', attempts: 1 });
    expect((r as { body: Record<string, unknown> }).body).not.toHaveProperty('event');
  });

  test('404 says how to find deliveries', async () => {
    const deps = await setup();
    expect(await getDelivery(deps, 'orders.nothere', 'default')).toEqual({
      kind: 'not-found',
      body: { error: 'no delivery "orders.nothere"; list a destination\'s deliveries with GET /admin/destinations/{id}/deliveries' },
    });
  });

  test.each(['no-dot', 'orders.', '.key', 'orders.a/b', 'Orders.key', 'orders.key.more', '../x'])('%j is not a delivery id: 400', async (id) => {
    const deps = await setup();
    expect(isDeliveryId(id)).toBe(false);
    expect(await getDelivery(deps, id, 'default')).toMatchObject({ kind: 'invalid', body: { error: `invalid delivery id ${JSON.stringify(id)}`, issues: [{ path: 'deliveryId' }] } });
  });
});
