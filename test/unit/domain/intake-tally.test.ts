import { addTallies, deliveryTally, EMPTY_TALLY, sameTally, tallyOf } from '../../../shared/domain/intake/intake-tally';

describe("the reconciler's tally of an intake batch's records", () => {
  it('hashes each delivery id to the same unsigned 32-bit number on every instance', () => {
    // FNV-1a of the empty string is its offset basis; the values are fixed: records written by one version are read by the next.
    expect(deliveryTally('')).toBe(0x811c9dc5);
    expect(deliveryTally('a')).toBe(0xe40c292c);
    expect(deliveryTally('d1.k')).toBeGreaterThanOrEqual(0);
    expect(deliveryTally('d1.k')).toBeLessThan(2 ** 32);
  });

  it('an extra record does not stand for a missing one; order and how it is split do not matter', () => {
    const expected = tallyOf(['d1.ea', 'd2.eb']);
    expect(sameTally(tallyOf(['d2.eb', 'd3.eb']), expected)).toBe(false);
    expect(sameTally(tallyOf(['d2.eb', 'd1.ea']), expected)).toBe(true);
    expect(sameTally(addTallies(tallyOf(['d2.eb']), addTallies(EMPTY_TALLY, tallyOf(['d1.ea']))), expected)).toBe(true);
    expect(sameTally(tallyOf(['d1.ea']), expected)).toBe(false);
  });

  it('a sum past what a double holds exactly is never taken as a match', () => {
    const huge = { count: 3, sum: 2 ** 53 + 2 };
    expect(sameTally(huge, huge)).toBe(false);
  });
});
