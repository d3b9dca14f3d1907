import { accountId, internalId, spread } from '../bench/scale-registry';

describe('the scale bench registry', () => {
  it('spreads the busy destinations evenly, with the last in sort order among them', () => {
    const picked = spread(100_000, 1000);
    expect(picked).toHaveLength(1000);
    expect(new Set(picked).size).toBe(1000);
    expect(picked.at(-1)).toBe(99_999);
    expect(picked[0]).toBeLessThan(100);
    expect([...picked].sort((a, b) => a - b)).toEqual(picked);
  });

  it('asks for no more than there are', () => {
    expect(spread(3, 10)).toEqual([0, 1, 2]);
  });

  it("names accounts so that the last account's last destination sorts after every other registered one", () => {
    const ids = [internalId(9999, 99), internalId(10, 3), internalId(9999, 100), internalId(9999, 999), 'scale-live-9', 'scale-9999', internalId(0, 0)];
    expect([...ids].sort().at(-1)).toBe(internalId(9999, 999));
    expect(accountId(7)).toBe('tenant-00007');
  });
});
