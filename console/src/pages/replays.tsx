import { useEffect, useState } from 'preact/hooks';
import { get, post, seg } from '../api';
import { acct, canWrite, Ctx } from '../ctx';
import { FINAL_REPLAY, Replay } from '../types';
import { Empty, ErrorBox, Field, fmtTime, Loading, StatusBadge, DataTable, ActionForm, Submit, Tile, useAction, useLoad, onValue } from '../ui';
import { ApiError, issuesByField } from '../api';

/** One replay's report, asked again every second until it is final. */
function ReplayProgress({ ctx, id, onDone }: { ctx: Ctx; id: string; onDone: () => void }) {
  const [report, setReport] = useState<Replay>();
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    let live = true;
    let timer: number | undefined;
    const poll = async () => {
      try {
        const r = await get<Replay>(`${acct(ctx)}/replays/${seg(id)}`);
        if (!live) return;
        setReport(r);
        setError(undefined);
        if (FINAL_REPLAY.has(r.status)) {
          onDone();
          return;
        }
      } catch (e) {
        if (!live) return;
        setError(e);
      }
      timer = window.setTimeout(() => void poll(), 1000);
    };
    void poll();
    return () => {
      live = false;
      window.clearTimeout(timer);
    };
  }, [id]);
  const final = report ? FINAL_REPLAY.has(report.status) : false;
  const matched = report?.matched ?? 0;
  const done = (report?.redelivered ?? 0) + (report?.wouldRedeliver ?? 0) + (report?.skipped ?? 0) + (report?.failed ?? 0);
  return (
    <section class="card" aria-labelledby="progress-title" data-testid="replay-progress">
      <h2 id="progress-title">Replay {id}</h2>
      <ErrorBox error={error} title="Could not read the replay's report" />
      {!report && <Loading what="the report" />}
      {report && (
        <>
          <p role="status" aria-live="polite">
            <StatusBadge status={report.status} /> {final ? `finished${report.ended ? ` (${report.ended})` : ''}` : 'in progress'}
            {report.error ? `: ${report.error}` : ''}
          </p>
          {!final && <progress max={Math.max(1, matched)} value={done} aria-label="Replay progress" />}
          <dl class="tiles">
            {(['scanned', 'matched', report.dryRun ? 'wouldRedeliver' : 'redelivered', 'skipped', 'failed'] as const).map((k) => (
              <Tile key={k} label={k === 'wouldRedeliver' ? 'would redeliver' : k} testId={`replay-${k}`}>
                {report[k] ?? 0}
              </Tile>
            ))}
          </dl>
        </>
      )}
    </section>
  );
}

export function Replays({ ctx }: { ctx: Ctx }) {
  const list = useLoad(() => get<{ replays: Replay[] }>(`${acct(ctx)}/replays?limit=20`), [ctx.account]);
  const [watching, setWatching] = useState<string>();
  const [destination, setDestination] = useState('');
  const [since, setSince] = useState('');
  const [types, setTypes] = useState('');
  const [dryRun, setDryRun] = useState(false);
  const start = useAction(() =>
    post<{ id: string }>(`${acct(ctx)}/replays`, {
      ...(destination.trim() ? { destination: destination.trim() } : {}),
      ...(since ? { since: new Date(since).toISOString() } : {}),
      ...(types.trim() ? { eventTypes: types.split(/[\s,]+/).filter(Boolean) } : {}),
      ...(dryRun ? { dryRun: true } : {}),
    }),
  );
  const errors = start.error instanceof ApiError ? issuesByField(start.error.issues) : {};
  return (
    <section aria-labelledby="replays-title">
      <h1 id="replays-title">Replays</h1>
      <p class="muted">A replay sends dead letters again: those of one destination, since a time, of some types, or all of this account’s.</p>
      {canWrite(ctx) && (
        <ActionForm
          class="card form"
          action={start}
          onDone={(r) => {
              setWatching(r.id);
              list.reload();
          }}
        >
          <h2>Start a replay</h2>
          <div class="row">
            <Field id="replay-destination" label="Destination (optional)" errors={errors.destination}>
              <input id="replay-destination" value={destination} onInput={onValue(setDestination)} />
            </Field>
            <Field id="replay-since" label="Since (optional)" errors={errors.since}>
              <input id="replay-since" type="datetime-local" value={since} onInput={onValue(setSince)} />
            </Field>
            <Field id="replay-types" label="Event types (optional)" hint="Separated by commas." errors={errors.eventTypes}>
              <input id="replay-types" value={types} onInput={onValue(setTypes)} />
            </Field>
          </div>
          <label class="check">
            <input type="checkbox" checked={dryRun} onChange={(e) => setDryRun((e.target as HTMLInputElement).checked)} /> Dry run: count, send nothing
          </label>
          <ErrorBox error={start.error} title="The replay did not start" />
          <Submit busy={start.busy}>Start replay</Submit>
        </ActionForm>
      )}
      {watching && <ReplayProgress key={watching} ctx={ctx} id={watching} onDone={() => list.reload()} />}
      <h2>Recent replays</h2>
      {list.loading && !list.data && <Loading what="replays" />}
      <ErrorBox error={list.error} title="Could not list the replays" />
      {list.data &&
        (list.data.replays.length === 0 ? (
          <Empty title="No replays yet.">
            <p>When deliveries die (see Queued &amp; dead), start a replay above to send them again.</p>
          </Empty>
        ) : (
          <DataTable label="Recent replays" columns={['Replay', 'Status', 'Matched', 'Redelivered', 'Started']}>
                {list.data.replays.map((r) => (
                  <tr key={r.id}>
                    <td>
                      <button type="button" class="link" onClick={() => setWatching(r.id)}>
                        {r.id}
                      </button>
                      {r.dryRun ? ' (dry run)' : ''}
                    </td>
                    <td>
                      <StatusBadge status={r.status} />
                    </td>
                    <td>{r.matched ?? 0}</td>
                    <td>{r.redelivered ?? 0}</td>
                    <td>{fmtTime(r.startedAt ?? r.createdAt)}</td>
                  </tr>
                ))}
          </DataTable>
        ))}
    </section>
  );
}
