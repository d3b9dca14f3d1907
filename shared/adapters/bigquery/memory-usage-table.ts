import { UsageWarehouse } from '../../app/usage/usage-export';
import { UsageExportRow } from '../../domain/usage/usage-export';

/**
 * The usage export's table in memory, for tests (BigQuery has no emulator, so nothing here runs one):
 * rows by day, a day replaced whole, as a load job with WRITE_TRUNCATE into the day's partition
 * replaces it (usage-table.ts). `failNext` makes the next replace fail and change nothing, as a failed job does.
 */
export class MemoryUsageTable implements UsageWarehouse {
  readonly target = 'memory';
  private readonly days = new Map<string, UsageExportRow[]>();
  /** Replaces asked for, failed ones included. */
  replaces = 0;
  failNext?: Error;

  async replaceDay(day: string, rows: readonly UsageExportRow[]): Promise<void> {
    this.replaces++;
    const failure = this.failNext;
    this.failNext = undefined;
    if (failure) throw failure;
    if (rows.length === 0) this.days.delete(day);
    else this.days.set(day, rows.map((r) => ({ ...r })));
  }

  /** Every row held, as a query of the whole table would return them (by day, then as written). */
  rows(): UsageExportRow[] {
    return [...this.days].sort(([a], [b]) => a.localeCompare(b)).flatMap(([, rows]) => rows.map((r) => ({ ...r })));
  }
}
