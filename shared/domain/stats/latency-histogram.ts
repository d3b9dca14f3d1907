/**
 * Attempt latency as a fixed histogram: the same log-spaced bins everywhere, so histograms
 * from any writer, shard or bucket add up by bin, and a percentile of any span is read from
 * their sum without keeping a single sample. Pure.
 *
 * Bin i holds latencies in (LATENCY_BOUNDS_MS[i - 1], LATENCY_BOUNDS_MS[i]] ms (bin 0 from 0);
 * the last bin, LATENCY_BOUNDS_MS.length, holds everything over 60 s.
 */
export const LATENCY_BOUNDS_MS = [5, 7, 10, 15, 20, 30, 50, 75, 100, 150, 200, 300, 500, 750, 1000, 1500, 2000, 3000, 5000, 7500, 10_000, 15_000, 30_000, 60_000] as const;

/** Bins, the overflow bin (over 60 s) included. */
export const LATENCY_BINS = LATENCY_BOUNDS_MS.length + 1;

/** A bin's key, as stored: `b00` … `b24` (two digits, so they sort). */
export type LatencyBinKey = `b${string}`;

/** Sparse: only the bins hit, each with its count. */
export type LatencyHistogram = Partial<Record<LatencyBinKey, number>>;

export function binKey(bin: number): LatencyBinKey {
  return `b${String(bin).padStart(2, '0')}`;
}

const KEY = /^b(\d{2})$/;

/** The bin of a key, or undefined for anything that is not one (a stored field from elsewhere). */
export function binOfKey(key: string): number | undefined {
  const m = KEY.exec(key);
  const bin = m ? Number(m[1]) : NaN;
  return bin >= 0 && bin < LATENCY_BINS ? bin : undefined;
}

/** The bin a latency falls in; a negative or non-finite duration counts as 0 ms. */
export function binOf(ms: number): number {
  const v = Number.isFinite(ms) && ms > 0 ? ms : 0;
  let lo = 0;
  let hi: number = LATENCY_BOUNDS_MS.length;
  // The first bound at or above v (binary search over 24 bounds).
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (LATENCY_BOUNDS_MS[mid]! >= v) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** The bin's range in ms: (lower, upper]; the overflow bin's upper is Infinity. */
export function binRange(bin: number): { lower: number; upper: number } {
  return { lower: bin === 0 ? 0 : LATENCY_BOUNDS_MS[bin - 1]!, upper: LATENCY_BOUNDS_MS[bin] ?? Infinity };
}

/** One sample added (a new histogram; the input is not changed). */
export function withSample(hist: LatencyHistogram | undefined, ms: number, count = 1): LatencyHistogram {
  const key = binKey(binOf(ms));
  return { ...hist, [key]: (hist?.[key] ?? 0) + count };
}

/** Bin-by-bin sums; bins at zero left out. */
export function addHistograms(...hists: readonly (LatencyHistogram | undefined)[]): LatencyHistogram {
  const sum: LatencyHistogram = {};
  for (const h of hists) {
    if (!h) continue;
    for (const [key, n] of Object.entries(h)) {
      if (binOfKey(key) === undefined || typeof n !== 'number' || !(n > 0)) continue;
      const k = key as LatencyBinKey;
      sum[k] = (sum[k] ?? 0) + n;
    }
  }
  return sum;
}

/** Samples in the histogram. */
export function sampleCount(hist: LatencyHistogram | undefined): number {
  return Object.values(addHistograms(hist)).reduce<number>((n, c) => n + (c ?? 0), 0);
}

/**
 * The q-quantile (0 < q ≤ 1; 0.5 the median, 0.99 the p99), in ms, undefined when the
 * histogram is empty. The sample of rank ⌈q·n⌉ (the exact nearest-rank percentile) lies in
 * one bin; the estimate interpolates linearly inside that bin, towards its upper bound, by
 * that rank's place among the bin's samples, so it lies in the same bin: it is off by at most
 * that bin's width, which is at most half the bin's upper bound (5 ms in the first bin). In the
 * overflow bin (over 60 s) the estimate is 60 000 ms, a lower bound.
 */
export function percentile(hist: LatencyHistogram | undefined, q: number): number | undefined {
  if (!(q > 0 && q <= 1)) throw new RangeError(`percentile: q must be in (0, 1], not ${q}`);
  const counts = Array.from({ length: LATENCY_BINS }, (_, bin) => hist?.[binKey(bin)] ?? 0).map((n) => (n > 0 ? n : 0));
  const total = counts.reduce((a, b) => a + b, 0);
  if (total === 0) return undefined;
  const rank = Math.max(1, Math.ceil(q * total - 1e-9));
  let before = 0;
  for (let bin = 0; bin < LATENCY_BINS; bin++) {
    const n = counts[bin]!;
    if (before + n >= rank) {
      const { lower, upper } = binRange(bin);
      if (!Number.isFinite(upper)) return lower;
      return lower + ((upper - lower) * (rank - before)) / n;
    }
    before += n;
  }
  return binRange(LATENCY_BINS - 1).lower;
}
