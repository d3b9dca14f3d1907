import { get } from '../api';
import { acct, Ctx, visibleDestination } from '../ctx';
import { EventType, EventTypeFilter } from '../types';
import { DataTable, Empty, fmtTime, href, LoadState, useLoad } from '../ui';

/** The types the account published, each with its latest event as a sample, and the destinations that take it. */
export function EventTypes({ ctx }: { ctx: Ctx }) {
  const page = useLoad(() => get<{ eventTypes: EventType[] }>(`${acct(ctx)}/event-types`), [ctx.account]);
  const types = page.data?.eventTypes ?? [];
  return (
    <section aria-labelledby="event-types-title">
      <h1 id="event-types-title">Event types</h1>
      <p class="muted">Every type this account has published, with its latest event (refreshed at most hourly) and the destinations subscribed to it. A destination marked <em>filter</em> gets only the events of the type its filter takes: beside it, the share it took over the last hour. A new type shows once the reconciler has checked its first event: 15 minutes after it on GCP, a minute in local mode.</p>
      <LoadState load={page} what="the event types" failed="Could not list the event types" />
      {page.data &&
        (types.length === 0 ? (
          <Empty title="No events published yet.">
            <p>
              Publish a CloudEvent to <code>POST /ingest</code> with an account key that has the <code>publish</code> scope; its type shows here once the reconciler has checked it (15 minutes after on GCP, a minute in local mode). Then{' '}
              <a href={href('/destinations')}>add a destination</a> whose event types take it.
            </p>
          </Empty>
        ) : (
          <DataTable label="event types" columns={['Type', 'Last seen', 'Destinations (by type; filters marked)', 'Latest event']}>
            {types.map((t) => {
              const takers = t.destinations.filter((id) => visibleDestination(ctx, id));
              const filters = new Map((t.filtered ?? []).map((f) => [f.destination, f]));
              return (
                <tr key={t.type} data-testid="event-type">
                  <td>
                    <code>{t.type}</code>
                  </td>
                  <td>{fmtTime(t.lastSeenAt)}</td>
                  <td>
                    {takers.length === 0 ? (
                      <span class="muted">none: no destination takes it</span>
                    ) : (
                      <ul class="plain">
                        {takers.map((id) => {
                          const f = filters.get(id);
                          return (
                            <li key={id} data-testid="event-type-destination">
                              <a href={href(`/destinations/${id}`)}>{id}</a>
                              {f && <FilterMark f={f} />}
                            </li>
                          );
                        })}
                      </ul>
                    )}
                  </td>
                  <td>
                    <details class="sample">
                      <summary>
                        Sample<span class="sr-only"> of {t.type}</span>
                        {t.sample.truncated === true ? ' (cut at 8 KB)' : ''}
                      </summary>
                      {/* Focusable: a long sample scrolls, and the keyboard must reach it. */}
                      <pre tabIndex={0} aria-label={`Latest ${t.type} event`}>
                        {JSON.stringify(t.sample, null, 2)}
                      </pre>
                    </details>
                  </td>
                </tr>
              );
            })}
          </DataTable>
        ))}
    </section>
  );
}

/** A destination that filters: its filter, and the share of the events of its types it took over the last hour (its counts are per destination, all its types together). */
function FilterMark({ f }: { f: EventTypeFilter }) {
  const matched = f.filterPassed1h + f.filtered1h + f.filterErrors1h;
  return (
    <span class="muted" data-testid="event-type-filter">
      {' '}
      <span class="chip">filter</span> <code>{f.filter}</code>:{' '}
      {matched === 0
        ? 'no event of its types in the last hour'
        : `took ${f.filterPassed1h} of ${matched} events of its types in the last hour (${Math.round((f.filterPassed1h / matched) * 100)} %)${f.filterErrors1h ? `, ${f.filterErrors1h} dropped as errors` : ''}`}
    </span>
  );
}
