import { useEffect, useState } from 'preact/hooks';
import { get } from '../api';
import { HealthOverview } from '../types';
import { Empty, ErrorBox, Loading, Tile, useLoad } from '../ui';

/** How often the numbers are read again (ms): a few seconds, as an operator watching expects. */
const REFRESH_MS = 5_000;

const WINDOWS = { '1m': ['1 min', 'minute'], '5m': ['5 min', '5 minutes'], '15m': ['15 min', '15 minutes'], '1h': ['1 h', 'hour'] } as const;
type Window = keyof typeof WINDOWS;

const SOURCES: Record<HealthOverview['source'], string> = {
  process: "this process's own metrics (local mode: what GET /metrics shows)",
  'cloud-monitoring': 'Cloud Monitoring',
  none: 'nowhere',
};

const num = (v: number | null, unit: string) => (v === null ? '—' : `${v.toLocaleString(undefined, { maximumFractionDigits: v < 10 ? 2 : 1 })} ${unit}`);
const duration = (ms: number | null) => (ms === null ? '—' : ms >= 1000 ? num(Math.round(ms / 100) / 10, 's') : num(Math.round(ms), 'ms'));

/**
 * Herald's own health, the whole deployment's: accepted and delivered per second, the p99 from
 * accepted to delivered, dead letters and the lanes' backlog, from the same numbers its metrics
 * carry, so an operator without Cloud Monitoring sees them too. The operator's only.
 */
export function HeraldHealth() {
  const [window, setWindow] = useState<Window>('5m');
  const health = useLoad(() => get<HealthOverview>(`/overview?window=${window}`), [window]);
  const { reload } = health;
  useEffect(() => {
    const timer = setInterval(reload, REFRESH_MS);
    return () => clearInterval(timer);
  }, [reload]);
  const h = health.data?.window === window ? health.data : undefined;
  const last = WINDOWS[window][1];
  const younger = h?.coveredSeconds !== undefined && h.coveredSeconds < 0.95 * (h.window === '1h' ? 3600 : h.window === '15m' ? 900 : h.window === '5m' ? 300 : 60);
  return (
    <section aria-labelledby="health-title" class="health" data-testid="herald-health">
      <div class="page-head">
        <h2 id="health-title">Herald health</h2>
        <div class="segmented" role="group" aria-label="Health window">
          {(Object.keys(WINDOWS) as Window[]).map((w) => (
            <button key={w} type="button" aria-pressed={window === w} onClick={() => setWindow(w)}>
              {WINDOWS[w][0]}
            </button>
          ))}
        </div>
      </div>
      {!h && health.loading && <Loading what="Herald's health" />}
      {health.error !== undefined && <ErrorBox error={health.error} title="Could not read Herald's health" />}
      {h && h.source === 'none' && (
        <Empty title="No health numbers: Herald records none here.">
          <p data-testid="health-reason">{h.reason}</p>
        </Empty>
      )}
      {h && h.source !== 'none' && (
        <>
          <p class="muted">
            Every account, the last {last}, from {SOURCES[h.source]}; read every {REFRESH_MS / 1000} s, last at {new Date(h.asOf).toLocaleTimeString()}.
            {younger && ` Herald started ${Math.round(h.coveredSeconds!)} s ago: the rates are over that time.`}
          </p>
          <dl class="tiles">
            <Tile label="Accepted" testId="health-accepted">{num(h.acceptedPerSecond, 'events/s')}</Tile>
            <Tile label="Delivered" testId="health-delivered">{num(h.deliveredPerSecond, '/s')}</Tile>
            <Tile label="End-to-end p99" testId="health-p99">{duration(h.endToEndP99Ms)}</Tile>
            <Tile label={`Dead letters (${WINDOWS[window][0]})`} testId="health-dead">{h.deadLettered === null ? '—' : h.deadLettered}</Tile>
            <Tile label="Lanes' oldest backlog" testId="health-lanes">{num(h.lanesOldestBacklogSeconds, 's')}</Tile>
          </dl>
          {h.counts && (
            <p class="hint" data-testid="health-counts">
              In that time: {h.counts.accepted} events accepted, {h.counts.delivered} deliveries made.
            </p>
          )}
          {h.lanesBacklogBasis && <p class="hint">Lanes' oldest backlog: {h.lanesBacklogBasis}.</p>}
        </>
      )}
    </section>
  );
}
