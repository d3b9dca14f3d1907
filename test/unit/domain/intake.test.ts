import { activityWindowMs, expectedDeliveries, expectedInRuns, fitsBatch, laneMoving, mayWaitForLanes, recoveredRecord, skipAfterPostponed } from '../../../shared/domain/intake/intake';
import { HeraldEvent, matchesType } from '../../../shared/domain/events/event';

/** The intake journal's and the reconciler's rules, with the clock passed in. */

const event = (id: string, type = 'com.example.order'): HeraldEvent => ({ attributes: { specversion: '1.0', id, source: '/shop', type }, data: Buffer.from('{}') });
const T = Date.parse('2026-11-25T10:00:00.000Z');

test('expected deliveries: each event to each destination of its type that existed when it was accepted, once', () => {
  const batch = { id: 'i-1', acceptedAt: '2026-11-25T10:00:00.000Z', events: [event('e1'), event('e1'), event('e2', 'com.other')] };
  const destinations = [
    { id: 'orders', eventTypes: ['com.example.*'], createdAt: '2026-11-25T09:00:00.000Z' },
    { id: 'all', eventTypes: [], createdAt: '2026-11-25T09:00:00.000Z' },
    { id: 'late', eventTypes: [], createdAt: '2026-11-25T10:00:01.000Z' },
  ];
  expect(expectedDeliveries(batch, (type) => destinations.filter((d) => matchesType(d.eventTypes, type))).map((e) => e.destinationId).sort()).toEqual(['all', 'all', 'orders']);
});

test("expected deliveries leave out the events a destination's filter did not take: routing created nothing for them", () => {
  const batch = { id: 'i-1', acceptedAt: '2026-11-25T10:00:00.000Z', events: [event('e1'), event('e2'), event('e3')] };
  const destinations = [
    { id: 'all', eventTypes: [], createdAt: '2026-11-25T09:00:00.000Z' },
    { id: 'odd', eventTypes: [], createdAt: '2026-11-25T09:00:00.000Z', takes: (e: HeraldEvent) => e.attributes.id !== 'e2' },
  ];
  expect(expectedDeliveries(batch, () => destinations).map((e) => `${e.destinationId}/${e.event.attributes.id}`).sort()).toEqual(['all/e1', 'all/e2', 'all/e3', 'odd/e1', 'odd/e3']);
});

test('what a batch lane took by reference is expected as ingest routed it, whatever the routing says now; a destination deleted since is owed nothing', () => {
  const batch = { id: 'i-1', acceptedAt: '2026-11-25T10:00:00.000Z', events: [event('e1'), event('e2'), event('e3')], refs: { batched: [0, 2], gone: [1], odd: [1] } };
  // `odd`'s filter takes no event now, `batched` takes no type of these any more, `gone` was deleted.
  const destinations = [
    { id: 'all', eventTypes: [], createdAt: '2026-11-25T09:00:00.000Z' },
    { id: 'odd', eventTypes: [], createdAt: '2026-11-25T09:00:00.000Z', takes: () => false },
  ];
  const routing = Object.assign(() => destinations, { exists: (id: string) => id !== 'gone' });
  const expected = expectedDeliveries(batch, routing).map((e) => `${e.destinationId}/${e.event.attributes.id}`).sort();
  expect(expected).toEqual(['all/e1', 'all/e2', 'all/e3', 'batched/e1', 'batched/e3', 'odd/e2']);
  // Once each, when routing expects it too.
  const both = Object.assign(() => [{ id: 'batched', eventTypes: [], createdAt: '2026-11-25T09:00:00.000Z' }], { exists: () => true });
  expect(expectedDeliveries({ ...batch, refs: { batched: [0, 1, 2] } }, both).map((e) => e.deliveryId)).toHaveLength(3);
});

test('expected deliveries in runs of whole events: at least `records` each, from a kept progress on, together the whole list', () => {
  const events = Array.from({ length: 10 }, (_, i) => event(`e${i}`));
  const batch = { id: 'i-1', acceptedAt: '2026-11-25T10:00:00.000Z', events: [...events.slice(0, 5), events[0]!, ...events.slice(5)] };
  const destinations = ['a', 'b', 'c'].map((id) => ({ id, eventTypes: [], createdAt: '2026-11-25T09:00:00.000Z' }));
  const runs = [...expectedInRuns(batch, () => destinations, 0, 7)];
  // 3 destinations an event: runs of 3 events (9 ≥ 7); the repeated event adds nothing to its run.
  expect(runs.map((r) => [r.start, r.end, r.expected.length])).toEqual([[0, 3, 9], [3, 7, 9], [7, 10, 9], [10, 11, 3]]);
  expect(runs.flatMap((r) => r.expected.map((x) => x.deliveryId))).toEqual(expectedDeliveries(batch, () => destinations).map((x) => x.deliveryId));
  // Resumed at event 6: only what follows, the same runs as before.
  expect([...expectedInRuns(batch, () => destinations, 6, 7)].map((r) => [r.start, r.end])).toEqual([[6, 9], [9, 11]]);
  expect([...expectedInRuns(batch, () => destinations, 11, 7)]).toEqual([]);
  // An event whose deliveries reach the run size is a run of its own (the repeated one joins the next).
  expect([...expectedInRuns(batch, () => destinations, 0, 2)].map((r) => r.end - r.start)).toEqual([1, 1, 1, 1, 1, 2, 1, 1, 1, 1]);
});

test('a batch holds at most 500 events or 900 KiB, and always takes its first event', () => {
  expect(fitsBatch(0, 10_000_000, event('e'))).toBe(true);
  expect(fitsBatch(500, 0, event('e'))).toBe(false);
  expect(fitsBatch(1, 900 * 1024, event('e'))).toBe(false);
  expect(fitsBatch(1, 100, event('e'))).toBe(true);
});

test('a recovered record is PENDING, due now, holding the event, marked recovered', () => {
  const r = recoveredRecord({ deliveryId: 'orders.k', destinationId: 'orders', event: event('e1') }, { id: 'i-1', acceptedAt: '2026-11-25T09:59:00.000Z' }, new Date(T));
  expect(r).toMatchObject({ id: 'orders.k', status: 'PENDING', attempts: 0, availableAt: '2026-11-25T10:00:00.000Z', publishedAt: '2026-11-25T09:59:00.000Z', intake: 'i-1', recoveredAt: '2026-11-25T10:00:00.000Z', eventId: 'e1' });
  expect(r.event?.attributes.id).toBe('e1');
});

test('a lane is moving while a sender leased within half the grace, at most 30 s; a batch waits for it up to four graces', () => {
  expect(activityWindowMs(900_000)).toBe(30_000);
  expect(activityWindowMs(20_000)).toBe(10_000);
  expect(laneMoving([{ at: T - 29_000 }], T, 900_000)).toBe(true);
  expect(laneMoving([{ at: T - 31_000 }], T, 900_000)).toBe(false);
  expect(laneMoving([], T, 900_000)).toBe(false);
  expect(mayWaitForLanes('2026-11-25T09:56:01.000Z', T, 60_000)).toBe(true);
  expect(mayWaitForLanes('2026-11-25T09:56:00.000Z', T, 60_000)).toBe(false);
});

test('postponed batches are skipped for the activity window, through the latest of them', () => {
  expect(skipAfterPostponed(undefined, [], T, 60_000)).toBeUndefined();
  const first = skipAfterPostponed(undefined, ['2026-11-25T09:58:00.000Z', '2026-11-25T09:58:30.000Z'], T, 60_000);
  expect(first).toEqual({ through: '2026-11-25T09:58:30.000Z', until: T + 30_000 });
  expect(skipAfterPostponed(first, ['2026-11-25T09:59:00.000Z'], T + 5_000, 60_000)).toEqual({ through: '2026-11-25T09:59:00.000Z', until: T + 30_000 });
  expect(skipAfterPostponed(first, ['2026-11-25T09:57:00.000Z'], T + 5_000, 60_000)).toEqual(first);
});
