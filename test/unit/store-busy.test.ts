import { storeBusyMessage } from '../../shared/app/support/store-busy';
import { WriteContentionError } from '../../shared/ports/deliveries';

/** Which store faults the admin API answers 503 (send it again) instead of 500. */
test('contention, a lost transaction lock and Firestore overload are "send it again"; anything else is not', () => {
  expect(storeBusyMessage(new WriteContentionError('destinations/orders', 40, 5000))).toMatch(/send it again$/);
  expect(storeBusyMessage(Object.assign(new Error('10 ABORTED: Transaction lock timeout'), { code: 10 }))).toMatch(/send it again$/);
  for (const code of [4, 8, 14]) expect(storeBusyMessage(Object.assign(new Error('busy'), { code }))).toMatch(/again in a moment$/);
  expect(storeBusyMessage(Object.assign(new Error('3 INVALID_ARGUMENT'), { code: 3 }))).toBeUndefined();
  expect(storeBusyMessage(new TypeError('x is undefined'))).toBeUndefined();
  expect(storeBusyMessage(undefined)).toBeUndefined();
});

test("a busy store's answer names none of its internals: no code name, no project or document path", () => {
  const faults = [
    new WriteContentionError('projects/herald-dev/databases/(default)/documents/destinations/orders', 40, 5000),
    Object.assign(new Error('10 ABORTED: Transaction lock timeout on projects/herald-dev/databases/(default)/documents/locks/replay-runner'), { code: 10 }),
    Object.assign(new Error('14 UNAVAILABLE: connect ECONNREFUSED (projects/herald-dev/topics/herald-events)'), { code: 14 }),
  ];
  for (const fault of faults) {
    const message = storeBusyMessage(fault)!;
    expect(message).toMatch(/^Herald's storage is busy: /);
    expect(message).not.toMatch(/projects\/|topics\/|documents\/|ABORTED|UNAVAILABLE|ECONNREFUSED/);
  }
});
