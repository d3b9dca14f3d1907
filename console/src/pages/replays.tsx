import { useEffect, useState } from 'preact/hooks';
import { get, post, seg } from '../api';
import { acct, canWrite, Ctx, visibleDestination } from '../ctx';
import { Destination, FINAL_REPLAY, Replay } from '../types';
import { Empty, ErrorBox, Field, fmtTime, Loading, StatusBadge, DataTable, ActionForm, Submit, Tile, useAction, useLoad, onValue, localToIso } from '../ui';
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
  const [until, setUntil] = useState('');
  const [types, setTypes] = useState('');
  const [limit, setLimit] = useState('');
  const [dryRun, setDryRun] = useState(false);
  // The destinations to choose from (typing any id still works: the API judges it).
  const destinations = useLoad(() => get<{ destinations: Destination[] }>(`${acct(ctx)}/destinations`), [ctx.account]);
  const choices = (destinations.data?.destinations ?? []).filter((d) => visibleDestination(ctx, d.id)).map((d) => d.id);
  const start = useAction(() =>
    post<{ id: string }>(`${acct(ctx)}/replays`, {
      ...(destination.trim() ? { destination: destination.trim() } : {}),
      ...(since ? { since: localToIso(since) } : {}),
      ...(until ? { until: localToIso(until) } : {}),
      ...(types.trim() ? { eventTypes: types.split(/[\s,]+/).filter(Boolean) } : {}),
      // A number the API checks (a whole number from 1 to 100,000); anything else goes as typed, for its message.
      ...(limit.trim() ? { limit: /^\d+$/.test(limit.trim()) ? Number(limit.trim()) : limit.trim() } : {}),
      ...(dryRun ? { dryRun: true } : {}),
    }),
  );
  const errors = start.error instanceof ApiError ? issuesByField(start.error.issues) : {};
  return (
    <section aria-labelledby="replays-title">
      <h1 id="replays-title">Replays</h1>
      <p class="muted">A replay sends dead letters again: those of one destination, dead-lettered in a time range, of some types, or all of this account’s.</p>
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
            <Field id="replay-destination" label="Destination (optional)" hint="Every destination when left empty." errors={errors.destination}>
              <input id="replay-destination" list="replay-destinations" autoComplete="off" value={destination} onInput={onValue(setDestination)} aria-describedby="replay-destination-hint" />
              <datalist id="replay-destinations">
                {choices.map((id) => (
                  <option key={id} value={id} />
                ))}
              </datalist>
            </Field>
            <Field id="replay-since" label="From (optional)" hint="Dead-lettered at or after, your local time." errors={errors.since}>
              <input id="replay-since" type="datetime-local" step={1} value={since} onInput={onValue(setSince)} aria-describedby="replay-since-hint" />
            </Field>
            <Field id="replay-until" label="To (optional)" hint="Dead-lettered before this time." errors={errors.until}>
              <input id="replay-until" type="datetime-local" step={1} value={until} onInput={onValue(setUntil)} aria-describedby="replay-until-hint" />
            </Field>
          </div>
          <div class="row">
            <Field id="replay-types" label="Event types (optional)" hint="Separated by commas; a trailing * matches a prefix (com.example.*)." errors={errors.eventTypes}>
              <input id="replay-types" value={types} onInput={onValue(setTypes)} aria-describedby="replay-types-hint" />
            </Field>
            <Field id="replay-limit" label="At most (optional)" hint="How many dead letters, 1 to 100,000." errors={errors.limit}>
              <input id="replay-limit" inputMode="numeric" value={limit} onInput={onValue(setLimit)} aria-describedby="replay-limit-hint" />
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
