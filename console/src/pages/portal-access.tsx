import { useState } from 'preact/hooks';
import { call, get, post, seg } from '../api';
import { PortalLinkItem, PortalSessionItem } from '../types';
import { ConfirmButton, DataTable, Empty, ErrorBox, fmtTime, LoadState, Notice, useAction, useLoad } from '../ui';

/** What a link or session may do, in words. */
const ACCESS: Record<string, string> = { 'read,write': 'Read and change', read: 'Read only', write: 'Change only' };
const rights = (r: { scopes: string[]; destinations?: string[] }) => `${ACCESS[r.scopes.join(',')] ?? r.scopes.join(', ')}${r.destinations ? ` · ${r.destinations.join(', ')}` : ' · every destination'}`;

const minter = (mintedBy: string) => (mintedBy === 'admin' ? 'Operator' : `Key ${mintedBy}`);

/**
 * An account's live customer portal links and sessions (the Accounts page), each with a
 * Revoke button, and "End all sessions": what is revoked stops working within 5 seconds.
 */
export function PortalAccess({ account, name }: { account: string; name: string }) {
  const path = `/accounts/${seg(account)}`;
  const links = useLoad(() => get<{ links: PortalLinkItem[] }>(`${path}/portal-links`), [account]);
  const sessions = useLoad(() => get<{ sessions: PortalSessionItem[] }>(`${path}/portal-sessions`), [account]);
  const [done, setDone] = useState<string>();
  const reload = (message: string) => {
    setDone(message);
    links.reload();
    sessions.reload();
  };
  // `true` once done: a 204 has no body, and a failed action resolves undefined (its error kept).
  const revokeLink = useAction(async (id: string) => (await call<void>('DELETE', `${path}/portal-links/${seg(id)}`), true));
  const revokeSession = useAction(async (id: string) => (await call<void>('DELETE', `${path}/portal-sessions/${seg(id)}`), true));
  const endAll = useAction(() => post<{ endedAt: string; links: number; sessions: number }>(`${path}/portal-sessions/revoke`));
  const busy = revokeLink.busy || revokeSession.busy || endAll.busy;
  return (
    <section class="card" aria-labelledby="portal-access-title" data-testid="portal-access">
      <h2 id="portal-access-title">Portal access</h2>
      <p class="muted">Customer portal links minted for this account, and the sessions opened from them. Whatever you revoke stops working within 5 seconds.</p>
      <ConfirmButton
        label="End all sessions"
        class="danger"
        confirm={`End every portal session of ${name}, and every link minted so far? Links minted afterwards work.`}
        busy={busy}
        onConfirm={() =>
          void endAll.run().then((r) => r && reload(`Ended ${r.sessions} session${r.sessions === 1 ? '' : 's'} and ${r.links} link${r.links === 1 ? '' : 's'}.`))
        }
      />
      <ErrorBox error={endAll.error} title="The sessions were not ended" />
      <ErrorBox error={revokeLink.error} title="The link was not revoked" />
      <ErrorBox error={revokeSession.error} title="The session was not revoked" />
      {done && <Notice>{done}</Notice>}

      <h3>Links</h3>
      <LoadState load={links} what="portal links" failed="Could not list the portal links" />
      {links.data &&
        (links.data.links.length === 0 ? (
          <Empty title="No live portal links." />
        ) : (
          <DataTable label="Portal links" columns={['Link', 'Minted by', 'Rights', 'Sessions', 'Created', 'Expires', '']}>
            {links.data.links.map((l) => (
              <tr key={l.id}>
                <td>
                  <code>{l.id}</code>
                </td>
                <td>{minter(l.mintedBy)}</td>
                <td>{rights(l)}</td>
                <td>
                  {l.sessions.length} live · {l.sessionsOpened} of {l.maxSessions} opened
                </td>
                <td>{fmtTime(l.createdAt)}</td>
                <td>{fmtTime(l.expiresAt)}</td>
                <td>
                  <ConfirmButton label="Revoke" confirm={`Revoke link ${l.id} and its ${l.sessions.length} session(s)?`} busy={busy} onConfirm={() => void revokeLink.run(l.id).then((ok) => ok && reload(`Link ${l.id} revoked.`))} />
                </td>
              </tr>
            ))}
          </DataTable>
        ))}

      <h3>Sessions</h3>
      <LoadState load={sessions} what="portal sessions" failed="Could not list the portal sessions" />
      {sessions.data &&
        (sessions.data.sessions.length === 0 ? (
          <Empty title="No live portal sessions." />
        ) : (
          <DataTable label="Portal sessions" columns={['Session', 'Link', 'Minted by', 'Rights', 'Opened', 'Expires', '']}>
            {sessions.data.sessions.map((s) => (
              <tr key={s.id}>
                <td>
                  <code>{s.id}</code>
                </td>
                <td>
                  <code>{s.linkId}</code>
                </td>
                <td>{minter(s.mintedBy)}</td>
                <td>{rights(s)}</td>
                <td>{fmtTime(s.createdAt)}</td>
                <td>{fmtTime(s.expiresAt)}</td>
                <td>
                  <ConfirmButton label="Revoke" confirm={`Revoke session ${s.id}?`} busy={busy} onConfirm={() => void revokeSession.run(s.id).then((ok) => ok && reload(`Session ${s.id} revoked.`))} />
                </td>
              </tr>
            ))}
          </DataTable>
        ))}
    </section>
  );
}
