import { useEffect, useState } from 'preact/hooks';
import { get, post, query } from '../api';
import { acct, canWrite, Ctx, visibleDestination } from '../ctx';
import { Delivery } from '../types';
import { TypeAndStatus } from './log';
import { Empty, ErrorBox, fmtTime, href, Loading, Notice, DataTable, RunButton, useAction, useCursors, Pager, useLoad, onValue } from '../ui';

/** What POST …/deliveries/redeliver answers for `{"ids"}`: each id's outcome. */
interface RedeliveredByIds {
  redelivered: number;
  results: { id: string; outcome: 'redelivered' | 'skipped' | 'suspended' | 'not-found'; status?: string }[];
  suspended: string[];
}

function selectedNotice(r: RedeliveredByIds): string {
  const count = (outcome: string) => r.results.filter((x) => x.outcome === outcome).length;
  const parts = [`${r.redelivered} of ${r.results.length} selected ${r.results.length === 1 ? 'delivery is' : 'deliveries are'} being sent again.`];
  if (count('skipped')) parts.push(`${count('skipped')} no longer queued or dead, left as ${count('skipped') === 1 ? 'it is' : 'they are'}.`);
  if (r.suspended.length) parts.push(`Left queued on suspended destinations: ${r.suspended.join(', ')} (reactivate them to send).`);
  if (count('not-found')) parts.push(`${count('not-found')} not found.`);
  return parts.join(' ');
}

/** Seed 003's retrieval: the account's QUEUED or DEAD deliveries, each with its event, and redelivery of them all or of those selected. */
export function QueuedDead({ ctx, params }: { ctx: Ctx; params: URLSearchParams }) {
  const status = params.get('status') === 'dead' ? 'dead' : 'queued';
  const [url, setUrl] = useState(params.get('url') ?? '');
  const [applied, setApplied] = useState(url);
  const paging = useCursors();
  const cursor = paging.cursor;
  const [notice, setNotice] = useState<string>();
  const page = useLoad(() => get<{ deliveries: Delivery[]; nextCursor?: string }>(`${acct(ctx)}/deliveries${query({ status, url: applied, limit: 50, cursor })}`), [ctx.account, status, applied, cursor]);
  const redeliver = useAction(() => post<{ redelivered: number; suspended: string[] }>(`${acct(ctx)}/deliveries/redeliver`, { status, ...(applied ? { url: applied } : {}) }));
  const rows = page.data?.deliveries.filter((d) => visibleDestination(ctx, d.destinationId)) ?? [];
  // The deliveries ticked on the page shown: a new page, status or URL starts with none.
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  useEffect(() => setSelected(new Set()), [ctx.account, status, applied, cursor]);
  const chosen = rows.filter((d) => selected.has(d.id)).map((d) => d.id);
  const toggle = (id: string, on: boolean) => {
    const next = new Set(selected);
    if (on) next.add(id);
    else next.delete(id);
    setSelected(next);
  };
  const redeliverSelected = useAction(() => post<RedeliveredByIds>(`${acct(ctx)}/deliveries/redeliver`, { ids: chosen }));
  return (
    <section aria-labelledby="queued-title">
      <h1 id="queued-title">Queued &amp; dead</h1>
      <div class="segmented" role="group" aria-label="Which deliveries">
        <a class="button" href={href('/queued', { status: 'queued' })} aria-current={status === 'queued' ? 'page' : undefined}>
          Queued
        </a>
        <a class="button" href={href('/queued', { status: 'dead' })} aria-current={status === 'dead' ? 'page' : undefined}>
          Dead
        </a>
      </div>
      <p class="muted">
        {status === 'queued'
          ? 'Kept by the queue failure policy or a suspended destination, until they are sent again.'
          : 'Out of retries. Send them again here, or replay them (Replays) by destination, time and type.'}
      </p>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          paging.reset();
          setApplied(url.trim());
        }}
      >
        <div class="field">
          <label for="queued-url">Receiver URL (optional)</label>
          <input id="queued-url" type="url" value={url} onInput={onValue(setUrl)} />
        </div>
        <button type="submit">Filter</button>
      </form>
      {notice && <Notice>{notice}</Notice>}
      {page.loading && !page.data && <Loading what={`${status} deliveries`} />}
      <ErrorBox error={page.error} title={`Could not list the ${status} deliveries`} />
      {page.data &&
        (rows.length === 0 ? (
          <Empty title={`No ${status} deliveries${applied ? ` to ${applied}` : ''}.`}>
            <p>{status === 'queued' ? 'Nothing is waiting: every failure is being retried, or nothing failed.' : 'Nothing has run out of retries. Dead deliveries show here when one does.'}</p>
          </Empty>
        ) : (
          <>
            {canWrite(ctx) && (
              <div class="row">
                <RunButton
                  class="primary"
                  action={redeliver}
                  onDone={(r) => {
                    setNotice(`${r.redelivered} ${status} deliveries are being sent again.${r.suspended.length ? ` Left queued on suspended destinations: ${r.suspended.join(', ')} (reactivate them to send).` : ''}`);
                    page.reload();
                  }}
                >
                  Redeliver all {status}
                  {applied ? ' to this URL' : ''}
                </RunButton>
                <RunButton
                  action={redeliverSelected}
                  disabled={chosen.length === 0}
                  onDone={(r) => {
                    setNotice(selectedNotice(r));
                    setSelected(new Set());
                    page.reload();
                  }}
                >
                  Redeliver selected ({chosen.length})
                </RunButton>
              </div>
            )}
            <ErrorBox error={redeliver.error} title="Nothing was redelivered" />
            <ErrorBox error={redeliverSelected.error} title="The selected deliveries were not redelivered" />
            <DataTable label={`${status} deliveries`} columns={[...(canWrite(ctx) ? ['Select'] : []), 'Event', 'Destination', 'Type', 'Status', 'Why', 'Attempts', 'Last attempt']}>
                  {rows.map((d) => (
                    <tr key={d.id}>
                      {canWrite(ctx) && (
                        <td>
                          <label class="check select">
                            <input type="checkbox" checked={selected.has(d.id)} onChange={(e) => toggle(d.id, (e.target as HTMLInputElement).checked)} />
                            <span class="sr-only">
                              Select {d.eventId} to {d.destinationId}
                            </span>
                          </label>
                        </td>
                      )}
                      <td>
                        <code>{d.eventId}</code>
                      </td>
                      <td>
                        <a href={href(`/destinations/${d.destinationId}`)}>{d.destinationId}</a>
                      </td>
                      <TypeAndStatus d={d} />
                      <td>{d.reason ?? d.lastError?.error ?? '—'}</td>
                      <td>{d.attempts}</td>
                      <td>{fmtTime(d.lastAttemptAt)}</td>
                    </tr>
                  ))}
            </DataTable>
          </>
        ))}
      {page.data && <Pager paging={paging} {...(page.data.nextCursor ? { nextCursor: page.data.nextCursor } : {})} />}
    </section>
  );
}
