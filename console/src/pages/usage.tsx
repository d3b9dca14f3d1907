import { useState } from 'preact/hooks';
import { get, query } from '../api';
import { acct, Ctx } from '../ctx';
import { USAGE_OUTCOMES } from '../../../shared/domain/usage/usage-counts';
import { DataTable, LoadState, TableWrap, useLoad } from '../ui';

/** A usage row as GET …/usage answers it (docs/usage.md). */
interface UsageRow {
  date: string;
  account?: string;
  eventsAccepted: number;
  eventsRefused: number;
  operationalEvents: number;
  deliveries: number;
  attempts: Record<string, number>;
  delivered: number;
  bytesSent: number;
  modeledCostUsd: number;
}

const COLUMNS = [
  { key: 'eventsAccepted', label: 'Accepted' },
  { key: 'eventsRefused', label: 'Refused' },
  { key: 'operationalEvents', label: 'Operational' },
  { key: 'deliveries', label: 'Deliveries' },
  { key: 'delivered', label: 'Delivered' },
  { key: 'attempts', label: 'Attempts' },
  { key: 'bytesSent', label: 'Bytes sent' },
  { key: 'modeledCostUsd', label: 'Modeled cost' },
] as const;
type SortKey = 'account' | (typeof COLUMNS)[number]['key'];

const attemptsOf = (r: UsageRow) => Object.values(r.attempts).reduce((a, b) => a + b, 0);
const valueOf = (r: UsageRow, k: SortKey): number | string => (k === 'account' ? (r.account ?? '') : k === 'attempts' ? attemptsOf(r) : r[k]);
const thisMonth = () => new Date().toISOString().slice(0, 7);

/** The first and last day of `YYYY-MM` (UTC), the last no later than today. */
function monthRange(month: string): { from: string; to: string } {
  const [y, m] = month.split('-').map(Number) as [number, number];
  const last = new Date(Date.UTC(y, m, 0)).toISOString().slice(0, 10);
  const today = new Date().toISOString().slice(0, 10);
  return { from: `${month}-01`, to: last < today ? last : today };
}

function Cells({ r }: { r: UsageRow }) {
  const tip = USAGE_OUTCOMES.filter((o) => r.attempts[o]).map((o) => `${o} ${r.attempts[o]}`).join(', ');
  return (
    <>
      <td class="num">{r.eventsAccepted}</td>
      <td class="num">{r.eventsRefused}</td>
      <td class="num">{r.operationalEvents}</td>
      <td class="num">{r.deliveries}</td>
      <td class="num">{r.delivered}</td>
      <td class="num" title={tip}>
        {attemptsOf(r)}
        {tip && <span class="muted"> ({tip})</span>}
      </td>
      <td class="num">{r.bytesSent}</td>
      <td class="num">${r.modeledCostUsd.toFixed(6)}</td>
    </>
  );
}

/**
 * Usage (docs/usage.md), a month at a glance: the operator sees every account, a row each,
 * sortable by any column; an account (a key, a portal session) its own days.
 */
export function Usage({ ctx }: { ctx: Ctx }) {
  const [month, setMonth] = useState(thisMonth());
  const [sort, setSort] = useState<{ key: SortKey; desc: boolean }>({ key: 'modeledCostUsd', desc: true });
  const all = ctx.session.kind === 'operator';
  const range = monthRange(month);
  const load = useLoad(() => (all ? get<{ accounts: UsageRow[] }>(`/usage${query(range)}`).then((b) => b.accounts) : get<{ days: UsageRow[] }>(`${acct(ctx)}/usage${query(range)}`).then((b) => b.days)), [ctx.account, month, all]);
  const rows = [...(load.data ?? [])].sort((a, b) => {
    const [x, y] = [valueOf(a, sort.key), valueOf(b, sort.key)];
    const order = typeof x === 'string' ? x.localeCompare(String(y)) : x - (y as number);
    return sort.desc ? -order : order;
  });
  const header = (key: SortKey, label: string) => (
    <th scope="col" key={key} aria-sort={sort.key === key ? (sort.desc ? 'descending' : 'ascending') : 'none'}>
      <button type="button" class="link" onClick={() => setSort({ key, desc: sort.key === key ? !sort.desc : key !== 'account' })}>
        {label}
      </button>
    </th>
  );
  return (
    <section aria-labelledby="usage-title">
      <h1 id="usage-title">Usage</h1>
      <p class="muted">
        What {all ? 'each account' : 'this account'} used in the month, UTC days: events accepted and refused, deliveries, attempts by outcome, bytes sent, and the modeled GCP cost (list prices; a model, not a bill). Exact to within a second of counts.
      </p>
      <label for="usage-month">Month</label> <input id="usage-month" type="month" value={month} max={thisMonth()} onChange={(e) => setMonth((e.target as HTMLInputElement).value || thisMonth())} />
      <LoadState load={load} what="the usage" failed="Could not read the usage" />
      {load.data &&
        (all ? (
          <TableWrap label="usage by account">
            <table>
              <thead>
                <tr>
                  {header('account', 'Account')}
                  {COLUMNS.map((c) => header(c.key, c.label))}
                </tr>
              </thead>
              <tbody>
                {rows.length === 0 ? (
                  <tr>
                    <td colSpan={COLUMNS.length + 1} class="muted">
                      Nothing counted in {month}.
                    </td>
                  </tr>
                ) : (
                  rows.map((r) => (
                    <tr key={r.account} data-testid="usage-account">
                      <th scope="row">{r.account}</th>
                      <Cells r={r} />
                    </tr>
                  ))
                )}
              </tbody>
            </table>
          </TableWrap>
        ) : (
          <DataTable label="usage by day" columns={['Day', ...COLUMNS.map((c) => c.label)]}>
            {(load.data ?? []).map((r) => (
              <tr key={r.date} data-testid="usage-day">
                <th scope="row">{r.date}</th>
                <Cells r={r} />
              </tr>
            ))}
          </DataTable>
        ))}
    </section>
  );
}
