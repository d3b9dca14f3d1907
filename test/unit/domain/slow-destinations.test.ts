import { SlowDestinations } from '../../../shared/domain/delivery/slow-destinations';

const settings = { slowMs: 2000, forgetMs: 60_000 };

test('a destination is not slow until something shows it', () => {
  const slow = new SlowDestinations(settings);
  expect(slow.isSlow('a', 0)).toBe(false);
  const t = slow.begin('a', 0);
  expect(slow.isSlow('a', 1999)).toBe(false);
  slow.end('a', t, 150, 150, false);
  expect(slow.isSlow('a', 200)).toBe(false);
  expect(slow.size).toBe(0);
});

test('an attempt still running past slowMs makes it slow at once, before it ends', () => {
  const slow = new SlowDestinations(settings);
  slow.begin('a', 1000);
  expect(slow.isSlow('a', 2999)).toBe(false);
  expect(slow.isSlow('a', 3000)).toBe(true);
  expect(slow.isSlow('b', 3000)).toBe(false);
});

test('a timeout or a slow answer keeps it slow for forgetMs, a fast answer clears it', () => {
  const slow = new SlowDestinations(settings);
  const t1 = slow.begin('a', 0);
  slow.end('a', t1, 5000, 5000, true);
  expect(slow.isSlow('a', 5000 + 59_999)).toBe(true);
  expect(slow.isSlow('a', 5000 + 60_000)).toBe(false);
  expect(slow.size).toBe(0);

  const t2 = slow.begin('a', 70_000);
  slow.end('a', t2, 70_300, 300, true);
  expect(slow.isSlow('a', 70_400)).toBe(true);
  const t3 = slow.begin('a', 70_500);
  slow.end('a', t3, 70_520, 20, false);
  expect(slow.isSlow('a', 70_600)).toBe(false);
});

test('a slow answer (no timeout) at slowMs counts as slow', () => {
  const slow = new SlowDestinations(settings);
  const t = slow.begin('a', 0);
  slow.end('a', t, 2000, 2000, false);
  expect(slow.isSlow('a', 2001)).toBe(true);
});
