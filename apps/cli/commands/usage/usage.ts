import { Command } from 'commander';
import { z } from 'zod';
import { isCalendarDay, usageCsv, UsageDay, USAGE_OUTCOMES } from '../../../../shared/domain/usage/usage';
import { objectOf, unexpected } from '../../answers';
import { CommandContext, connectionOptions, usageError, validate } from '../../context';
import { accountIdSchema } from '../../credentials';
import { table } from '../destination-args';

/**
 * `herald usage <account>`: what an account used per UTC day or month (GET
 * /admin/accounts/{id}/usage), or `--all`: every account's over the range, summed (GET
 * /admin/usage, the operator's). A table; `--csv` the same CSV the API answers; `--json` the answer.
 */

const dayOption = (flag: string) => z.string().refine(isCalendarDay, `${flag} must be a calendar day as YYYY-MM-DD (UTC), e.g. 2026-11-01`).optional();
const optionsSchema = z.object({ account: accountIdSchema.optional(), from: dayOption('--from'), to: dayOption('--to') });
const NAMES = { account: '<account>', from: '--from', to: '--to' };

const dollars = (n: number) => `$${n.toFixed(6)}`;
const attemptsText = (a: Record<string, number>) => USAGE_OUTCOMES.filter((o) => a[o]).map((o) => `${o} ${a[o]}`).join(', ') || '0';

/** A row per day (or account): the counts side by side, attempts by outcome in one column. */
export function usageTable(rows: readonly (UsageDay & { account?: string })[], first: 'DATE' | 'ACCOUNT'): string {
  return table([
    [first, 'ACCEPTED', 'REFUSED', 'OPERATIONAL', 'DELIVERIES', 'DELIVERED', 'ATTEMPTS', 'BYTES SENT', 'MODELED COST'],
    ...rows.map((r) => [first === 'DATE' ? r.date : r.account!, r.eventsAccepted, r.eventsRefused, r.operationalEvents, r.deliveries, r.delivered, attemptsText(r.attempts), r.bytesSent, dollars(r.modeledCostUsd)].map(String)),
  ]);
}

export function registerUsage(program: Command, ctx: CommandContext): void {
  const usage = program
    .command('usage')
    .argument('[account]', 'account id (a key: its own; leave out with --all)')
    .description("an account's usage per UTC day: events accepted and refused, deliveries, attempts by outcome, bytes sent, modeled GCP cost")
    .option('--from <day>', 'first day, YYYY-MM-DD UTC (default: the first of this month)')
    .option('--to <day>', 'last day, YYYY-MM-DD UTC (default: today)')
    .option('--month', 'a row per month instead of per day')
    .option('--all', "every account's usage over the range, a row each (operator only)")
    .option('--csv', 'print CSV (a header line, then a row per day or account)')
    .option('--json', 'print the answer as JSON');
  connectionOptions(usage, 'admin', { account: 'ignore' });
  usage.addHelpText(
    'after',
    `
Counted as docs/usage.md says; the modeled cost is the bench's cost model at list prices, not a bill.

Examples:
  herald usage acme
  herald usage acme --from 2026-11-01 --to 2026-11-30 --csv > acme-november.csv
  herald usage acme --from 2026-01-01 --to 2026-12-31 --month
  herald usage --all --from 2026-11-01 --to 2026-11-30`,
  );
  usage.action(async (account: string | undefined) => {
    const opts = usage.opts<{ from?: string; to?: string; month?: boolean; all?: boolean; csv?: boolean; json?: boolean }>();
    const input = validate(optionsSchema, { account, from: opts.from, to: opts.to }, NAMES, usage);
    if ((input.account === undefined) === !opts.all) throw usageError(usage, [{ path: '<account>', message: opts.all ? 'give an account or --all, not both' : 'name the account (herald usage <account>), or give --all for every account' }]);
    const query = new URLSearchParams({ ...(input.from ? { from: input.from } : {}), ...(input.to ? { to: input.to } : {}), ...(opts.month ? { granularity: 'month' } : {}) }).toString();
    const client = ctx.client(usage, 'admin');
    const to = input.account === undefined ? `/admin/usage?${query}` : `/admin/accounts/${encodeURIComponent(input.account)}/usage?${query}`;
    const call = `GET ${to.split('?')[0]}`;
    const answer = objectOf(call, (await client.request('admin', 'GET', to)).body);
    const rows = (input.account === undefined ? answer.accounts : answer.days) as (UsageDay & { account?: string })[] | undefined;
    if (!Array.isArray(rows)) throw unexpected(call, answer);
    if (opts.json) ctx.json(answer);
    // Every account's rows carry the account in the first column, where a day's carry its date.
    else if (opts.csv) ctx.out(usageCsv(input.account === undefined ? rows.map((r) => ({ ...r, date: r.account! })) : rows).trimEnd());
    else ctx.out(usageTable(rows, input.account === undefined ? 'ACCOUNT' : 'DATE'));
  });
}
