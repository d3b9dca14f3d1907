import { leavesSharedLane, rateWaitLimitMs } from '../../../shared/domain/delivery/lane-admission';

const waits = { dedicatedMs: 30_000, sharedMs: 1_000, handlingBudgetMs: 45_000 };

test('a shared lane waits at most its short limit, a dedicated one up to 30 s', () => {
  expect(rateWaitLimitMs({}, 5_000, waits)).toBe(1_000);
  expect(rateWaitLimitMs({ lane: 'dedicated' }, 5_000, waits)).toBe(30_000);
  // A shared limit above the dedicated one is held to it.
  expect(rateWaitLimitMs({}, 5_000, { ...waits, sharedMs: 40_000 })).toBe(30_000);
});

test("a bundle's member waits on a shared lane as on a dedicated one (the bundle holds one push slot), within the same budget", () => {
  expect(rateWaitLimitMs({}, 5_000, waits, true)).toBe(30_000);
  expect(rateWaitLimitMs({}, 30_000, waits, true)).toBe(15_000);
});

test('a long attempt timeout shortens the wait, so that both fit in handling one push; never below 0', () => {
  expect(rateWaitLimitMs({ lane: 'dedicated' }, 30_000, waits)).toBe(15_000);
  expect(rateWaitLimitMs({}, 44_500, waits)).toBe(500);
  expect(rateWaitLimitMs({ lane: 'dedicated' }, 60_000, waits)).toBe(0);
});

test('only a slow destination on a shared lane leaves it', () => {
  expect(leavesSharedLane({}, true)).toBe(true);
  expect(leavesSharedLane({}, false)).toBe(false);
  expect(leavesSharedLane({ lane: 'dedicated' }, true)).toBe(false);
});
