import { AttemptResult, DeliveryRecord } from '../../../shared/domain/retry/delivery';
import { applied, firstRecord, isOwnWrite } from '../../../shared/domain/delivery/delivery-record';
import { transition } from '../../../shared/domain/retry/delivery-state';
import { HeraldEvent } from '../../../shared/domain/events/event';

/**
 * isOwnWrite: a record write tried again after its reply was lost finds its own record and
 * knows it from another writer's (issue 51).
 */

const T0 = new Date('2026-12-05T12:00:00.000Z');
const at = (ms: number) => new Date(T0.getTime() + ms);
const event: HeraldEvent = { attributes: { specversion: '1.0', id: 'e1', source: '/s', type: 't' }, data: Buffer.from('{}') };
const delivery = { id: 'd.e1', destination: { id: 'd' }, event };
const ok: AttemptResult = { kind: 'response', status: 204, durationMs: 3, bodyExcerpt: '' };
const busy: AttemptResult = { kind: 'response', status: 503, durationMs: 3, bodyExcerpt: '' };

const attempted = (ms: number, result: AttemptResult, retryAt?: number): DeliveryRecord =>
  firstRecord(delivery, T0.toISOString(), at(ms), {
    type: 'attempted',
    at: at(ms),
    result,
    decision: retryAt === undefined ? { kind: 'delivered' } : { kind: 'retry', at: at(retryAt), delayMs: retryAt - ms, retry: 1, reason: 'HTTP 503' },
  });

test('the record this write left is its own', () => {
  const mine = attempted(1_000, ok);
  expect(isOwnWrite(mine, mine)).toBe(true);
});

test("another attempt's record is not: another time, or another count", () => {
  const mine = attempted(1_000, ok);
  expect(isOwnWrite(attempted(1_001, ok), mine)).toBe(false);
  expect(isOwnWrite({ ...mine, attempts: 2 }, mine)).toBe(false);
});

test('still its own once moved on a little: a duplicate counted on it, its dead letter sent, the retry claimed by the pump', () => {
  const delivered = attempted(1_000, ok);
  const duplicated: DeliveryRecord = { ...delivered, duplicates: { count: 1, lastAt: at(2_000).toISOString() } };
  expect(isOwnWrite(duplicated, delivered)).toBe(true);
  const retry = attempted(1_000, busy, 60_000);
  const claimed = applied(transition(retry, { type: 'claim', now: at(60_000), claimTtlMs: 30_000 }));
  expect(isOwnWrite(claimed, retry)).toBe(true);
});

test('a write without an attempt (a deferral) is known by the time it waits until', () => {
  const deferred = firstRecord(delivery, T0.toISOString(), at(1_000), { type: 'defer', until: at(9_000) });
  expect(isOwnWrite(deferred, deferred)).toBe(true);
  expect(isOwnWrite(firstRecord(delivery, T0.toISOString(), at(1_000), { type: 'defer', until: at(9_500) }), deferred)).toBe(false);
  // Another status at the same counts and times (an abandon beside a queueing) is not this write either.
  const queued = { ...deferred, status: 'QUEUED' as const };
  expect(isOwnWrite({ ...queued, status: 'DEAD' }, queued)).toBe(false);
});
