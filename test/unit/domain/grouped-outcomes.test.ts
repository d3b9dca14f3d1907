import { COMMIT_LIMITS, commitsOf, headEntryDelivery, headEntryId, mergedHeadEntryId, PACE_LINGER_MS, paceLingerMs, parseHeadEntryId } from '../../../shared/domain/delivery/grouped-outcomes';

describe('grouped outcomes: log head entries', () => {
  test('an entry names its delivery and the groups holding it; merged, one entry names the groups of both', () => {
    expect(headEntryId('acme_d.k')).toBe('acme_d.k');
    expect(headEntryId('acme_d.k', undefined)).toBe('acme_d.k');
    expect(headEntryId('acme_d.k', 'acme_w1')).toBe('acme_d.k~acme_w1');
    expect(parseHeadEntryId('acme_d.k')).toEqual({ id: 'acme_d.k', groups: [] });
    expect(parseHeadEntryId('acme_d.k~acme_w1~acme_w2')).toEqual({ id: 'acme_d.k', groups: ['acme_w1', 'acme_w2'] });
    expect(mergedHeadEntryId('acme_d.k', 'acme_d.k~acme_w1')).toBe('acme_d.k~acme_w1');
    expect(mergedHeadEntryId('acme_d.k~acme_w1', 'acme_d.k~acme_w2')).toBe('acme_d.k~acme_w1~acme_w2');
    expect(mergedHeadEntryId('acme_d.k~acme_w1', 'acme_d.k~acme_w1')).toBe('acme_d.k~acme_w1');
    expect(mergedHeadEntryId('acme_d.k', 'acme_d.j')).toBeUndefined();
    expect(headEntryDelivery('acme_d.k~acme_w1~acme_w2')).toBe('acme_d.k');
  });
});

describe('grouped outcomes: commits within Firestore limits', () => {
  test('at most 500 writes a commit, whatever the queue holds', () => {
    const commits = commitsOf(Array.from({ length: 1_201 }, () => 1_000));
    expect(commits.map((c) => c.length)).toEqual([500, 500, 201]);
    expect(commits.flat()).toEqual(Array.from({ length: 1_201 }, (_, i) => i));
  });

  test('below the byte limit a commit; a group larger than it goes alone', () => {
    const limits = { writes: 500, bytes: 100 };
    expect(commitsOf([60, 30, 20, 100, 150, 10], limits)).toEqual([[0, 1], [2], [3], [4], [5]]);
    expect(commitsOf([], limits)).toEqual([]);
    // Groups of the largest size Herald writes (GROUP_LIMITS.bytes, 512 KiB): 16 to a commit, under 10 MiB.
    expect(commitsOf(Array.from({ length: 40 }, () => 512 * 1024)).map((c) => c.length)).toEqual([16, 16, 8]);
    expect(COMMIT_LIMITS.bytes).toBeLessThan(10 * 1024 * 1024);
  });
});

describe('paceLingerMs: how long a lone success waits for company', () => {
  const now = 10_000;
  test('a quiet Herald waits for nothing: fewer than three outcomes within the last second', () => {
    expect(paceLingerMs([], now)).toBe(0);
    expect(paceLingerMs([now - 30, now], now)).toBe(0);
    // Close together, but over a second ago.
    expect(paceLingerMs([now - 1_200, now - 1_100, now - 1_050, now], now)).toBe(0);
  });

  test('outcomes 25 ms apart (40/s): twice the gap, so that the next one shares the write', () => {
    expect(paceLingerMs([now - 75, now - 50, now - 25, now], now)).toBe(50);
    expect(paceLingerMs([now - 30, now - 20, now - 10, now], now)).toBe(20);
  });

  test('capped at PACE_LINGER_MS, and none when the gap is longer than the cap', () => {
    expect(paceLingerMs([now - 120, now - 80, now - 40, now], now)).toBe(PACE_LINGER_MS);
    expect(paceLingerMs([now - 180, now - 120, now - 60, now], now)).toBe(0);
  });
});
