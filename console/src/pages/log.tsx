import { useState } from 'preact/hooks';
import { get, query, seg } from '../api';
import { acct, Ctx, visibleDestination } from '../ctx';
import { Delivery, DELIVERY_STATUSES, Destination } from '../types';
import { Empty, ErrorBox, fmtTime, href, localToIso, Loading, StatusBadge, DataTable, useLoad, useCursors, Pager } from '../ui';

/**
 * A parked ordered delivery waits for its key's earlier events, due never until then (its
 * availableAt is shared/domain/modes/ordering.ts PARKED_AT, which the browser bundle cannot import).
 */
const parked = (d: Delivery) => d.order !== undefined && d.status === 'PENDING' && d.availableAt?.startsWith('9999-') === true;

/** What Herald decided after the last attempt, in words. */
function decision(d: Delivery): string {
  if (parked(d)) return `waits its turn: the earlier events of key ${d.order!.key} go first`;
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

type AttemptDetail = NonNullable<Delivery['attemptLog']>[number];

/** What Herald decided after one attempt, in words. */
function decided(a: AttemptDetail): string {
  switch (a.decision.kind) {
    case 'delivered':
      return 'delivered';
    case 'retry':
      return `retry at ${fmtTime(a.decision.at)}`;
    case 'throttle':
      return `throttled: again at ${fmtTime(a.decision.at)}`;
    case 'dead':
      return `dead: ${a.decision.reason ?? ''}`;
    case 'suspend':
      return `queued, destination suspended: ${a.decision.reason ?? ''}`;
    case 'queue':
      return `queued: ${a.decision.reason ?? ''}`;
  }
}

function Headers({ headers, label }: { headers: Record<string, string>; label: string }) {
  const rows = Object.entries(headers);
  if (rows.length === 0) return <p class="muted">No headers kept.</p>;
  return <pre tabIndex={0} aria-label={label}>{rows.map(([k, v]) => `${k}: ${v}`).join('\n')}</pre>;
}

/** How the receiver was reached, as the attempt detail names it (never the credential). */
const AUTH_NAMES: Record<NonNullable<NonNullable<AttemptDetail['receiver']>['auth']> | 'none', string> = {
  none: 'none',
  apiKey: 'API key',
  basic: 'basic',
  oauth2ClientCredentials: 'OAuth2 client credentials',
  mtls: 'client certificate (mTLS)',
};

const REPLACED_NAMES: Record<NonNullable<NonNullable<AttemptDetail['receiver']>['replaced']>[number], string> = { auth: 'auth', headers: 'headers', tls: 'client certificate' };

/** The newest attempts, newest open: the request as sent (secrets masked), the answer, the decision. */
function Attempts({ attempts, total }: { attempts: AttemptDetail[]; total: number }) {
  return (
    <div class="attempts" data-testid="attempts">
      {total > attempts.length && <p class="muted">The newest {attempts.length} of {total} attempts.</p>}
      {attempts.map((a, i) => (
        <details key={a.at + String(i)} open={i === 0} class="attempt" data-testid="attempt">
          <summary>
            {fmtTime(a.at)} · {a.response ? `HTTP ${a.response.status}` : a.messageId ? 'published' : (a.error ?? 'no answer')} in {a.durationMs} ms → {decided(a)}
          </summary>
          <h3>Request</h3>
          <p>
            {a.target.startsWith('projects/') ? 'Published to' : 'POST'} <code>{a.target}</code> · {a.request.bodyBytes} bytes
          </p>
          {a.receiver && (
            <p data-testid="attempt-receiver">
              Receiver auth <strong>{AUTH_NAMES[a.receiver.auth ?? 'none']}</strong> · signed {a.receiver.signature.join(' and ')}
              {a.receiver.replaced && ` · sent again with the replaced ${a.receiver.replaced.map((r) => REPLACED_NAMES[r]).join(' and ')} (refused the new; grace period)`} (credentials are never shown)
            </p>
          )}
          <Headers headers={a.request.headers} label="Request headers" />
          {a.request.body && (
            <>
              <p class="muted">
                Body{a.request.body.truncated ? ' (first bytes)' : ''}
                {a.request.body.encoding === 'base64' ? ', base64: it is not UTF-8 text' : ''}
              </p>
              <pre tabIndex={0} aria-label="Request body">{a.request.body.excerpt}</pre>
            </>
          )}
          <h3>Response</h3>
          {a.response ? (
            <>
              <p>
                HTTP <strong>{a.response.status}</strong> after {a.durationMs} ms
              </p>
              <Headers headers={a.response.headers} label="Response headers" />
              {a.response.bodyExcerpt ? <pre tabIndex={0} aria-label="Response body excerpt">{a.response.bodyExcerpt}</pre> : <p class="muted">Empty body.</p>}
            </>
          ) : a.messageId ? (
            <p>
              Message <code>{a.messageId}</code> after {a.durationMs} ms
            </p>
          ) : (
            <p>No response: {a.error ?? 'the attempt failed'}.</p>
          )}
          {a.error && a.response && (
            <p>
              Error: <code>{a.error}</code>
            </p>
          )}
          <p>
            Decision: <strong>{decided(a)}</strong>
          </p>
        </details>
      ))}
    </div>
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
          {d.batch && (
            <>
              <dt>Batch</dt>
              <dd data-testid="delivery-batch">
                <code>{d.batch.id}</code>, event {d.batch.position + 1} of {d.batch.size}
              </dd>
            </>
          )}
          {d.order && (
            <>
              <dt>Order</dt>
              <dd data-testid="delivery-order">
                key <code>{d.order.key}</code>, place {d.order.seq}
                {d.order.again ? ' (redelivered: it goes to the end of its key)' : ''}
              </dd>
            </>
          )}
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
          {d.attemptLog && d.attemptLog.length > 0 && (
            <>
              <dt>Attempts</dt>
              <dd>
                <Attempts attempts={d.attemptLog} total={d.attempts} />
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

/** The log's filters, as the API takes them (GET …/destinations/{id}/deliveries). */
export interface LogFilters {
  status?: string;
  type?: string;
  eventId?: string;
  from?: string;
  to?: string;
}

/** A destination's deliveries, a page at a time (cursor paging), newest published first. */
export function DeliveryTable({ ctx, destination, filters = {}, limit = 20 }: { ctx: Ctx; destination: string; filters?: LogFilters; limit?: number }) {
  const paging = useCursors();
  const [open, setOpen] = useState<string>();
  const cursor = paging.cursor;
  const { status, type, eventId, from, to } = filters;
  const page = useLoad(
    () => get<{ deliveries: Delivery[]; nextCursor?: string }>(`${acct(ctx)}/destinations/${seg(destination)}/deliveries${query({ status, type, eventId, from, to, limit, cursor })}`),
    [destination, status, type, eventId, from, to, cursor],
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
          Object.values(filters).some(Boolean) ? (
            <Empty title={`No deliveries of ${destination} match these filters.`}>
              <p>
                Widen the time range, or <a href={href('/log', { destination })}>clear the filters</a>.
              </p>
            </Empty>
          ) : (
            <Empty title={`No deliveries for ${destination} yet.`}>
              <p>
                Publish an event of a type it takes to <code>POST /ingest</code>; each delivery shows here as Herald attempts it.
              </p>
            </Empty>
          )
        ) : (
          <DataTable label={`Deliveries of ${destination}`} columns={['Event', 'Type', 'Status', 'Attempts', 'Published', 'Last attempt', 'Last error']}>
                {p.deliveries.map((d) => (
                  <tr key={d.id} class={open === d.id ? 'selected' : undefined}>
                    <td>
                      <button type="button" class="link" aria-expanded={open === d.id} onClick={() => setOpen(open === d.id ? undefined : d.id)}>
                        {d.eventId}
                      </button>
                    </td>
                    <TypeAndStatus d={d} />
                    <td>{d.attempts}</td>
                    <td>{fmtTime(d.publishedAt)}</td>
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

/** An ISO 8601 time as a datetime-local input's value (local time); localToIso goes back. */
function toLocal(iso: string | null): string {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  return new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
}

export function DeliveryLog({ ctx, params }: { ctx: Ctx; params: URLSearchParams }) {
  const dests = useLoad(() => get<{ destinations: Destination[] }>(`${acct(ctx)}/destinations`), [ctx.account]);
  const list = dests.data?.destinations.filter((d) => visibleDestination(ctx, d.id)) ?? [];
  const chosen = params.get('destination') ?? list[0]?.id ?? '';
  const filters: LogFilters = {
    status: params.get('status') ?? '',
    type: params.get('type') ?? '',
    eventId: params.get('eventId') ?? '',
    from: params.get('from') ?? '',
    to: params.get('to') ?? '',
  };
  const types = list.find((d) => d.id === chosen)?.eventTypes ?? [];
  const apply = (e: Event) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget as HTMLFormElement);
    const value = (k: string) => String(form.get(k) ?? '').trim();
    location.assign(href('/log', { destination: value('destination'), status: value('status'), type: value('type'), eventId: value('eventId'), from: localToIso(value('from')), to: localToIso(value('to')) }));
  };
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
            <form class="filters" onSubmit={apply} aria-label="Filter the log">
              <div class="field">
                <label for="log-destination">Destination</label>
                <select id="log-destination" name="destination" value={chosen}>
                  {list.map((d) => (
                    <option key={d.id} value={d.id}>
                      {d.id}
                    </option>
                  ))}
                </select>
              </div>
              <div class="field">
                <label for="log-status">Status</label>
                <select id="log-status" name="status" value={filters.status}>
                  <option value="">any</option>
                  {DELIVERY_STATUSES.map((s) => (
                    <option key={s} value={s}>
                      {s.replace('_', ' ').toLowerCase()}
                    </option>
                  ))}
                </select>
              </div>
              <div class="field">
                <label for="log-type">Event type</label>
                <input id="log-type" name="type" list="log-types" value={filters.type} placeholder="any" />
                <datalist id="log-types">
                  {types.filter((t) => !t.includes('*')).map((t) => (
                    <option key={t} value={t} />
                  ))}
                </datalist>
              </div>
              <div class="field">
                <label for="log-event">Event id</label>
                <input id="log-event" name="eventId" value={filters.eventId} placeholder="any" />
              </div>
              <div class="field">
                <label for="log-from">Published from</label>
                <input id="log-from" name="from" type="datetime-local" value={toLocal(filters.from ?? null)} />
              </div>
              <div class="field">
                <label for="log-to">Published before</label>
                <input id="log-to" name="to" type="datetime-local" value={toLocal(filters.to ?? null)} />
              </div>
              <button type="submit">Apply</button>
              {Object.values(filters).some(Boolean) && <a href={href('/log', { destination: chosen })}>Clear filters</a>}
            </form>
            {chosen && <DeliveryTable key={[chosen, ...Object.values(filters)].join('|')} ctx={ctx} destination={chosen} filters={filters} limit={50} />}
          </>
        ))}
    </section>
  );
}
