import { MemoryDestinationStore } from '../../shared/adapters/memory/destination-store';
import { StatsAdminDeps } from '../../shared/app/admin/stats-admin';
import { DestinationCounters } from '../../shared/app/destinations/destination-counters';
import { DestinationDirectory } from '../../shared/app/destinations/destination-directory';
import { SuspensionDeps } from '../../shared/app/delivery/suspend-and-reactivate';
import { Clock, Logger } from '../../shared/ports/clock';
import { CounterStore } from '../../shared/ports/counters';
import { webhookDestination } from './destinations';

/**
 * What the suspension check needs around its counters, for tests of the check on counter
 * rollups: webhook destinations (a threshold each) in a registry in memory, and a directory
 * that answers from it; notifications go nowhere.
 */
export async function thresholdCheck(ids: readonly string[], counters: DestinationCounters, clock: Clock, log: Logger): Promise<{ registry: MemoryDestinationStore; deps: SuspensionDeps }> {
  const registry = new MemoryDestinationStore();
  for (const id of ids) await registry.put(webhookDestination(id));
  const directory = { get: (id: string) => registry.get(id), changed: () => undefined } as unknown as DestinationDirectory;
  const policy = { presetTimeoutMs: 10_000, timeScale: 1 };
  const deps = { destinations: registry, deliveries: {}, directory, counters, bus: { publish: async () => 'm' }, notificationsTopic: 'notifications', clock, log, policy } as unknown as SuspensionDeps;
  return { registry, deps };
}

/** Stats deps for an account of `ids` reading through `counters` (rollups), and the same reading the counter documents alone (as before rollups). */
export function statsDeps(ids: readonly string[], clock: Clock, counters: DestinationCounters, store: CounterStore, counterBucketMs: number): { rolled: StatsAdminDeps; raw: StatsAdminDeps } {
  const destinations = { list: async () => ids.map((id) => ({ id })), listAccount: async () => ids.map((id) => ({ id })) } as unknown as StatsAdminDeps['destinations'];
  const base = { destinations, deliveries: { countByStatus: async () => 0 }, clock, counterBucketMs, timeScale: 1 };
  return {
    rolled: { ...base, counters },
    raw: { ...base, counters: { rollupShape: counters.rollupShape, series: (asked: readonly string[], since: number) => store.windows(asked, since) } },
  };
}
