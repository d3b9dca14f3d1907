/**
 * Usage per account and UTC day (docs/usage.md): what an account used,
 * as counted where Herald already counts (domain only: the sums, the days, the months, the
 * answer's rows). Pure: no I/O, no clock.
 */
import { usageCostUsd } from './usage-cost';
import { addUsage, emptyUsage, UsageCounts, UsageDay, USAGE_OUTCOMES, UsageOutcome } from './usage-counts';

export * from './usage-counts';

/** The UTC day (`YYYY-MM-DD`) of an epoch-ms time. */
export function usageDay(at: number): string {
  return new Date(at).toISOString().slice(0, 10);
}

/** The outcome an attempt counts under: a 2xx (or a publish Pub/Sub took), another status, a timeout, a network error, or refused unsent (SSRF guard, a topic not allowed). */
export function usageOutcome(result: { kind: string; status?: number }): UsageOutcome {
  if (result.kind === 'published' || (result.kind === 'response' && result.status !== undefined && result.status >= 200 && result.status < 300)) return 'success';
  if (result.kind === 'response') return 'http-error';
  if (result.kind === 'timeout') return 'timeout';
  if (result.kind === 'network') return 'network';
  return 'refused';
}

/** Whether an attempt's body left Herald: not when the SSRF guard or the topic allow-list refused it before sending. */
export const sentBytes = (result: { kind: string; problem?: string }, bodyBytes: number): number => (result.kind === 'blocked' || (result.kind === 'topic' && result.problem === 'not-allowed') ? 0 : bodyBytes);

export const DAY_PATTERN = /^\d{4}-\d{2}-\d{2}$/;

/** Whether `YYYY-MM-DD` names a real calendar day. */
export function isCalendarDay(day: string): boolean {
  return DAY_PATTERN.test(day) && usageDay(Date.parse(`${day}T00:00:00Z`)) === day;
}

/** The days from `from` to `to`, both included. */
export function daysBetween(from: string, to: string): string[] {
  const out: string[] = [];
  for (let t = Date.parse(`${from}T00:00:00Z`); t <= Date.parse(`${to}T00:00:00Z`); t += 86_400_000) out.push(usageDay(t));
  return out;
}

export type UsageGranularity = 'day' | 'month';

/**
 * The answer's rows: one per day from `from` to `to` (days with nothing counted as zeros, so a
 * chart and a CSV have every day), or one per month (`date`: its first day within the range),
 * each with the modeled cost of its usage.
 */
export function usageRows(stored: ReadonlyMap<string, UsageCounts>, from: string, to: string, granularity: UsageGranularity): UsageDay[] {
  const rows = new Map<string, UsageCounts>();
  for (const day of daysBetween(from, to)) {
    const key = granularity === 'day' ? day : day.slice(0, 7);
    const row = rows.get(key) ?? emptyUsage();
    rows.set(key, addUsage(row, stored.get(day) ?? {}));
  }
  return [...rows].map(([key, u]) => ({
    date: key.length === 7 ? (key === from.slice(0, 7) ? from : `${key}-01`) : key,
    eventsAccepted: u.eventsAccepted,
    eventsRefused: u.eventsRefused,
    operationalEvents: u.operationalEvents,
    deliveries: u.deliveries,
    attempts: { ...u.attempts },
    delivered: u.delivered,
    bytesSent: u.bytesSent,
    modeledCostUsd: usageCostUsd(u),
  }));
}

/** The rows as CSV: a column per count and per outcome (every outcome, zeros included), a header line first. */
export function usageCsv(rows: readonly UsageDay[]): string {
  const head = ['date', 'eventsAccepted', 'eventsRefused', 'operationalEvents', 'deliveries', ...USAGE_OUTCOMES.map((o) => `attempts.${o}`), 'delivered', 'bytesSent', 'modeledCostUsd'];
  const lines = rows.map((r) => [r.date, r.eventsAccepted, r.eventsRefused, r.operationalEvents, r.deliveries, ...USAGE_OUTCOMES.map((o) => r.attempts[o] ?? 0), r.delivered, r.bytesSent, r.modeledCostUsd].join(','));
  return [head.join(','), ...lines].join('\n') + '\n';
}
