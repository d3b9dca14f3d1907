import { bootstrapRatio } from '../bench/stats';

/** A small deterministic generator (mulberry32), so the intervals are the same every run. */
function seeded(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** 1200 latencies of 100–160 ms (20 a second), where a stall every 20 s delays 4 events in a row to 400 ms: 1 % in all. */
function latencies(random: () => number): number[] {
  return Array.from({ length: 1200 }, (_, i) => (i % 400 < 4 ? 400 : 100 + 60 * random()));
}

describe('bootstrapRatio', () => {
  it('brackets 1 for two samples from one process, and excludes it when one sample is twice the other', () => {
    const random = seeded(7);
    const a = Array.from({ length: 1200 }, () => 100 + 60 * random());
    const b = Array.from({ length: 1200 }, () => 100 + 60 * random());
    const same = bootstrapRatio(a, b, 99, { block: 20, rounds: 300, random })!;
    expect(same.low).toBeLessThan(1);
    expect(same.high).toBeGreaterThan(1);
    expect(same.high - same.low).toBeLessThan(0.1);
    const doubled = bootstrapRatio(a.map((v) => v * 2), b, 99, { block: 20, rounds: 300, random })!;
    expect(doubled.low).toBeGreaterThan(1.8);
  });

  it('drawn in blocks, bursts widen the interval: a tail of stalls is not read as a precise number', () => {
    const random = seeded(11);
    const a = latencies(random);
    const b = latencies(random);
    const blocks = bootstrapRatio(a, b, 99, { block: 20, rounds: 300, random })!;
    const singles = bootstrapRatio(a, b, 99, { block: 1, rounds: 300, random })!;
    expect(blocks.high - blocks.low).toBeGreaterThan(singles.high - singles.low);
  });

  it('is undefined for an empty sample', () => {
    expect(bootstrapRatio([], [1, 2], 99, { block: 20 })).toBeUndefined();
  });
});
