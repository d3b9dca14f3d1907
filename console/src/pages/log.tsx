import { useState } from 'preact/hooks';
import { get, query, seg } from '../api';
import { acct, Ctx, visibleDestination } from '../ctx';
import { Delivery, DELIVERY_STATUSES, Destination } from '../types';
import { Empty, ErrorBox, fmtTime, href, Loading, StatusBadge, DataTable, useLoad, useCursors, Pager } from '../ui';

/** What Herald decided after the last attempt, in words. */
function decision(d: Delivery): string {
  switch (d.status) {
    case 'DELIVERED':
      return `delivered ${fmtTime(d.deliveredAt)}`;
    case 'DEAD':
      return `dead: ${d.reason ?? 'no more retries'}`;
    case 'QUEUED':
      return `queued for redelivery: ${d.reason ?? 'the failure policy is queue'}`;
    case 'IN_FLIGHT':
      return 'being attempted now';
    default:
      return d.attempts > 0 ? `retry at ${fmtTime(d.availableAt)}` : `first attempt due ${fmtTime(d.availableAt)}`;
  }
}

/** A delivery's event type and status, as two cells of a row. */
export function TypeAndStatus({ d }: { d: Delivery }) {
  return (
    <>
      <td>
        <code>{d.eventType}</code>
      </td>
      <td>
        <StatusBadge status={d.status} />
      </td>
    </>
  );
}

/** One delivery's detail: the last attempt's answer, the decision taken, every date. */
export function DeliveryDetail({ ctx, id, onClose }: { ctx: Ctx; id: string; onClose: () => void }) {
  const detail = useLoad(() => get<Delivery>(`${acct(ctx)}/deliveries/${seg(id)}`), [id]);
  const d = detail.data;
  return (
    <section class="card detail" aria-labelledby="detail-title" data-testid="delivery-detail">
      <div class="page-head">
        <h2 id="detail-title">Delivery {d?.eventId ?? id}</h2>
        <button type="button" onClick={onClose}>
          Close
        </button>
      </div>
      {detail.loading && !d && <Loading what="the delivery" />}
      <ErrorBox error={detail.error} title="Could not load the delivery" />
      {d && (
        <dl class="props">
          <dt>Status</dt>
          <dd>
            <StatusBadge status={d.status} />
          </dd>
          <dt>Decision</dt>
          <dd>{decision(d)}</dd>
          <dt>Event</dt>
          <dd>
            <code>{d.eventType}</code> from <code>{d.eventSource}</code>, id <code>{d.eventId}</code>
          </dd>
          <dt>Attempts</dt>
          <dd>
            {d.attempts}
            {d.throttled ? ` (${d.throttled} throttled by 429)` : ''}
          </dd>
          <dt>Published</dt>
          <dd>{fmtTime(d.publishedAt)}</dd>
          <dt>First / last attempt</dt>
          <dd>
            {fmtTime(d.firstAttemptAt)} / {fmtTime(d.lastAttemptAt)}
          </dd>
          {d.lastError && (
            <>
              <dt>Last error</dt>
              <dd>
                {d.lastError.status !== undefined && <span>HTTP {d.lastError.status} · </span>}
                <code>{d.lastError.error}</code> at {fmtTime(d.lastError.at)}
                {d.lastError.bodyExcerpt && (
                  <>
                    <span class="sr-only">Response body excerpt:</span>
                    <pre class="excerpt">{d.lastError.bodyExcerpt}</pre>
                  </>
                )}
              </dd>
            </>
          )}
          {d.replays && d.replays.length > 0 && (
            <>
              <dt>Replayed</dt>
              <dd>{d.replays.length} time(s) after it died</dd>
            </>
          )}
          <dt>Delivery id</dt>
          <dd>
            <code>{d.id}</code>
          </dd>
        </dl>
      )}
    </section>
  );
}

/** A destination's deliveries, a page at a time (cursor paging), newest ids first as the API lists them. */
export function DeliveryTable({ ctx, destination, status, limit = 20 }: { ctx: Ctx; destination: string; status: string; limit?: number }) {
  const paging = useCursors();
  const [open, setOpen] = useState<string>();
  const cursor = paging.cursor;
  const page = useLoad(
    () => get<{ deliveries: Delivery[]; nextCursor?: string }>(`${acct(ctx)}/destinations/${seg(destination)}/deliveries${query({ status, limit, cursor })}`),
    [destination, status, cursor],
  );
  const p = page.data;
  return (
    <div>
      <div class="row">
        <button type="button" onClick={() => page.reload()} disabled={page.loading}>
          Refresh
        </button>
      </div>
      {page.loading && !p && <Loading what="deliveries" />}
      <ErrorBox error={page.error} title="Could not list the deliveries" />
      {p &&
        (p.deliveries.length === 0 ? (
          <Empty title={status ? `No ${status.toLowerCase()} deliveries for ${destination}.` : `No deliveries for ${destination} yet.`}>
            <p>
              Publish an event of a type it takes to <code>POST /ingest</code>; each delivery shows here as Herald attempts it.
            </p>
          </Empty>
        ) : (
          <DataTable label={`Deliveries of ${destination}`} columns={['Event', 'Type', 'Status', 'Attempts', 'Last attempt', 'Last error']}>
                {p.deliveries.map((d) => (
                  <tr key={d.id} class={open === d.id ? 'selected' : undefined}>
                    <td>
                      <button type="button" class="link" aria-expanded={open === d.id} onClick={() => setOpen(open === d.id ? undefined : d.id)}>
                        {d.eventId}
                      </button>
                    </td>
                    <TypeAndStatus d={d} />
                    <td>{d.attempts}</td>
                    <td>{fmtTime(d.lastAttemptAt)}</td>
                    <td>{d.lastError?.error ?? '—'}</td>
                  </tr>
                ))}
          </DataTable>
        ))}
      {open && <DeliveryDetail ctx={ctx} id={open} onClose={() => setOpen(undefined)} />}
      {p && <Pager paging={paging} {...(p.nextCursor ? { nextCursor: p.nextCursor } : {})} />}
    </div>
  );
}

export function DeliveryLog({ ctx, params }: { ctx: Ctx; params: URLSearchParams }) {
  const dests = useLoad(() => get<{ destinations: Destination[] }>(`${acct(ctx)}/destinations`), [ctx.account]);
  const list = dests.data?.destinations.filter((d) => visibleDestination(ctx, d.id)) ?? [];
  const chosen = params.get('destination') ?? list[0]?.id ?? '';
  const status = params.get('status') ?? '';
  const go = (destination: string, s: string) => location.assign(href('/log', { destination, status: s }));
  return (
    <section aria-labelledby="log-title">
      <h1 id="log-title">Delivery log</h1>
      {dests.loading && !dests.data && <Loading what="destinations" />}
      <ErrorBox error={dests.error} title="Could not list the destinations" />
      {dests.data &&
        (list.length === 0 ? (
          <Empty title="No destinations, so no deliveries.">
            <p>
              <a href={href('/destinations/new')}>Add a destination</a> first; its deliveries are logged here.
            </p>
          </Empty>
        ) : (
          <>
            <form class="filters" onSubmit={(e) => e.preventDefault()}>
              <div class="field">
                <label for="log-destination">Destination</label>
                <select id="log-destination" value={chosen} onChange={(e) => go((e.target as HTMLSelectElement).value, status)}>
                  {list.map((d) => (
                    <option key={d.id} value={d.id}>
                      {d.id}
                    </option>
                  ))}
                </select>
              </div>
              <div class="field">
                <label for="log-status">Status</label>
                <select id="log-status" value={status} onChange={(e) => go(chosen, (e.target as HTMLSelectElement).value)}>
                  <option value="">any</option>
                  {DELIVERY_STATUSES.map((s) => (
                    <option key={s} value={s}>
                      {s.replace('_', ' ').toLowerCase()}
                    </option>
                  ))}
                </select>
              </div>
            </form>
            {chosen && <DeliveryTable key={`${chosen}${status}`} ctx={ctx} destination={chosen} status={status} limit={50} />}
          </>
        ))}
    </section>
  );
}
