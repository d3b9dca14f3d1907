import { MemoryDeliveryStore } from '../../shared/adapters/memory/delivery-store';
import { deliveryViewOf, getDelivery, isDeliveryId, listDeliveries, parseDeliveriesQuery } from '../../shared/app/deliveries-admin';
import { DeliveryRecord, DeliveryStatus } from '../../shared/domain/delivery';
import { MemoryDestinationStore, webhookDestination } from '../support/memory-destination-store';

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
      expect(r.status).toBe(200);
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
    expect(r.status).toBe(200);
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
    [{ statsu: 'dead' }, [{ path: 'statsu', message: 'unknown query parameter; use status, limit, cursor' }]],
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
      status: 400,
      body: { error: 'invalid deliveries query', issues: issues.map((i) => ({ path: i.path, message: typeof i.message === 'string' ? i.message : expect.stringMatching(i.message) })) },
    });
  });

  test('an unknown destination is 404, even with no deliveries to list', async () => {
    const deps = await setup();
    expect(await listDeliveries(deps, 'gone', {})).toEqual({ status: 404, body: { error: 'no destination "gone"; list them with GET /admin/destinations' } });
  });

  test('an invalid destination id is 400', async () => {
    const deps = await setup();
    const r = await listDeliveries(deps, 'Bad_Id', {});
    expect(r).toMatchObject({ status: 400, body: { error: 'invalid destination id "Bad_Id"', issues: [{ path: 'id' }] } });
  });

  test('another destination\'s deliveries are not listed', async () => {
    const deps = await setup();
    const r = await listDeliveries(deps, 'users', {});
    expect((r as { body: Page }).body.deliveries.map((d) => d.id)).toEqual(['users.key01']);
  });
});

describe('GET /admin/deliveries/{id}', () => {
  test('200 with the view', async () => {
    const deps = await setup();
    const r = await getDelivery(deps, 'orders.key02', 'default');
    expect(r.status).toBe(200);
    expect((r as { body: Record<string, unknown> }).body).toMatchObject({ id: 'orders.key02', eventId: 'evt-02', status: 'DEAD', attempts: 1 });
    expect((r as { body: Record<string, unknown> }).body).not.toHaveProperty('event');
  });

  test('404 says how to find deliveries', async () => {
    const deps = await setup();
    expect(await getDelivery(deps, 'orders.nothere', 'default')).toEqual({
      status: 404,
      body: { error: 'no delivery "orders.nothere"; list a destination\'s deliveries with GET /admin/destinations/{id}/deliveries' },
    });
  });

  test.each(['no-dot', 'orders.', '.key', 'orders.a/b', 'Orders.key', 'orders.key.more', '../x'])('%j is not a delivery id: 400', async (id) => {
    const deps = await setup();
    expect(isDeliveryId(id)).toBe(false);
    expect(await getDelivery(deps, id, 'default')).toMatchObject({ status: 400, body: { error: `invalid delivery id ${JSON.stringify(id)}`, issues: [{ path: 'deliveryId' }] } });
  });
});
