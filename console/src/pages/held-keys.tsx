import { useState } from 'preact/hooks';
import { get, post, seg } from '../api';
import { acct, canWrite, Ctx } from '../ctx';
import { Destination, HeldKey } from '../types';
import { ConfirmButton, DataTable, ErrorBox, fmtTime, href, Loading, Notice, StatusBadge, useAction, useLoad } from '../ui';

/** An ordered destination's keys held by an event that ended DEAD or QUEUED, each with a way past it. */

/** How a destination orders its events, in words. */
export function orderingText(o: Destination['ordering']): string {
  if (!o) return 'off';
  return o.onFailure === 'block' ? 'on: a key whose event ends dead or queued is held until it is released' : 'on: a key whose event ends dead or queued moves on to its next event';
}

export function HeldKeys({ ctx, id }: { ctx: Ctx; id: string }) {
  const path = `${acct(ctx)}/destinations/${seg(id)}/ordered-keys`;
  const held = useLoad(() => get<{ keys: HeldKey[] }>(`${path}/blocked`), [path]);
  const skip = useAction((key: string) => post<{ skipped: Omit<HeldKey, 'why' | 'since'> }>(`${path}/skip`, { key }));
  const [notice, setNotice] = useState<string>();
  const keys = held.data?.keys;
  const write = canWrite(ctx);
  return (
    <section class="card" aria-labelledby="held-title">
      <div class="page-head">
        <h2 id="held-title">Held keys</h2>
        <button type="button" onClick={() => held.reload()} disabled={held.loading}>
          Refresh
        </button>
      </div>
      <p class="muted">
        A key whose event ended dead or queued waits behind it: its later events are not sent. Redelivering that event releases the key too (Send again › Redeliver dead, or reactivate a
        suspended destination): it goes first, then the rest. Skipping moves the key past it, and the event stays as it is.
      </p>
      {notice && <Notice>{notice}</Notice>}
      {held.loading && !keys && <Loading what="the held keys" />}
      <ErrorBox error={held.error} title="Could not list the held keys" />
      <ErrorBox error={skip.error} title="The key was not skipped" />
      {keys &&
        (keys.length === 0 ? (
          <p data-testid="no-held-keys">No key is held.</p>
        ) : (
          <DataTable label={`Held keys of ${id}`} columns={['Key', 'Held by event', 'Status', 'Since', ...(write ? [''] : [])]}>
            {keys.map((k) => (
              <tr key={k.key} data-testid="held-key">
                <td>
                  <code>{k.key}</code>
                </td>
                <td>
                  <a href={href('/log', { destination: id, eventId: k.eventId })}>{k.eventId}</a>
                </td>
                <td>
                  <StatusBadge status={k.status} />
                  {k.why === 'suspended' && <span class="muted"> (destination suspended)</span>}
                </td>
                <td>{fmtTime(k.since)}</td>
                {write && (
                  <td>
                    <ConfirmButton
                      label="Skip"
                      confirm={`Skip key ${k.key}? Event ${k.eventId} stays ${k.status.toLowerCase()}; the key's next event is sent.`}
                      busy={skip.busy}
                      onConfirm={() =>
                        void skip.run(k.key).then((r) => {
                          if (!r) return;
                          setNotice(`Key ${r.skipped.key} moved past event ${r.skipped.eventId}: its next event is on its way.`);
                          held.reload();
                        })
                      }
                    />
                  </td>
                )}
              </tr>
            ))}
          </DataTable>
        ))}
    </section>
  );
}
