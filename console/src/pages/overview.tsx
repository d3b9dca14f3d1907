import { useMemo, useState } from 'preact/hooks';
import { ApiError, get } from '../api';
import { TimeChart } from '../chart';
import { acct, Ctx } from '../ctx';
import { Stats } from '../types';
import { HeraldHealth } from './health';
import { Empty, ErrorBox, fmtRate, href, Loading, DataTable, Tile, useLoad } from '../ui';

function latencyOf(l: Stats['latencyMs']): { p50?: number; p99?: number } {
  if (typeof l === 'number') return { p50: l };
  return l ?? {};
}

const ms = (v: number | undefined) => (v === undefined ? '—' : `${Math.round(v)} ms`);

export function Overview({ ctx }: { ctx: Ctx }) {
  const [window, setWindow] = useState<'1h' | '24h'>('1h');
  const stats = useLoad(() => get<Stats>(`${acct(ctx)}/stats?window=${window}`), [ctx.account, window]);
  const s = stats.data;
  const chart = useMemo(() => {
    if (!s) return undefined;
    const times = s.series.map((b) => Date.parse(b.start) / 1000);
    const perSecond = (n: number) => Math.round((n / (s.bucketMs / 1000)) * 1000) / 1000;
    return {
      times,
      deliveries: [
        { label: 'attempts/s', stroke: 'var(--chart-1)', values: s.series.map((b) => perSecond(b.attempts)) },
        { label: 'successes/s', stroke: 'var(--chart-2)', values: s.series.map((b) => perSecond(b.successes)) },
        { label: 'failures/s', stroke: 'var(--chart-3)', values: s.series.map((b) => perSecond(b.failures)) },
      ],
      rate: [{ label: 'success rate', stroke: 'var(--chart-2)', values: s.series.map((b) => (b.successes + b.failures > 0 ? Math.round((b.successes / (b.successes + b.failures)) * 1000) / 10 : null)) }],
      latency: [
        { label: 'p50 ms', stroke: 'var(--chart-1)', values: s.series.map((b) => b.p50Ms ?? null) },
        { label: 'p99 ms', stroke: 'var(--chart-3)', values: s.series.map((b) => b.p99Ms ?? null) },
      ],
      hasLatency: s.series.some((b) => b.p50Ms !== undefined),
      settled: [
        { label: 'became queued', stroke: 'var(--chart-1)', values: s.series.map((b) => b.queued ?? 0) },
        { label: 'became dead', stroke: 'var(--chart-3)', values: s.series.map((b) => b.dead ?? 0) },
      ],
      hasSettled: s.series.some((b) => (b.queued ?? 0) + (b.dead ?? 0) > 0),
    };
  }, [s]);
  const total = s?.series.reduce((n, b) => n + b.attempts, 0) ?? 0;
  const latency = latencyOf(s?.latencyMs);
  // The admin token sees Herald's own health first: the whole deployment's, before one account's.
  const operator = ctx.session.kind === 'operator';
  return (
    <section aria-labelledby="overview-title">
      {operator && <h1 id="overview-title">Overview</h1>}
      {operator && <HeraldHealth />}
      <div class="page-head">
        {operator ? <h2>Account {ctx.account}</h2> : <h1 id="overview-title">Overview</h1>}
        <div class="segmented" role="group" aria-label="Time window">
          {(['1h', '24h'] as const).map((w) => (
            <button key={w} type="button" aria-pressed={window === w} onClick={() => setWindow(w)}>
              Last {w === '1h' ? 'hour' : 'day'}
            </button>
          ))}
        </div>
      </div>
      {stats.loading && !s && <Loading what="the account's numbers" />}
      {stats.error !== undefined && (
        <ErrorBox
          error={stats.error}
          title={stats.error instanceof ApiError && stats.error.status === 404 ? 'This Herald has no statistics endpoint yet' : 'Could not load the statistics'}
        />
      )}
      {s && (
        <>
          <dl class="tiles">
            <Tile label="Attempts" testId="stat-attempts">{total}</Tile>
            <Tile label="Success rate" testId="stat-success">{fmtRate(s.successRate)}</Tile>
            <Tile label="Latency p50 / p99" testId="stat-latency">
              {ms(latency.p50)} / {ms(latency.p99)}
            </Tile>
            <Tile label="Queued" testId="stat-queued">
              <a href={href('/queued', { status: 'queued' })}>{s.queued}</a>
            </Tile>
            <Tile label="Dead" testId="stat-dead">
              <a href={href('/queued', { status: 'dead' })}>{s.dead}</a>
            </Tile>
          </dl>
          {total === 0 ? (
            <Empty title={`No delivery attempts in the last ${window === '1h' ? 'hour' : 'day'}.`}>
              <p>
                Add a <a href={href('/destinations/new')}>destination</a>, then publish an event to <code>POST /ingest</code>: its attempts show here.
              </p>
            </Empty>
          ) : (
            chart && (
              <div class="charts">
                <TimeChart title="Deliveries per second" times={chart.times} series={chart.deliveries} />
                <TimeChart title="Success rate (%)" times={chart.times} series={chart.rate} yFormat={(v) => `${v}%`} yRange={[0, 100]} />
                {chart.hasSettled && <TimeChart title="Deliveries that became queued or dead, per interval" times={chart.times} series={chart.settled} />}
                {chart.hasLatency && <TimeChart title="Attempt latency, p50 and p99 (ms)" times={chart.times} series={chart.latency} yFormat={(v) => (v >= 1000 ? `${v / 1000} s` : String(v))} />}
              </div>
            )
          )}
          {total > 0 && (
            <details class="numbers">
              <summary>The numbers behind the charts</summary>
              <DataTable label="Attempts per interval" columns={['From', 'Attempts', 'Successes', 'Failures', 'p50', 'p99', 'Became queued', 'Became dead']}>
                    {s.series
                      .filter((b) => b.attempts > 0)
                      .map((b) => (
                        <tr key={b.start}>
                          <td>{new Date(b.start).toLocaleTimeString()}</td>
                          <td>{b.attempts}</td>
                          <td>{b.successes}</td>
                          <td>{b.failures}</td>
                          <td>{ms(b.p50Ms)}</td>
                          <td>{ms(b.p99Ms)}</td>
                          <td>{b.queued ?? 0}</td>
                          <td>{b.dead ?? 0}</td>
                        </tr>
                      ))}
              </DataTable>
            </details>
          )}
        </>
      )}
    </section>
  );
}
