import { storeBusyMessage } from '../../shared/app/store-busy';
import { WriteContentionError } from '../../shared/ports';

/** Which store faults the admin API answers 503 (send it again) instead of 500. */
test('contention, a lost transaction lock and Firestore overload are "send it again"; anything else is not', () => {
  expect(storeBusyMessage(new WriteContentionError('destinations/orders', 40, 5000))).toMatch(/send it again$/);
  expect(storeBusyMessage(Object.assign(new Error('10 ABORTED: Transaction lock timeout'), { code: 10 }))).toMatch(/send it again$/);
  for (const code of [4, 8, 14]) expect(storeBusyMessage(Object.assign(new Error('busy'), { code }))).toMatch(/again in a moment$/);
  expect(storeBusyMessage(Object.assign(new Error('3 INVALID_ARGUMENT'), { code: 3 }))).toBeUndefined();
  expect(storeBusyMessage(new TypeError('x is undefined'))).toBeUndefined();
  expect(storeBusyMessage(undefined)).toBeUndefined();
});
