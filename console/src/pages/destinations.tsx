import { useMemo } from 'preact/hooks';
import { get, seg } from '../api';
import { acct, canWrite, Ctx, visibleDestination } from '../ctx';
import { Destination } from '../types';
import type { Stats } from '../types';
import { Sparkline } from '../chart';
import { Empty, ErrorBox, fmtRate, href, Loading, StatusBadge, DataTable, useLoad } from '../ui';

/** A destination's list entry with its rolling hour (GET …/destinations/{id} has the stats). */
async function withStats(ctx: Ctx, list: Destination[]): Promise<Destination[]> {
  return Promise.all(
    list.slice(0, 100).map((d) =>
      get<Destination>(`${acct(ctx)}/destinations/${seg(d.id)}`).catch(() => d),
    ),
  );
}

/**
 * The destination's state, and beside it, while active, how near it is to a threshold
 * suspension: `failing` once its failure rate reached a fraction of the rate that suspends it.
 */
export function State({ d }: { d: Destination }) {
  if (d.status === 'suspended') return <StatusBadge status="suspended" />;
  const state = <StatusBadge status={d.failureMode === 'queue' ? 'queueing' : 'active'} />;
  if (!d.failing) return state;
  const reached = `failure rate ${fmtRate(d.failing.failureRate)}, at ${Math.round(d.failing.fraction * 100)} % of the rate that suspends it`;
  return (
    <>
      {state}{' '}
      <span class="badge badge-failing" title={`Since ${d.failing.at}`}>
        failing: {reached}
      </span>
    </>
  );
}

export function Destinations({ ctx }: { ctx: Ctx }) {
  const list = useLoad(async () => {
    const page = await get<{ destinations: Destination[] }>(`${acct(ctx)}/destinations`);
    return withStats(ctx, page.destinations.filter((d) => visibleDestination(ctx, d.id)));
  }, [ctx.account]);
  return (
    <section aria-labelledby="destinations-title">
      <div class="page-head">
        <h1 id="destinations-title">Destinations</h1>
        {canWrite(ctx) && (
          <a class="button primary" href={href('/destinations/new')}>
            New destination
          </a>
        )}
      </div>
      {list.loading && !list.data && <Loading what="destinations" />}
      <ErrorBox error={list.error} title="Could not list the destinations" />
      {list.data &&
        (list.data.length === 0 ? (
          <Empty title="No destinations yet.">
            <p>
              A destination is a webhook URL (or a Pub/Sub topic) and the event types it takes.{' '}
              {canWrite(ctx) ? <a href={href('/destinations/new')}>Add the first one</a> : 'Ask the platform to add one for you.'}
            </p>
          </Empty>
        ) : (
          <DataTable label="Destinations" columns={['Destination', 'Sends to', 'Event types', 'State', 'Success (1 h)', 'Rate']}>
                {list.data.map((d) => (
                  <tr key={d.id}>
                    <td>
                      <a href={href(`/destinations/${d.id}`)}>{d.id}</a>
                    </td>
                    <td class="url">{d.url ?? d.topic}</td>
                    <td>{d.eventTypes.join(', ')}</td>
                    <td>
                      <State d={d} />
                    </td>
                    <td>
                      <span class="success-cell">
                        <Meter rate={d.stats?.successRate1h} attempts={d.stats?.attempts1h} />
                        {d.stats?.attempts1h ? <SuccessSparkline ctx={ctx} id={d.id} /> : null}
                      </span>
                    </td>
                    <td>{d.stats ? `${d.stats.rate}/s` : '—'}</td>
                  </tr>
                ))}
          </DataTable>
        ))}
    </section>
  );
}

/**
 * The hour's success rate minute by minute (GET …/stats?window=1h&destination=): a sparkline
 * named with the hour's rate; nothing while it loads, when it fails or with nothing counted.
 */
function SuccessSparkline({ ctx, id }: { ctx: Ctx; id: string }) {
  const stats = useLoad(() => get<Stats>(`${acct(ctx)}/stats?window=1h&counts=false&destination=${encodeURIComponent(id)}`), [ctx.account, id]);
  const s = stats.data;
  const line = useMemo(
    () => s && { times: s.series.map((b) => Date.parse(b.start) / 1000), values: s.series.map((b) => (b.successes + b.failures > 0 ? (b.successes / (b.successes + b.failures)) * 100 : null)) },
    [s],
  );
  if (!s || !line || s.successRate === undefined) return null;
  return <Sparkline label={`${id}: success rate over the last hour: ${fmtRate(s.successRate)}`} times={line.times} values={line.values} yRange={[0, 100]} testId="success-sparkline" />;
}

export /** The hour's success rate as a bar and a number (the number is what is read out). */
function Meter({ rate, attempts }: { rate?: number; attempts?: number }) {
  if (rate === undefined) return <span class="muted">no attempts</span>;
  return (
    <span class="meter-wrap">
      <meter min={0} max={1} low={0.9} high={0.99} optimum={1} value={rate} aria-hidden="true" />
      <span>
        {fmtRate(rate)} <span class="muted">of {attempts}</span>
      </span>
    </span>
  );
}
