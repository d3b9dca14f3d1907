import { RecordState } from './ledger';

/**
 * Where a run's time after publishing goes (issue 51's quiet time), printed beside the progress
 * lines: per destination, what its unsettled deliveries wait for (a rate deferral, a retry's
 * schedule, a claim), how far ahead their due times reach, how fast its receiver takes events,
 * and its rate controller's document (the rate, the senders' backlogs and shares, the deferral
 * cursor). Read-only, from the Firestore emulator's REST API and the receivers' counts.
 */

/** A Firestore REST value, as the emulator answers it. */
export interface RestValue {
  nullValue?: null;
  booleanValue?: boolean;
  integerValue?: string;
  doubleValue?: number;
  stringValue?: string;
  timestampValue?: string;
  bytesValue?: string;
  arrayValue?: { values?: RestValue[] };
  mapValue?: { fields?: Record<string, RestValue> };
}

/** A REST value as plain JSON. */
export function plain(v: RestValue | undefined): unknown {
  if (!v) return undefined;
  if (v.mapValue) return Object.fromEntries(Object.entries(v.mapValue.fields ?? {}).map(([k, x]) => [k, plain(x)]));
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(plain);
  if (v.integerValue !== undefined) return Number(v.integerValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.booleanValue !== undefined) return v.booleanValue;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.timestampValue !== undefined) return v.timestampValue;
  return null;
}

interface RateDocView {
  state?: { rate?: number; phase?: string; judgedThrough?: number; holdUntil?: number; pausedUntil?: number };
  holders?: Record<string, { at?: number; until?: number; backlog?: number; reportedThrough?: number }>;
  grids?: { from?: number; rate?: number; holders?: string[]; weights?: number[] }[];
  deferCursor?: number;
  deferredAtRate?: number;
  advancedThrough?: number;
}

const s = (ms: number) => `${ms >= 0 ? '+' : ''}${(ms / 1000).toFixed(1)}s`;

/** One line of a destination's rate controller, times relative to `now`. */
export function describeRateDoc(raw: unknown, now: number): string {
  const d = raw as RateDocView;
  const st = d.state ?? {};
  const holders = Object.entries(d.holders ?? {})
    .map(([h, e]) => `${h.slice(-6)}:${e.backlog ?? '?'}`)
    .join(' ');
  const grid = d.grids?.at(-1);
  const parts = [
    `rate ${st.rate?.toFixed(1) ?? '?'} ${st.phase === 'slow-start' ? 'ss' : (st.phase ?? '?')}`,
    `judged ${st.judgedThrough === undefined ? '?' : s(st.judgedThrough * 1000 - now)}`,
    ...(st.holdUntil !== undefined ? [`hold ${s(st.holdUntil * 1000 - now)}`] : []),
    ...(st.pausedUntil !== undefined ? [`paused ${s(st.pausedUntil - now)}`] : []),
    `backlogs [${holders}]`,
    ...(grid ? [`grid ${grid.rate?.toFixed(1)}/s w[${(grid.weights ?? []).join(',')}] from ${s((grid.from ?? 0) - now)} (${d.grids!.length} grids)`] : []),
    ...(d.deferCursor !== undefined ? [`cursor ${s(d.deferCursor - now)}`] : []),
    ...(d.deferredAtRate !== undefined ? [`deferred at ${d.deferredAtRate.toFixed(1)}/s`] : []),
    ...(d.advancedThrough !== undefined ? [`advanced ${s(d.advancedThrough - now)}`] : []),
  ];
  return parts.join(', ');
}

/** What a destination's unsettled records wait for: rate deferrals, retries on their schedule, claims; and how far ahead they are due. */
export function describeWaiting(destinationId: string, eventKeys: readonly string[], records: ReadonlyMap<string, RecordState>, now: number): string {
  const groups = { deferred: [] as number[], retry: [] as number[], claimed: [] as number[] };
  let unrecorded = 0;
  for (const key of eventKeys) {
    const r = records.get(`${destinationId}.${key}`);
    if (!r) {
      unrecorded++;
      continue;
    }
    if (r.status === 'PENDING' && r.availableAt) (r.rateDeferred ? groups.deferred : groups.retry).push(Date.parse(r.availableAt) - now);
    if (r.status === 'IN_FLIGHT' && r.claimedAt) groups.claimed.push(Date.parse(r.claimedAt) - now);
  }
  const spread = (xs: number[]) => (xs.length === 0 ? '0' : `${xs.length} (${s(Math.min(...xs))}..${s(Math.max(...xs))})`);
  return `unrecorded ${unrecorded}, rate-deferred ${spread(groups.deferred)}, retry ${spread(groups.retry)}, claimed ${spread(groups.claimed)}`;
}

/** Every document of the rate-control collection, as plain JSON by destination id. */
export async function readRateDocs(firestoreHost: string, project: string): Promise<Map<string, unknown>> {
  const res = await fetch(`http://${firestoreHost}/v1/projects/${project}/databases/(default)/documents/rate-control?pageSize=300`, { headers: { authorization: 'Bearer owner' } });
  if (!res.ok) throw new Error(`reading rate-control: HTTP ${res.status} ${await res.text()}`);
  const page = (await res.json()) as { documents?: { name: string; fields?: Record<string, RestValue> }[] };
  return new Map((page.documents ?? []).map((d) => [decodeURIComponent(d.name.slice(d.name.lastIndexOf('/') + 1)), plain({ mapValue: { fields: d.fields ?? {} } })]));
}

/**
 * Herald's log in brief, for a run that failed where the log file is gone after (CI): each
 * WARNING-or-worse message with how often it came, when first and last (s from `t0`), and its
 * first `error` field; and the last lines that are not JSON (a crash's stack, startup notes).
 */
export function summariseLog(text: string, t0: number, top = 15): string[] {
  const byMessage = new Map<string, { n: number; first: number; last: number; error?: string }>();
  const plainLines: string[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) {
      if (line.trim() !== '') plainLines.push(line.slice(0, 300));
      continue;
    }
    let entry: { severity?: unknown; message?: unknown; time?: unknown; error?: unknown };
    try {
      entry = JSON.parse(line) as typeof entry;
    } catch {
      continue;
    }
    if (typeof entry.severity !== 'string' || !['WARNING', 'ERROR', 'CRITICAL', 'ALERT', 'EMERGENCY'].includes(entry.severity)) continue;
    const key = `${entry.severity} ${String(entry.message)}`;
    const at = typeof entry.time === 'string' ? (Date.parse(entry.time) - t0) / 1000 : NaN;
    const seen = byMessage.get(key) ?? { n: 0, first: at, last: at, ...(typeof entry.error === 'string' ? { error: entry.error.slice(0, 300) } : {}) };
    seen.n++;
    seen.last = at;
    byMessage.set(key, seen);
  }
  const ranked = [...byMessage].sort((a, b) => b[1].n - a[1].n).slice(0, top);
  return [
    `Herald's log: ${byMessage.size} kinds of WARNING or worse`,
    ...ranked.map(([m, s]) => `  ${s.n} × ${m} (${s.first.toFixed(1)}..${s.last.toFixed(1)} s)${s.error !== undefined ? `: ${s.error}` : ''}`),
    ...plainLines.slice(-10).map((l) => `  | ${l}`),
  ];
}
