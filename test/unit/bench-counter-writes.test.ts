import { counterWriteStats, docStats, maxInWindow } from '../bench/counter-writes';

describe('maxInWindow', () => {
  it('counts the most times in any half-open window', () => {
    expect(maxInWindow([], 1000)).toBe(0);
    expect(maxInWindow([0], 1000)).toBe(1);
    // Exactly a second apart: never two in one window.
    expect(maxInWindow([0, 1000, 2000, 3000], 1000)).toBe(1);
    // 999 ms apart: two in one window.
    expect(maxInWindow([0, 1000, 1999, 3000], 1000)).toBe(2);
    expect(maxInWindow([0, 10, 20, 2000, 2001], 1000)).toBe(3);
  });
});

describe('docStats', () => {
  it('gives the mean rate over the first-to-last span and the shortest gap', () => {
    expect(docStats('d', [2000, 0, 1000, 3000, 4000])).toEqual({ doc: 'd', writes: 5, maxInWindow: 1, meanPerSecond: 1, minGapMs: 1000, closeWrites: 0 });
    expect(docStats('d', [0, 500, 1000])).toEqual({ doc: 'd', writes: 3, maxInWindow: 2, meanPerSecond: 2, minGapMs: 500, closeWrites: 2 });
  });

  it('counts writes a timer tick apart (999 ms, say) as one a second, but not closer ones', () => {
    expect(docStats('d', [0, 999.2, 1998.9, 2999]).maxInWindow).toBe(1);
    expect(docStats('d', [0, 989, 2000]).maxInWindow).toBe(2);
    expect(docStats('d', [0, 999.2, 1998.9, 2999], { toleranceMs: 0 }).maxInWindow).toBe(2);
  });

  it('leaves the rate and gap out for a single write', () => {
    expect(docStats('d', [5])).toEqual({ doc: 'd', writes: 1, maxInWindow: 1, closeWrites: 0 });
  });
});

describe('counterWriteStats', () => {
  it('counts writes per delivered event and picks the hottest document by its busiest window', () => {
    const writes = [
      // Many writes, never two within a second.
      ...[0, 1000, 2000, 3000, 4000].map((at) => ({ doc: 'a~0~1', at })),
      // Fewer, but two within 300 ms.
      { doc: 'a~60000~1', at: 5000 },
      { doc: 'a~60000~1', at: 5300 },
    ];
    const stats = counterWriteStats(writes, 700);
    expect(stats).toMatchObject({ writes: 7, documents: 2, perDelivered: 0.01, windowMs: 1000, toleranceMs: 10 });
    expect(stats.hottest).toEqual({ doc: 'a~60000~1', writes: 2, maxInWindow: 2, meanPerSecond: 3.33, minGapMs: 300, closeWrites: 1 });
  });

  it('says what asked for the flushes of the closest two writes, and counts writes by it', () => {
    const stats = counterWriteStats(
      [
        { doc: 'a', at: 0, via: 'timer' },
        { doc: 'a', at: 1000, via: 'timer' },
        { doc: 'a', at: 1009, via: 'after a delivery' },
        { doc: 'a', at: 2000, via: 'timer' },
      ],
      100,
    );
    expect(stats.hottest).toMatchObject({ writes: 4, maxInWindow: 2, minGapMs: 9, minGapVia: 'timer → after a delivery', closeWrites: 1 });
    expect(stats.byVia).toEqual({ timer: 3, 'after a delivery': 1 });
  });

  it('breaks ties on the busiest window by the number of writes', () => {
    const stats = counterWriteStats(
      [
        { doc: 'x', at: 0 },
        { doc: 'y', at: 0 },
        { doc: 'y', at: 1500 },
      ],
      0,
    );
    expect(stats.hottest?.doc).toBe('y');
    expect(stats.perDelivered).toBeUndefined();
  });

  it('reports no hottest document when nothing was written', () => {
    expect(counterWriteStats([], 10)).toEqual({ writes: 0, documents: 0, perDelivered: 0, windowMs: 1000, toleranceMs: 10 });
  });
});
