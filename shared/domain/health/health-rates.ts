import { z } from 'zod';

/**
 * Herald's own health as the console's Overview panel shows it (docs/observability.md): rates
 * and a p99 worked out from cumulative samples of the process's own metrics. Pure: the samples
 * and the time come in.
 */

/** The windows an operator may ask for, each in ms. */
export const HEALTH_WINDOWS = { '1m': 60_000, '5m': 300_000, '15m': 900_000, '1h': 3_600_000 } as const;
export type HealthWindow = keyof typeof HEALTH_WINDOWS;
export const LONGEST_HEALTH_WINDOW_MS = HEALTH_WINDOWS['1h'];

export const overviewQuerySchema = z.strictObject(
  { window: z.enum(Object.keys(HEALTH_WINDOWS) as [HealthWindow, ...HealthWindow[]], { error: 'window must be 1m, 5m, 15m or 1h' }).default('5m') },
  { error: 'the query takes window only' },
);

/** A histogram as cumulative counts per bucket: `counts[i]` observations ≤ `bounds[i]` (and above the bound before); the last, above every bound. */
export interface Buckets {
  bounds: readonly number[];
  counts: readonly number[];
}

/** The process's cumulative totals at one moment (epoch ms). */
export interface HealthSample {
  at: number;
  accepted: number;
  delivered: number;
  deadLettered: number;
  endToEnd: Buckets;
}

/** What the window's samples say. `coveredSeconds` is the span the rates are over: shorter than the window while the process is younger. */
export interface SampledHealth {
  acceptedPerSecond: number | null;
  deliveredPerSecond: number | null;
  endToEndP99Ms: number | null;
  deadLettered: number;
  accepted: number;
  delivered: number;
  coveredSeconds: number;
}

/** The sample the window's rates start from: the newest at or before its start, else (a younger process) the oldest. */
export function baselineOf(samples: readonly HealthSample[], now: number, windowMs: number): HealthSample | undefined {
  const start = now - windowMs;
  let found: HealthSample | undefined;
  for (const s of samples) if (s.at <= start && (found === undefined || s.at > found.at)) found = s;
  return found ?? samples.reduce<HealthSample | undefined>((oldest, s) => (oldest === undefined || s.at < oldest.at ? s : oldest), undefined);
}

/** `q` (0..1) of the observations in `buckets`, interpolated linearly inside its bucket (the Prometheus histogram_quantile way); null with none. */
export function bucketQuantile(buckets: Buckets, q: number): number | null {
  const total = buckets.counts.reduce((n, c) => n + c, 0);
  if (total <= 0) return null;
  const rank = q * total;
  let below = 0;
  for (let i = 0; i < buckets.counts.length; i++) {
    const count = buckets.counts[i]!;
    if (count > 0 && below + count >= rank) {
      // Above the last bound nothing says how far: its bound is the most that can be said.
      if (i >= buckets.bounds.length) return buckets.bounds.at(-1) ?? null;
      const lower = i === 0 ? 0 : buckets.bounds[i - 1]!;
      const upper = buckets.bounds[i]!;
      return lower + ((upper - lower) * (rank - below)) / count;
    }
    below += count;
  }
  return buckets.bounds.at(-1) ?? null;
}

/** The observations between two cumulative histograms (counts only grow; a mismatch of bounds gives the later one whole). */
export function bucketsBetween(from: Buckets, to: Buckets): Buckets {
  const same = from.bounds.length === to.bounds.length && from.bounds.every((b, i) => b === to.bounds[i]);
  if (!same) return to;
  return { bounds: to.bounds, counts: to.counts.map((c, i) => Math.max(0, c - (from.counts[i] ?? 0))) };
}

const round = (v: number, places: number) => Math.round(v * 10 ** places) / 10 ** places;

/** The window's numbers from `latest` back to its baseline among `samples`. */
export function summarize(samples: readonly HealthSample[], latest: HealthSample, windowMs: number): SampledHealth {
  const base = baselineOf(samples, latest.at, windowMs) ?? latest;
  const seconds = (latest.at - base.at) / 1000;
  const delta = (k: 'accepted' | 'delivered' | 'deadLettered') => Math.max(0, latest[k] - base[k]);
  const perSecond = (n: number) => (seconds > 0 ? round(n / seconds, 3) : null);
  const p99 = bucketQuantile(bucketsBetween(base.endToEnd, latest.endToEnd), 0.99);
  return {
    acceptedPerSecond: perSecond(delta('accepted')),
    deliveredPerSecond: perSecond(delta('delivered')),
    endToEndP99Ms: p99 === null ? null : round(p99, 1),
    deadLettered: delta('deadLettered'),
    accepted: delta('accepted'),
    delivered: delta('delivered'),
    coveredSeconds: round(seconds, 1),
  };
}

/**
 * The samples kept: those the longest window may still start from (the newest before its start
 * among them), about one per `spacingMs` (a newer one replaces the newest while it is closer than that to the one before), never
 * the first (the zeros the process started from), and never more than `max`.
 */
export function keepSamples(samples: readonly HealthSample[], next: HealthSample, spacingMs: number, max = 2_000): HealthSample[] {
  const [first, ...rest] = samples;
  // The newest kept stands in until the next is `spacingMs` past the one before it.
  const before = rest.length >= 2 ? rest.at(-2) : first;
  const kept = rest.length > 0 && before !== undefined && next.at - before.at < spacingMs ? [...rest.slice(0, -1), next] : [...rest, next];
  const start = next.at - LONGEST_HEALTH_WINDOW_MS;
  const firstInside = kept.findIndex((s) => s.at > start);
  const trimmed = firstInside > 1 ? kept.slice(firstInside - 1) : kept;
  const capped = trimmed.length > max ? trimmed.slice(trimmed.length - max) : trimmed;
  return first === undefined ? capped : [first, ...capped];
}
