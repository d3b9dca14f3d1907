/**
 * The usage export (docs/usage.md#exporting-to-bigquery): each day's usage of every account, as
 * rows of a warehouse table (BigQuery), one per (account, day) — the admin API's row of that
 * day, flattened. Pure: the columns (the table's schema, which the Pulumi program declares from
 * here), the rows and the day to export; no I/O, no clock.
 */
import { usageDay, usageRows } from './usage';
import { UsageCounts, UsageOutcome } from './usage-counts';

/** A column of the export's table, in BigQuery's terms. */
export interface UsageExportColumn {
  name: keyof UsageExportRow;
  type: 'STRING' | 'DATE' | 'INT64' | 'FLOAT64';
  description: string;
}

/** One account's usage in one UTC day, as the table holds it: GET /admin/accounts/{id}/usage's row, `attempts` a column per outcome. */
export interface UsageExportRow {
  account: string;
  /** `YYYY-MM-DD` (UTC): the table's partition. */
  day: string;
  eventsAccepted: number;
  eventsRefused: number;
  operationalEvents: number;
  deliveries: number;
  attemptsSuccess: number;
  attemptsHttpError: number;
  attemptsTimeout: number;
  attemptsNetwork: number;
  attemptsRefused: number;
  delivered: number;
  bytesSent: number;
  modeledCostUsd: number;
}

/** Each outcome's column. */
export const ATTEMPT_COLUMNS: Record<UsageOutcome, keyof UsageExportRow> = {
  success: 'attemptsSuccess',
  'http-error': 'attemptsHttpError',
  timeout: 'attemptsTimeout',
  network: 'attemptsNetwork',
  refused: 'attemptsRefused',
};

const count = (name: keyof UsageExportRow, description: string): UsageExportColumn => ({ name, type: 'INT64', description });

/** The table's schema, in row order (docs/usage.md#exporting-to-bigquery names each). */
export const USAGE_EXPORT_COLUMNS: readonly UsageExportColumn[] = [
  { name: 'account', type: 'STRING', description: 'The account (its id)' },
  { name: 'day', type: 'DATE', description: 'The UTC day counted' },
  count('eventsAccepted', 'Events POST /ingest accepted'),
  count('eventsRefused', 'Events refused (a request refused before its events were read counts as one)'),
  count('operationalEvents', "Of the accepted, Herald's own operational events"),
  count('deliveries', '(event, destination) pairs: delivery records created'),
  count('attemptsSuccess', 'Attempts answered 2xx (or publishes Pub/Sub took)'),
  count('attemptsHttpError', 'Attempts answered another status'),
  count('attemptsTimeout', 'Attempts that timed out'),
  count('attemptsNetwork', 'Attempts that failed on the network'),
  count('attemptsRefused', 'Attempts refused unsent (the SSRF guard, the topic allow-list)'),
  count('delivered', 'Deliveries whose record became DELIVERED'),
  count('bytesSent', 'Body bytes of the attempts'),
  { name: 'modeledCostUsd', type: 'FLOAT64', description: 'The modeled GCP cost of the usage, US dollars (docs/usage.md#the-modeled-cost)' },
];

/**
 * Every account's row of `day`, sorted by account: each exactly the admin API's row of that day
 * (usageRows: the same sums, the same modeled cost), for the accounts that counted something.
 */
export function usageExportRows(day: string, stored: ReadonlyMap<string, ReadonlyMap<string, UsageCounts>>): UsageExportRow[] {
  return [...stored]
    .filter(([, days]) => days.has(day))
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([account, days]) => {
      const [row] = usageRows(days, day, day, 'day');
      const { date: _date, attempts, ...counts } = row!;
      const byOutcome = Object.fromEntries(Object.entries(ATTEMPT_COLUMNS).map(([outcome, column]) => [column, attempts[outcome] ?? 0]));
      return { account, day, ...counts, ...byOutcome } as UsageExportRow;
    });
}

/** The UTC day before the one `now` (epoch ms) is in: what the daily export takes, complete once its last flushes landed. */
export function previousUsageDay(now: number): string {
  return usageDay(Date.parse(`${usageDay(now)}T00:00:00Z`) - 86_400_000);
}
