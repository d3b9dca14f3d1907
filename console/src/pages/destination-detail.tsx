import { useState } from 'preact/hooks';
import { BATCH_LIMITS } from '../../../shared/domain/modes/batch-limits';
import { ApiError, call, get, ingestUrl, issuesByField, post, seg } from '../api';
import { acct, canWrite, Ctx, visibleDestination } from '../ctx';
import { Destination } from '../types';
import { ConfirmButton, ErrorBox, Field, fmtTime, href, Loading, Notice, Secret, RunButton, useAction, useLoad, onValue } from '../ui';
import { DeliveryTable } from './log';
import { HeldKeys, orderingText } from './held-keys';
import { Meter, State } from './destinations';

/** How a destination's events go out: batched (how full, how long at most) or one a request. */
function batchText(b: Destination['batch']): string {
  if (!b) return 'off: one event per request';
  return `up to ${b.maxEvents} events and ${b.maxBytes ?? BATCH_LIMITS.maxBytes} bytes a request, sent at the latest ${b.maxWaitMs} ms after the oldest arrived`;
}

/** A delete refused because deliveries are still to send (409 with their counts), else undefined. */
function openDeliveriesOf(error: unknown): { PENDING: number; IN_FLIGHT: number; QUEUED: number; total: number } | undefined {
  if (!(error instanceof ApiError) || error.status !== 409) return undefined;
  const counts = error.body.deliveries as { PENDING?: unknown; IN_FLIGHT?: unknown; QUEUED?: unknown } | undefined;
  const n = (v: unknown) => (typeof v === 'number' ? v : 0);
  if (!counts) return undefined;
  const open = { PENDING: n(counts.PENDING), IN_FLIGHT: n(counts.IN_FLIGHT), QUEUED: n(counts.QUEUED) };
  return { ...open, total: open.PENDING + open.IN_FLIGHT + open.QUEUED };
}

/** An event type this destination takes, for a test event: `com.example.*` → `com.example.test`. */
function testType(d: Destination): string {
  const t = d.eventTypes[0] ?? 'herald.console.test';
  return t === '*' ? 'herald.console.test' : t.endsWith('*') ? `${t.slice(0, -1).replace(/\.$/, '')}.test` : t;
}

export function DestinationDetail({ ctx, id }: { ctx: Ctx; id: string }) {
  const path = `${acct(ctx)}/destinations/${seg(id)}`;
  const dest = useLoad(() => get<Destination>(path), [path]);
  const [secret, setSecret] = useState<{ value: string; previous?: { expiresAt: string }[] }>();
  const [notice, setNotice] = useState<string>();
  const [grace, setGrace] = useState('86400');
  const rotate = useAction(() => post<Destination>(`${path}/rotate-secret`, { graceSeconds: Number(grace) }));
  const reactivate = useAction(() => post<{ redelivered: number }>(`${path}/reactivate`));
  const [suspendReason, setSuspendReason] = useState('');
  const suspend = useAction(() => post<{ destination: Destination }>(`${path}/suspend`, suspendReason.trim() ? { reason: suspendReason.trim() } : {}));
  const suspendErrors = suspend.error instanceof ApiError ? issuesByField(suspend.error.issues) : {};
  const redeliver = useAction((status: 'queued' | 'dead') => post<{ redelivered: number }>(`${path}/redeliver`, { status }));
  // Refused (409) while deliveries are still to send; `dead` deletes anyway and makes them DEAD with dead letters.
  const remove = useAction(async (dead: boolean) => {
    await call<unknown>('DELETE', dead ? `${path}?deliveries=dead` : path);
    return true;
  });
  const stillToSend = openDeliveriesOf(remove.error);
  const sendTest = useAction(async (d: Destination) => {
    const event = { specversion: '1.0', id: `console-test-${Date.now().toString(36)}`, source: 'herald-console', type: testType(d), datacontenttype: 'application/json', data: { test: true, destination: d.id, at: new Date().toISOString() } };
    await call('POST', '', JSON.stringify(event), { url: ingestUrl(), headers: { 'content-type': 'application/cloudevents+json' } });
    return event.id;
  });
  const d = dest.data;
  if (!visibleDestination(ctx, id)) return <ErrorBox error={new Error(`This portal does not show destination ${id}.`)} />;
  const write = canWrite(ctx);
  return (
    <section aria-labelledby="destination-title">
      <p class="crumbs">
        <a href={href('/destinations')}>Destinations</a> › {id}
      </p>
      <div class="page-head">
        <h1 id="destination-title">{id}</h1>
        {d && write && (
          <a class="button" href={href(`/destinations/${id}/edit`)}>
            Edit
          </a>
        )}
      </div>
      {dest.loading && !d && <Loading what="the destination" />}
      <ErrorBox error={dest.error} title="Could not load the destination" />
      {notice && <Notice>{notice}</Notice>}
      {d && (
        <>
          {d.status === 'suspended' && (
            <div class="card warn" role="region" aria-label="Suspension">
              <h2>Suspended</h2>
              <p>{d.suspension?.reason ?? 'Herald stopped sending to this destination.'}</p>
              {d.suspension?.at && <p class="muted">Since {fmtTime(d.suspension.at)}. New events are kept QUEUED until it is reactivated.</p>}
              {d.suspension?.cause === 'manual' && <p class="muted">Suspended by hand{d.suspension.by ? ` by ${d.suspension.by}` : ''}.</p>}
              {d.suspension?.lastError && (
                <p>
                  Last error: <code>{d.suspension.lastError.error}</code>
                </p>
              )}
              {write && (
                <RunButton
                  class="primary"
                  action={reactivate}
                  onDone={(r) => {
                    setNotice(`Reactivated: ${r.redelivered} queued deliveries are on their way again.`);
                    dest.reload();
                  }}
                >
                  Reactivate
                </RunButton>
              )}
              <ErrorBox error={reactivate.error} title="Not reactivated" />
            </div>
          )}
          <dl class="props">
            <dt>State</dt>
            <dd>
              <State d={d} />
            </dd>
            <dt>{d.url ? 'URL' : 'Pub/Sub topic'}</dt>
            <dd class="url">{d.url ?? d.topic}</dd>
            <dt>Event types</dt>
            <dd>{d.eventTypes.map((t) => <code key={t} class="chip">{t}</code>)}</dd>
            <dt>Filter</dt>
            <dd data-testid="filter-setting">
              {d.filter === undefined ? (
                'none: every event of its types'
              ) : (
                <>
                  <code>{d.filter}</code>
                  <br />
                  last hour: matched {(d.stats?.filterPassed1h ?? 0) + (d.stats?.filtered1h ?? 0) + (d.stats?.filterErrors1h ?? 0)}, passed {d.stats?.filterPassed1h ?? 0}, dropped {d.stats?.filtered1h ?? 0}, errors {d.stats?.filterErrors1h ?? 0}
                </>
              )}
            </dd>
            <dt>Policy</dt>
            <dd>{typeof d.policy === 'string' ? d.policy : 'custom'}</dd>
            <dt>When attempts fail</dt>
            <dd>{d.failureMode ?? 'the account’s failure policy'}</dd>
            <dt>Success rate (last hour)</dt>
            <dd>
              <Meter rate={d.stats?.successRate1h} attempts={d.stats?.attempts1h} />
            </dd>
            <dt>Adaptive rate</dt>
            <dd>
              {d.stats ? `${d.stats.rate} events/s (between ${d.stats.rateBounds.min} and ${d.stats.rateBounds.max})` : '—'}
              {d.stats?.pausedUntil && ` · paused by Retry-After until ${fmtTime(d.stats.pausedUntil)}`}
            </dd>
            <dt>Technical email</dt>
            <dd>{d.technicalEmail ?? '—'}</dd>
            <dt>Lane</dt>
            <dd>{d.lane ?? 'shared'}</dd>
            <dt>Batches</dt>
            <dd data-testid="batch-setting">{batchText(d.batch)}</dd>
            <dt>Ordered per key</dt>
            <dd data-testid="ordering-setting">{orderingText(d.ordering)}</dd>
            {d.url !== undefined && (
              <>
                <dt>Receiver</dt>
                <dd data-testid="receiver-setting">{receiverText(d)}</dd>
              </>
            )}
            <dt>Created / updated</dt>
            <dd>
              {fmtTime(d.createdAt)} / {fmtTime(d.updatedAt)}
            </dd>
            {d.previousSecrets && d.previousSecrets.length > 0 && (
              <>
                <dt>Previous secrets</dt>
                <dd data-testid="previous-secrets">
                  {d.previousSecrets.map((p) => (
                    <span key={p.expiresAt}>still signing until {fmtTime(p.expiresAt)} </span>
                  ))}
                </dd>
              </>
            )}
          </dl>
          {d.stats && d.stats.lastErrors.length > 0 && (
            <section class="card" aria-labelledby="errors-title">
              <h2 id="errors-title">Recent errors</h2>
              <ul class="errors">
                {d.stats.lastErrors.map((e) => (
                  <li key={e.at + e.error}>
                    {fmtTime(e.at)}: <code>{e.error}</code>
                    {e.bodyExcerpt && <pre>{e.bodyExcerpt}</pre>}
                  </li>
                ))}
              </ul>
            </section>
          )}
          {d.ordering && <HeldKeys ctx={ctx} id={id} />}
          {write && (
            <section class="card actions" aria-labelledby="actions-title">
              <h2 id="actions-title">Actions</h2>
              {d.status !== 'suspended' && (
                <div class="action">
                  <h3>Suspend</h3>
                  <p class="muted">Stop sending to it, say for the receiver’s maintenance: new events and due retries are kept QUEUED, none lost, until it is reactivated.</p>
                  <div class="row">
                    <Field id="suspend-reason" label="Reason (optional)" hint="At most 200 characters; shown with the suspension and in its notification." errors={suspendErrors.reason}>
                      <input id="suspend-reason" maxLength={200} value={suspendReason} onInput={onValue(setSuspendReason)} aria-describedby="suspend-reason-hint" />
                    </Field>
                    <ConfirmButton
                      label="Suspend"
                      confirm={`Suspend ${id}? Its events are kept QUEUED until it is reactivated.`}
                      busy={suspend.busy}
                      onConfirm={() =>
                        void suspend.run().then((r) => {
                          if (!r) return;
                          setSuspendReason('');
                          setNotice(`Suspended: ${r.destination.suspension?.reason ?? id}. Its events are kept QUEUED until it is reactivated.`);
                          dest.reload();
                        })
                      }
                    />
                  </div>
                  <ErrorBox error={suspend.error} title="Not suspended" />
                </div>
              )}
              {d.url && (
                <div class="action">
                  <h3>Signing secret</h3>
                  <p class="muted">A new secret signs at once; the one it replaces keeps signing beside it for the grace period, so the receiver can switch without dropping events.</p>
                  <div class="row">
                    <Field id="grace" label="Grace period">
                      <select id="grace" value={grace} onChange={onValue(setGrace)}>
                        <option value="0">none (drop the old secret now)</option>
                        <option value="3600">1 hour</option>
                        <option value="86400">24 hours</option>
                        <option value="604800">7 days</option>
                      </select>
                    </Field>
                    <RunButton
                      action={rotate}
                      onDone={(r) => {
                        if (r.secret) setSecret({ value: r.secret, ...(r.previousSecrets ? { previous: r.previousSecrets } : {}) });
                        dest.reload();
                      }}
                    >
                      Rotate secret
                    </RunButton>
                  </div>
                  <ErrorBox error={rotate.error} title="The secret was not rotated" />
                  {secret && <Secret label="New signing secret" value={secret.value} />}
                  {secret?.previous?.[0] && <p class="muted">The previous secret keeps signing until {fmtTime(secret.previous[0].expiresAt)}.</p>}
                </div>
              )}
              <div class="action">
                <h3>Send a test event</h3>
                {ctx.session.kind === 'key' ? (
                  <>
                    <p class="muted">
                      Publishes a <code>{testType(d)}</code> event through <code>POST /ingest</code> with your key; its delivery appears below.
                    </p>
                    <button
                      type="button"
                      disabled={sendTest.busy}
                      onClick={() =>
                        void sendTest.run(d).then((eventId) => {
                          if (eventId) setNotice(`Test event ${eventId} accepted: watch for its delivery below.`);
                        })
                      }
                    >
                      Send test event
                    </button>
                    <ErrorBox error={sendTest.error} title="The test event was not accepted" />
                  </>
                ) : (
                  <p class="muted">
                    Test events are published like any other: sign in with an account key that has the <code>publish</code> scope, or publish to{' '}
                    <code>POST /ingest</code>.
                  </p>
                )}
              </div>
              <div class="action">
                <h3>Send again</h3>
                <div class="row">
                  <button type="button" disabled={redeliver.busy || d.status === 'suspended'} onClick={() => void redeliver.run('queued').then((r) => r && setNotice(`${r.redelivered} queued deliveries sent again.`))}>
                    Redeliver queued
                  </button>
                  <button type="button" disabled={redeliver.busy || d.status === 'suspended'} onClick={() => void redeliver.run('dead').then((r) => r && setNotice(`${r.redelivered} dead deliveries sent again.`))}>
                    Redeliver dead
                  </button>
                </div>
                <ErrorBox error={redeliver.error} title="Nothing was redelivered" />
              </div>
              <div class="action">
                <h3>Delete</h3>
                {!stillToSend && (
                  <ConfirmButton
                    label="Delete destination"
                    class="danger"
                    confirm={`Delete ${id}? Events stop going to it at once.`}
                    busy={remove.busy}
                    onConfirm={() => void remove.run(false).then((ok) => ok && location.assign(href('/destinations')))}
                  />
                )}
                {stillToSend ? (
                  <div class="card warn" role="alert" data-testid="delete-refused">
                    <strong>Not deleted: {stillToSend.total} {stillToSend.total === 1 ? 'delivery is' : 'deliveries are'} still to send</strong>
                    <p>
                      {stillToSend.PENDING} pending, {stillToSend.IN_FLIGHT} in flight, {stillToSend.QUEUED} queued. Deleting {id} now would leave them nowhere to go.{' '}
                      {stillToSend.QUEUED > 0 && (d.status === 'suspended' ? 'Reactivate it to send the queued ones, ' : 'Redeliver the queued ones (Send again, above), ')}
                      {stillToSend.PENDING + stillToSend.IN_FLIGHT > 0 && 'wait for the pending ones to be delivered, '}
                      or delete it anyway: each becomes dead, with a dead letter, and a replay sends them once a destination named {id} exists again.
                    </p>
                    <div class="row">
                      <ConfirmButton
                        label={`Delete and make ${stillToSend.total} dead`}
                        class="danger"
                        confirm={`Delete ${id} and make its ${stillToSend.total} undelivered ${stillToSend.total === 1 ? 'delivery' : 'deliveries'} dead?`}
                        busy={remove.busy}
                        onConfirm={() => void remove.run(true).then((ok) => ok && location.assign(href('/destinations')))}
                      />
                      <button type="button" onClick={() => remove.clear()}>
                        Keep it
                      </button>
                    </div>
                  </div>
                ) : (
                  <ErrorBox error={remove.error} title="Not deleted" />
                )}
              </div>
            </section>
          )}
          <section aria-labelledby="recent-title">
            <h2 id="recent-title">Recent deliveries</h2>
            <DeliveryTable ctx={ctx} destination={id} />
            <p>
              <a href={href('/log', { destination: id })}>Open the full delivery log</a>
            </p>
          </section>
        </>
      )}
    </section>
  );
}

/** Auth, client certificate, signature profile and header names: never a credential (the API has none to show). */
function receiverText(d: Destination): string {
  const auth = d.auth ? `auth ${d.auth.type}${d.auth.type === 'apiKey' ? ` (${d.auth.header})` : ''}` : 'no auth';
  const grace = d.previousAuth ? `, replaced ${d.previousAuth.type} until ${fmtTime(d.previousAuth.expiresAt)}` : '';
  const tlsGrace = d.previousTls ? `, replaced one until ${fmtTime(d.previousTls.expiresAt)}` : '';
  const tls = d.tls ? ` · client certificate${typeof d.tls.clientCertificate === 'string' ? '' : ` ${d.tls.clientCertificate.subject}, valid to ${fmtTime(d.tls.clientCertificate.validTo)}`}${tlsGrace}` : '';
  const s = d.signature;
  const signature = s === undefined ? 'standard-webhooks' : typeof s === 'string' ? s : `${s.from} and ${s.to} until ${fmtTime(s.cutoverAt)}, then ${s.to}`;
  const headersGrace = d.previousHeaders ? ` (replaced ones until ${fmtTime(d.previousHeaders.expiresAt)})` : '';
  const headers = d.headers ? ` · headers ${Object.keys(d.headers).join(', ')}${headersGrace}` : '';
  return `${auth}${grace}${tls} · signed ${signature}${headers}`;
}
