import { UsageExportDeps, UsageWarehouse } from '../app/usage/usage-export';
import { Runtime } from './runtime';

const built = new WeakMap<Runtime, UsageWarehouse>();

/**
 * What the daily usage export needs, from a runtime; undefined where no table is configured
 * (HERALD_USAGE_EXPORT_TABLE). BigQuery's client is loaded on the first export only: the
 * functions that never export (every one but suspension-check, once a day) do not start slower for it.
 */
export async function usageExportDeps(rt: Runtime): Promise<UsageExportDeps | undefined> {
  const table = rt.config.usageExportTable;
  if (table === undefined) return undefined;
  let warehouse = built.get(rt);
  if (warehouse === undefined) {
    const { BigQueryUsageTable } = await import('../adapters/bigquery/usage-table');
    warehouse = new BigQueryUsageTable(table, rt.config.usageExportLocation);
    built.set(rt, warehouse);
  }
  return { counters: rt.counters, warehouse, clock: rt.clock, log: rt.log };
}
