import { addHistograms, binKey, binOf, binOfKey, binRange, LATENCY_BINS, LATENCY_BOUNDS_MS, LatencyHistogram, percentile, sampleCount, withSample } from '../../../shared/domain/stats/latency-histogram';
import { seededRandom } from '../../chaos/scenario';

/** A seeded generator: the same samples on every run. */
const random = seededRandom;

/** The exact nearest-rank percentile: the sample of rank ⌈q·n⌉. */
function exact(samples: readonly number[], q: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.max(1, Math.ceil(q * sorted.length)) - 1]!;
}

function histogramOf(samples: readonly number[]): LatencyHistogram {
  return samples.reduce<LatencyHistogram>((h, ms) => withSample(h, ms), {});
}

describe('latency bins', () => {
  test('24 bounds, log-spaced from 5 ms to 60 s, rising; 25 bins with the overflow', () => {
    expect(LATENCY_BOUNDS_MS).toHaveLength(24);
    expect(LATENCY_BINS).toBe(25);
    expect(LATENCY_BOUNDS_MS[0]).toBe(5);
    expect(LATENCY_BOUNDS_MS.at(-1)).toBe(60_000);
    for (let i = 1; i < LATENCY_BOUNDS_MS.length; i++) {
      const ratio = LATENCY_BOUNDS_MS[i]! / LATENCY_BOUNDS_MS[i - 1]!;
      expect(ratio).toBeGreaterThan(1.3);
      expect(ratio).toBeLessThanOrEqual(2);
    }
  });

  test('a latency falls in the bin whose upper bound is the first at or above it', () => {
    expect(binOf(0)).toBe(0);
    expect(binOf(5)).toBe(0);
    expect(binOf(5.01)).toBe(1);
    expect(binOf(100)).toBe(8);
    expect(binOf(101)).toBe(9);
    expect(binOf(60_000)).toBe(23);
    expect(binOf(60_001)).toBe(24);
    expect(binOf(3_600_000)).toBe(24);
    expect(binOf(-3)).toBe(0);
    expect(binOf(NaN)).toBe(0);
    for (let bin = 0; bin < LATENCY_BINS; bin++) {
      const { lower, upper } = binRange(bin);
      if (Number.isFinite(upper)) expect(binOf(upper)).toBe(bin);
      expect(binOf(lower + 0.001)).toBe(bin);
    }
  });

  test('keys are b00 … b24, and nothing else is read as one', () => {
    expect(binKey(7)).toBe('b07');
    expect(binKey(24)).toBe('b24');
    expect(binOfKey('b07')).toBe(7);
    for (const bad of ['b25', 'b7', 'x07', 'b-1', 'latency']) expect(binOfKey(bad)).toBeUndefined();
  });

  test('histograms add bin by bin, sparse, the inputs unchanged', () => {
    const a = withSample(withSample({}, 3), 120);
    const b = withSample({}, 4, 5);
    expect(a).toEqual({ b00: 1, b09: 1 });
    expect(addHistograms(a, undefined, b, { b30: 9 } as LatencyHistogram)).toEqual({ b00: 6, b09: 1 });
    expect(a).toEqual({ b00: 1, b09: 1 });
    expect(sampleCount(addHistograms(a, b))).toBe(7);
    expect(addHistograms()).toEqual({});
  });
});

describe('percentiles from the histogram', () => {
  test('empty: none; q outside (0, 1]: refused', () => {
    expect(percentile({}, 0.5)).toBeUndefined();
    expect(percentile(undefined, 0.99)).toBeUndefined();
    expect(() => percentile({ b03: 1 }, 0)).toThrow(RangeError);
    expect(() => percentile({ b03: 1 }, 1.5)).toThrow(RangeError);
  });

  test('interpolated inside the bin of the rank, towards its upper bound', () => {
    // Ten samples in (10, 15]: the median is the 5th, half way; the p99 the 10th, the upper bound.
    const h: LatencyHistogram = { b03: 10 };
    expect(percentile(h, 0.5)).toBeCloseTo(12.5);
    expect(percentile(h, 0.99)).toBeCloseTo(15);
    // 99 fast, 1 slow: the p99 is still among the fast, the maximum is the slow one's bin.
    expect(percentile({ b00: 99, b16: 1 }, 0.99)).toBeCloseTo(5);
    expect(percentile({ b00: 99, b16: 1 }, 1)).toBeCloseTo(2000);
    // Over 60 s: 60 000 ms, a lower bound.
    expect(percentile({ b24: 3 }, 0.5)).toBe(60_000);
  });

  test.each([
    ['uniform 0-2 s', (r: () => number) => r() * 2000],
    ['log-normal around 80 ms', (r: () => number) => Math.exp(Math.log(80) + 0.8 * Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r()))],
    ['mostly fast, a slow tail', (r: () => number) => (r() < 0.97 ? 2 + r() * 40 : 1000 + r() * 20_000)],
  ])('%s: p50, p90, p99 within one bin width of the exact percentile', (_name, draw) => {
    for (const [seed, n] of [
      [1, 1],
      [2, 7],
      [3, 100],
      [4, 1000],
      [5, 20_000],
    ] as const) {
      const r = random(seed);
      const samples = Array.from({ length: n }, () => draw(r));
      const h = histogramOf(samples);
      expect(sampleCount(h)).toBe(n);
      for (const q of [0.5, 0.9, 0.99]) {
        const truth = exact(samples, q);
        const estimate = percentile(h, q)!;
        const { lower, upper } = binRange(binOf(truth));
        // The estimate is in the exact percentile's bin: at most one bin width off.
        expect({ q, n, estimate, inBin: estimate > lower && estimate <= upper }).toEqual({ q, n, estimate, inBin: true });
        expect(Math.abs(estimate - truth)).toBeLessThanOrEqual(upper - lower);
      }
    }
  });
});
