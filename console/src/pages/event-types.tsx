import { get } from '../api';
import { acct, Ctx, visibleDestination } from '../ctx';
import { EventType } from '../types';
import { DataTable, Empty, fmtTime, href, LoadState, useLoad } from '../ui';

/** The types the account published, each with its latest event as a sample, and the destinations that take it. */
export function EventTypes({ ctx }: { ctx: Ctx }) {
  const page = useLoad(() => get<{ eventTypes: EventType[] }>(`${acct(ctx)}/event-types`), [ctx.account]);
  const types = page.data?.eventTypes ?? [];
  return (
    <section aria-labelledby="event-types-title">
      <h1 id="event-types-title">Event types</h1>
      <p class="muted">Every type this account has published, with its latest event (refreshed at most hourly) and the destinations that take it. A new type shows once the reconciler has checked its first event: 15 minutes after it on GCP, a minute in local mode.</p>
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
          <DataTable label="event types" columns={['Type', 'Last seen', 'Destinations', 'Latest event']}>
            {types.map((t) => {
              const takers = t.destinations.filter((id) => visibleDestination(ctx, id));
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
                        {takers.map((id) => (
                          <li key={id}>
                            <a href={href(`/destinations/${id}`)}>{id}</a>
                          </li>
                        ))}
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
