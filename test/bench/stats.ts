/** Nearest-rank percentile of ascending `sorted`; undefined when empty. */
export function percentile(sorted: readonly number[], p: number): number | undefined {
  if (sorted.length === 0) return undefined;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

export interface Distribution {
  count: number;
  mean?: number;
  p50?: number;
  p90?: number;
  p99?: number;
  max?: number;
}

export function distribution(values: readonly number[]): Distribution {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return { count: 0 };
  return {
    count: sorted.length,
    mean: round(sorted.reduce((s, v) => s + v, 0) / sorted.length),
    p50: round(percentile(sorted, 50)),
    p90: round(percentile(sorted, 90)),
    p99: round(percentile(sorted, 99)),
    max: round(sorted[sorted.length - 1]),
  };
}

export function round(value: number | undefined, digits = 1): number | undefined {
  if (value === undefined || !Number.isFinite(value)) return undefined;
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

export const ratio = (a: number | undefined, b: number | undefined): number | undefined =>
  a === undefined || b === undefined || b === 0 ? undefined : round(a / b, 2);

const cell = (v: unknown): string => (v === undefined ? '—' : typeof v === 'number' ? v.toLocaleString('en-US', { maximumFractionDigits: 2 }) : String(v));

/** A plain text table: first column left-aligned, the rest right-aligned. */
export function table(header: readonly string[], rows: readonly (readonly unknown[])[]): string {
  const cells = [header.map(String), ...rows.map((r) => r.map(cell))];
  const widths = header.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: readonly string[]) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(cells[0]!), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join('\n');
}

/**
 * How far the ratio of two samples' `p`th percentiles could move by chance: the 5th and 95th
 * percentiles of that ratio over `rounds` block-bootstrap resamples of each. Blocks of
 * `block` consecutive values (in time order) are drawn whole, because a tail is made of
 * bursts — one stall delays every event of its second — and drawing single values would
 * treat a burst as independent luck and report the interval far too narrow.
 */
export function bootstrapRatio(
  numerator: readonly number[],
  denominator: readonly number[],
  p: number,
  options: { block: number; rounds?: number; random?: () => number },
): { low: number; high: number } | undefined {
  const rounds = options.rounds ?? 1000;
  const random = options.random ?? Math.random;
  const blocksOf = (values: readonly number[]) => {
    const blocks: number[][] = [];
    for (let i = 0; i < values.length; i += options.block) blocks.push(values.slice(i, i + options.block));
    return blocks;
  };
  const resampled = (blocks: readonly number[][]) => {
    const out: number[] = [];
    for (let i = 0; i < blocks.length; i++) out.push(...blocks[Math.floor(random() * blocks.length)]!);
    return percentile(out.sort((a, b) => a - b), p);
  };
  const num = blocksOf(numerator);
  const den = blocksOf(denominator);
  if (num.length === 0 || den.length === 0) return undefined;
  const ratios: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const d = resampled(den);
    if (d) ratios.push(resampled(num)! / d);
  }
  ratios.sort((a, b) => a - b);
  const low = percentile(ratios, 5);
  const high = percentile(ratios, 95);
  return low === undefined || high === undefined ? undefined : { low: round(low, 3)!, high: round(high, 3)! };
}
