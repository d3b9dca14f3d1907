import { DeclaredLanes } from '../../shared/adapters/pubsub/declared-lanes';
import { MemoryDestinationStore } from '../../shared/adapters/memory/destination-store';
import { putDestination } from '../../shared/app/admin/destinations-admin';
import { DestinationDirectory } from '../../shared/app/destinations/destination-directory';
import { ConfigError, loadConfig } from '../../shared/config';
import { createLogger } from '../../shared/log';

/**
 * On GCP the Pulumi program makes the dedicated lanes (HERALD_LANE_PROVISIONING=declared), so
 * that Herald's identity needs no project-wide Pub/Sub role: a dedicated lane it was not given is
 * refused at registration, saying what to declare, with nothing written.
 */

const NOW = new Date('2026-12-01T10:00:00.000Z');

function admin(lanes: DeclaredLanes) {
  const destinations = new MemoryDestinationStore();
  const deps = {
    destinations,
    directory: new DestinationDirectory(destinations, { now: () => NOW }, 0),
    lanes,
    clock: { now: () => NOW },
    log: createLogger({ write: () => undefined }),
    addressRules: { allowLoopback: false },
    resolver: { lookup: async () => [{ address: '93.184.215.14', family: 4 as const }] },
  } as unknown as Parameters<typeof putDestination>[0];
  return { destinations, put: (id: string, spec: Record<string, unknown>) => putDestination(deps, id, { url: 'https://hooks.example.com/x', ...spec }) };
}

test('a declared dedicated lane is taken; any other is a 409 naming herald:dedicatedLanes, and nothing is written', async () => {
  const h = admin(new DeclaredLanes(['acme_orders']));
  expect((await h.put('acme_orders', { lane: 'dedicated' })).kind).toBe('created');
  const refused = await h.put('acme_billing', { lane: 'dedicated' });
  expect(refused).toMatchObject({ kind: 'conflict', body: { error: expect.stringContaining('add "acme_billing" to herald:dedicatedLanes and run pulumi up'), issues: [{ path: 'lane' }] } });
  expect(await h.destinations.get('acme_billing')).toBeUndefined();
  // Shared lanes need nothing declared.
  expect((await h.put('acme_billing', {})).kind).toBe('created');
});

test('removing a lane is the stack\'s business: nothing is deleted', async () => {
  await expect(new DeclaredLanes(['orders']).removeLane()).resolves.toBeUndefined();
});

test('HERALD_LANE_PROVISIONING and HERALD_DEDICATED_LANES: runtime by default; declared with the ids as Herald names them', () => {
  expect(loadConfig({}).laneProvisioning).toBe('runtime');
  expect(loadConfig({ HERALD_LANE_PROVISIONING: 'declared', HERALD_DEDICATED_LANES: 'orders, acme_orders' })).toMatchObject({ laneProvisioning: 'declared', dedicatedLanes: ['orders', 'acme_orders'] });
  expect(() => loadConfig({ HERALD_LANE_PROVISIONING: 'never' })).toThrow(ConfigError);
  expect(() => loadConfig({ HERALD_DEDICATED_LANES: 'Orders' })).toThrow(/HERALD_DEDICATED_LANES.*destination id as Herald names it/);
});
