import { z } from 'zod';
import { Caller } from '../../domain/access/account';
import { daysBetween, isCalendarDay, usageCsv, UsageDay, usageDay, usageRows } from '../../domain/usage/usage';
import { issuesFromZod } from '../../domain/events/event';
import { Clock } from '../../ports/clock';
import { Outcome } from '../support/outcome';
import { addUsage, emptyUsage, UsageCounts } from '../../domain/usage/usage-counts';

/** The longest range one request reads: 13 months of days (a year's bills and the month before). */
export const MAX_USAGE_DAYS = 400;

const day = (field: string) =>
  z
    .string({ error: `${field} must be a day, YYYY-MM-DD (UTC)` })
    .refine(isCalendarDay, `${field} must be a calendar day as YYYY-MM-DD (UTC), e.g. 2026-11-01`)
    .optional();

/** GET …/usage's query: from and to (UTC days, both included; default this month so far), and day or month rows. */
export const usageQuerySchema = z
  .strictObject(
    {
      from: day('from'),
      to: day('to'),
      granularity: z.enum(['day', 'month'], { error: 'granularity must be day or month' }).default('day'),
    },
    { error: 'the query takes from, to and granularity only' },
  );

export interface UsageAdminDeps {
  counters: { usage(account: string | undefined, from: string, to: string): Promise<Map<string, Map<string, UsageCounts>>> };
  clock: Clock;
}

export interface UsageAnswer {
  account: string;
  from: string;
  to: string;
  granularity: 'day' | 'month';
  days: UsageDay[];
}

/** The range asked, checked: defaults filled in (this month up to today), `to` not before `from`, at most MAX_USAGE_DAYS. */
function rangeOf(deps: Pick<UsageAdminDeps, 'clock'>, query: unknown): { ok: true; from: string; to: string; granularity: 'day' | 'month' } | { ok: false; outcome: Outcome<never> } {
  const parsed = usageQuerySchema.safeParse(query);
  if (!parsed.success) return { ok: false, outcome: { kind: 'invalid', body: { error: 'invalid usage query', issues: issuesFromZod(parsed.error) } } };
  const today = usageDay(deps.clock.now().getTime());
  const to = parsed.data.to ?? today;
  const from = parsed.data.from ?? `${to.slice(0, 7)}-01`;
  if (to < from) return { ok: false, outcome: { kind: 'invalid', body: { error: 'invalid usage query', issues: [{ path: 'to', message: `to (${to}) is before from (${from}): give a range that runs forward` }] } } };
  const days = daysBetween(from, to).length;
  if (days > MAX_USAGE_DAYS) return { ok: false, outcome: { kind: 'invalid', body: { error: 'invalid usage query', issues: [{ path: 'from', message: `the range holds ${days} days; ask for at most ${MAX_USAGE_DAYS} at once` }] } } };
  return { ok: true, from, to, granularity: parsed.data.granularity };
}

/** GET /admin/accounts/{id}/usage: the account's usage per day (or month), every day of the range a row (docs/usage.md). */
export async function getUsage(deps: UsageAdminDeps, account: string, query: unknown): Promise<Outcome<UsageAnswer>> {
  const range = rangeOf(deps, query);
  if (!range.ok) return range.outcome;
  const stored = (await deps.counters.usage(account, range.from, range.to)).get(account) ?? new Map();
  return { kind: 'ok', body: { account, from: range.from, to: range.to, granularity: range.granularity, days: usageRows(stored, range.from, range.to, range.granularity) } };
}

/** GET /admin/usage: every account's usage over the range (the console's page), one row each, summed, sorted by account (operator only). */
export async function listUsage(deps: UsageAdminDeps, caller: Caller, query: unknown): Promise<Outcome<{ from: string; to: string; accounts: (UsageDay & { account: string })[] }>> {
  if (caller.kind !== 'operator') return { kind: 'forbidden', body: { error: "every account's usage is the operator's to read; an account reads its own at GET /admin/accounts/{id}/usage" } };
  const range = rangeOf(deps, query);
  if (!range.ok) return range.outcome;
  const all = await deps.counters.usage(undefined, range.from, range.to);
  const accounts = [...all]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([account, days]) => {
      const total = emptyUsage();
      for (const u of days.values()) addUsage(total, u);
      const [row] = usageRows(new Map([[range.from, total]]), range.from, range.from, 'day');
      return { account, ...row!, date: range.from };
    });
  return { kind: 'ok', body: { from: range.from, to: range.to, accounts } };
}

/** An account's answer as CSV (Accept: text/csv): its rows, a header line first. */
export const usageAsCsv = (body: UsageAnswer): string => usageCsv(body.days);
