import { z } from 'zod';
import { issuesFromZod } from '../../domain/events/event';
import { isCalendarDay, usageDay } from '../../domain/usage/usage';
import { previousUsageDay, UsageExportRow, usageExportRows } from '../../domain/usage/usage-export';
import { Clock, Logger } from '../../ports/clock';
import { Outcome } from '../support/outcome';
import { UsageAdminDeps } from './usage-admin';

/**
 * Where the usage export writes (adapters/bigquery): a table of rows per day. Replacing a day is
 * one atomic step, so a day exported again — the schedule's retry, an operator's re-run after
 * late counts — holds each account's row once, never twice.
 */
export interface UsageWarehouse {
  /** Makes `rows` the table's rows of `day`, in place of whatever it held for that day (none: the day emptied). */
  replaceDay(day: string, rows: readonly UsageExportRow[]): Promise<void>;
  /** Where it writes, for the log (`project.dataset.table`). */
  readonly target: string;
}

export interface UsageExportDeps {
  counters: UsageAdminDeps['counters'];
  warehouse: UsageWarehouse;
  clock: Clock;
  log: Logger;
}

export interface UsageExportReport {
  day: string;
  /** Rows written: one per account that counted something that day. */
  rows: number;
  target: string;
}

/** The scheduled call's query: the export task, and the day (default: yesterday, UTC). Other parameters (local mode's push token) are not the export's. */
export const usageExportQuerySchema = z.object({
  task: z.literal('usage-export', { error: 'task must be usage-export (the only task besides the suspension check, which takes none)' }),
  day: z
    .string({ error: 'day must be a day, YYYY-MM-DD (UTC)' })
    .refine(isCalendarDay, 'day must be a calendar day as YYYY-MM-DD (UTC), e.g. 2026-11-01')
    .optional(),
});

/**
 * Exports one day's usage of every account (default: yesterday, UTC) to the warehouse, in place
 * of what it held for that day. Each row is the admin API's row of that day (domain/usage/usage-export.ts).
 * Counts are by the moment counted, and a process flushes within HERALD_RATE_FLUSH_MS: a day is
 * complete a few seconds after its end. Today is refused: its rows would be partial.
 */
export async function exportUsageDay(deps: UsageExportDeps, query: unknown): Promise<Outcome<UsageExportReport>> {
  const parsed = usageExportQuerySchema.safeParse(query);
  if (!parsed.success) return { kind: 'invalid', body: { error: 'invalid usage export query', issues: issuesFromZod(parsed.error) } };
  const now = deps.clock.now().getTime();
  const day = parsed.data.day ?? previousUsageDay(now);
  const today = usageDay(now);
  if (day >= today) {
    return { kind: 'invalid', body: { error: 'invalid usage export query', issues: [{ path: 'day', message: `${day} is not over yet (today is ${today}, UTC): export a day before today; its counts are complete` }] } };
  }
  const stored = await deps.counters.usage(undefined, day, day);
  const rows = usageExportRows(day, stored);
  await deps.warehouse.replaceDay(day, rows);
  deps.log.info('usage exported', { day, rows: rows.length, target: deps.warehouse.target });
  return { kind: 'ok', body: { day, rows: rows.length, target: deps.warehouse.target } };
}
