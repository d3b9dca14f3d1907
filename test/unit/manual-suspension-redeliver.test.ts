import { MemoryDeliveryStore } from '../../shared/adapters/memory/delivery-store';
import { postAccountRedeliver } from '../../shared/app/admin/account-deliveries-admin';
import { SuspensionDeps } from '../../shared/app/delivery/suspend-and-reactivate';
import { postReactivate, postSuspend } from '../../shared/app/admin/suspension-admin';
import { DeliveryRecord, DeliveryStatus } from '../../shared/domain/retry/delivery';
import { MemoryDestinationStore } from '../../shared/adapters/memory/destination-store';
import { webhookDestination } from '../support/destinations';

/** POST …/destinations/{id}/suspend and POST …/deliveries/redeliver {"ids"} over the memory stores. */

const NOW = new Date('2026-11-25T12:00:00.000Z');

function record(destinationId: string, key: string, status: DeliveryStatus): DeliveryRecord {
  return {
    id: `${destinationId}.${key}`,
    destinationId,
    eventId: key,
    eventSource: '/shop',
    eventType: 'com.example.order.created',
    status,
    attempts: status === 'PENDING' ? 0 : 3,
    availableAt: '2026-11-25T11:00:00.000Z',
    ...(status === 'DEAD' || status === 'QUEUED' ? { lastError: { at: '2026-11-25T11:00:00.000Z', status: 500, error: 'HTTP 500' } } : {}),
  };
}

async function setup() {
  const destinations = new MemoryDestinationStore();
  const deliveries = new MemoryDeliveryStore();
  const published: { topic: string; data: unknown; attributes: Record<string, string> | undefined }[] = [];
  const changed: string[] = [];
  const logged: { level: string; message: string; fields?: Record<string, unknown> }[] = [];
  const log = Object.fromEntries(['debug', 'info', 'warn', 'error'].map((level) => [level, (message: string, fields?: Record<string, unknown>) => logged.push({ level, message, ...(fields ? { fields } : {}) })]));
  const deps = {
    destinations,
    deliveries,
    directory: { changed: (id: string) => changed.push(id) },
    counters: { window: async () => ({ attempts: 10, successes: 9, failures: 1, successRate: 0.9, recentErrors: [] }) },
    bus: {
      publish: async (topic: string, m: { data: Buffer; attributes?: Record<string, string> }) => {
        published.push({ topic, data: JSON.parse(m.data.toString('utf8')) as unknown, attributes: m.attributes });
        return 'm1';
      },
    },
    notificationsTopic: 'herald-notifications',
    clock: { now: () => NOW },
    log,
    policy: {},
  } as unknown as SuspensionDeps;
  for (const id of ['acme_orders', 'acme_users', 'acme_paused', 'globex_orders']) await destinations.put(webhookDestination(id));
  for (const [destination, key, status] of [
    ['acme_orders', 'q1', 'QUEUED'],
    ['acme_orders', 'd1', 'DEAD'],
    ['acme_orders', 'ok', 'DELIVERED'],
    ['acme_orders', 'p1', 'PENDING'],
    ['acme_users', 'd2', 'DEAD'],
    ['acme_paused', 'q2', 'QUEUED'],
    ['globex_orders', 'd3', 'DEAD'],
  ] as const) {
    await deliveries.put(record(destination, key, status));
  }
  return { deps, destinations, deliveries, published, changed, logged };
}

describe('POST /admin/destinations/{id}/suspend', () => {
  test('suspends as an automatic suspension does: state, cache told, ERROR line, notification; cause manual, by the caller', async () => {
    const { deps, destinations, published, changed, logged } = await setup();
    const r = await postSuspend(deps, 'acme_orders', { reason: 'maintenance' }, 'key:k1');
    expect(r).toMatchObject({ kind: 'ok', body: { destination: { id: 'orders', account: 'acme', status: 'suspended', suspension: { cause: 'manual', reason: 'maintenance', by: 'key:k1', at: NOW.toISOString(), attempts1h: 10 } } } });
    expect((await destinations.get('acme_orders'))!.status).toBe('suspended');
    expect(changed).toEqual(['acme_orders']);
    expect(published).toEqual([
      {
        topic: 'herald-notifications',
        data: expect.objectContaining({ type: 'herald.destination.suspended', cause: 'manual', by: 'key:k1', reason: 'maintenance' }) as unknown,
        attributes: { 'herald-type': 'herald.destination.suspended', 'herald-destination': 'acme_orders' },
      },
    ]);
    expect(logged).toContainEqual(expect.objectContaining({ level: 'error', message: 'destination suspended: maintenance', fields: expect.objectContaining({ cause: 'manual', by: 'key:k1' }) as unknown }));
  });

  test('409 when already suspended, nothing published again; reactivate undoes it', async () => {
    const { deps, published } = await setup();
    expect((await postSuspend(deps, 'acme_orders', undefined, 'admin')).kind).toBe('ok');
    expect(await postSuspend(deps, 'acme_orders', {}, 'admin')).toEqual({ kind: 'conflict', body: { error: expect.stringMatching(/^destination "acme_orders" is already suspended since .* \(manual\): suspended by hand by admin; reactivate it/) as unknown } });
    expect(published).toHaveLength(1);
    expect(await postReactivate(deps, 'acme_orders')).toMatchObject({ kind: 'ok', body: { destination: { status: 'active' }, redelivered: 1 } });
    expect((await postSuspend(deps, 'acme_orders', {}, 'admin')).kind).toBe('ok');
  });

  test('404 for an unknown destination, 400 for a bad id or body, each problem named', async () => {
    const { deps } = await setup();
    expect((await postSuspend(deps, 'acme_nope', {}, 'admin')).kind).toBe('not-found');
    expect((await postSuspend(deps, 'Not An Id', {}, 'admin')).kind).toBe('invalid');
    expect(await postSuspend(deps, 'acme_orders', { reason: 'x'.repeat(201), by: 'me' }, 'admin')).toEqual({
      kind: 'invalid',
      body: { error: 'invalid suspend request', issues: [{ path: 'reason', message: 'reason is at most 200 characters' }, { path: '', message: 'unknown field by: a suspend request is {"reason"?: string}' }] },
    });
    expect(await postSuspend(deps, 'acme_orders', { reason: ' ' }, 'admin')).toMatchObject({ kind: 'invalid', body: { issues: [{ path: 'reason', message: 'reason must not be blank: leave it out to give none' }] } });
  });
});

describe('POST /admin/deliveries/redeliver {"ids"}', () => {
  test('only the QUEUED or DEAD ones named start over; others reported with their status; a suspended destination named and left', async () => {
    const { deps, deliveries } = await setup();
    expect((await postSuspend(deps, 'acme_paused', {}, 'admin')).kind).toBe('ok');
    const ids = ['acme_orders.q1', 'acme_orders.d1', 'acme_orders.ok', 'acme_orders.p1', 'acme_paused.q2', 'acme_orders.missing'];
    const r = await postAccountRedeliver(deps, 'acme', { ids });
    expect(r).toEqual({
      kind: 'accepted',
      body: {
        redelivered: 2,
        results: [
          { id: 'acme_orders.q1', outcome: 'redelivered', from: 'QUEUED', status: 'PENDING' },
          { id: 'acme_orders.d1', outcome: 'redelivered', from: 'DEAD', status: 'PENDING' },
          { id: 'acme_orders.ok', outcome: 'skipped', status: 'DELIVERED' },
          { id: 'acme_orders.p1', outcome: 'skipped', status: 'PENDING' },
          { id: 'acme_paused.q2', outcome: 'suspended', status: 'QUEUED', destination: 'paused' },
          { id: 'acme_orders.missing', outcome: 'not-found' },
        ],
        suspended: ['paused'],
      },
    });
    // PENDING, due now, a fresh retry budget: the redeliver transition.
    expect(await deliveries.get('acme_orders.d1')).toMatchObject({ status: 'PENDING', attempts: 0, availableAt: NOW.toISOString() });
    expect((await deliveries.get('acme_paused.q2'))!.status).toBe('QUEUED');
    expect((await deliveries.get('acme_users.d2'))!.status).toBe('DEAD');
  });

  test("another account's delivery, or one of a destination the caller does not see, is not found and never touched", async () => {
    const { deps, deliveries } = await setup();
    const r = await postAccountRedeliver(deps, 'acme', { ids: ['globex_orders.d3', 'acme_users.d2', 'acme_orders.d1'] }, (id) => id === 'orders');
    expect(r).toEqual({
      kind: 'accepted',
      body: {
        redelivered: 1,
        results: [
          { id: 'globex_orders.d3', outcome: 'not-found' },
          { id: 'acme_users.d2', outcome: 'not-found' },
          { id: 'acme_orders.d1', outcome: 'redelivered', from: 'DEAD', status: 'PENDING' },
        ],
        suspended: [],
      },
    });
    expect((await deliveries.get('globex_orders.d3'))!.status).toBe('DEAD');
    expect((await deliveries.get('acme_users.d2'))!.status).toBe('DEAD');
  });

  test('ids excludes status and url; 1 to 100 ids, each a delivery id, each once', async () => {
    const { deps } = await setup();
    expect(await postAccountRedeliver(deps, 'acme', { ids: ['acme_orders.d1'], status: 'dead' })).toMatchObject({ kind: 'invalid', body: { issues: [{ path: 'status', message: expect.stringMatching(/^status cannot be given with ids/) as unknown }] } });
    expect(await postAccountRedeliver(deps, 'acme', { ids: [] })).toMatchObject({ kind: 'invalid', body: { issues: [{ path: 'ids', message: 'ids must list 1 to 100 delivery ids' }] } });
    expect(await postAccountRedeliver(deps, 'acme', { ids: Array.from({ length: 101 }, (_, i) => `acme_orders.k${i}`) })).toMatchObject({ kind: 'invalid', body: { issues: [{ path: 'ids', message: 'ids must list 1 to 100 delivery ids' }] } });
    expect(await postAccountRedeliver(deps, 'acme', { ids: ['acme_orders.d1', '../etc', 'acme_orders.d1', 7] })).toMatchObject({
      kind: 'invalid',
      body: {
        issues: [
          { path: 'ids[1]', message: expect.stringMatching(/^not a delivery id/) as unknown },
          { path: 'ids[3]', message: 'a delivery id must be a string' },
        ],
      },
    });
    expect(await postAccountRedeliver(deps, 'acme', { ids: ['acme_orders.d1', 'acme_orders.d1'] })).toMatchObject({ kind: 'invalid', body: { issues: [{ path: 'ids[1]', message: 'the same delivery as ids[0]: name each once' }] } });
    expect(await postAccountRedeliver(deps, 'acme', { ids: 'acme_orders.d1' })).toMatchObject({ kind: 'invalid', body: { issues: [{ path: 'ids', message: 'ids must be an array of delivery ids (1 to 100)' }] } });
  });

  test('without ids, as before: every QUEUED one of the account (status defaults to queued)', async () => {
    const { deps } = await setup();
    expect(await postAccountRedeliver(deps, 'acme', undefined)).toEqual({ kind: 'accepted', body: { redelivered: 2, status: 'QUEUED', destinations: [{ id: 'orders', redelivered: 1 }, { id: 'paused', redelivered: 1 }, { id: 'users', redelivered: 0 }], suspended: [] } });
  });
});
