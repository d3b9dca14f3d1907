import { failingChange, failingMeasure } from '../../../shared/domain/operational/failing-level';
import { NoticeLimit } from '../../../shared/domain/operational/notice-limit';
import {
  CONCERNED_DESTINATION_EXTENSION,
  isOperational,
  mayReceive,
  OPERATIONAL_DATA_SCHEMAS,
  OPERATIONAL_KINDS,
  operationalEvent,
  OperationalNotice,
  receiversOf,
} from '../../../shared/domain/operational/operational-events';
import { eventAttributesSchema } from '../../../shared/domain/events/event';
import { expectedDeliveries } from '../../../shared/domain/intake/intake';

const AT = new Date('2026-12-06T10:00:00.000Z');
const THRESHOLD = { successRate: 0.95, windowMs: 3_600_000, minSample: 50 };

const suspended: OperationalNotice = {
  kind: 'destination.suspended',
  key: 'acme_orders-2026-12-06T10:00:00.000Z',
  concerns: 'acme_orders',
  data: {
    account: 'acme',
    destinationId: 'orders',
    target: 'https://hooks.example.com/orders',
    cause: 'threshold',
    reason: 'success rate 90 % …',
    suspendedAt: AT.toISOString(),
    attempts1h: 60,
    successRate1h: 0.9,
    recentErrors: [{ at: AT.toISOString(), status: 500, error: 'HTTP 500' }],
    reactivate: { api: 'POST /admin/destinations/orders/reactivate', cli: 'herald destinations reactivate orders' },
  },
};

describe('the catalogue', () => {
  test('every kind has a data schema, and its type is the prefix and the kind', () => {
    expect(Object.keys(OPERATIONAL_DATA_SCHEMAS).sort()).toEqual([...OPERATIONAL_KINDS].sort());
    const event = operationalEvent(suspended, AT, 'acme.ops.', 'acme');
    expect(event.attributes).toMatchObject({ type: 'acme.ops.destination.suspended', source: '/herald', subject: 'orders', heraldaccount: 'acme', [CONCERNED_DESTINATION_EXTENSION]: 'acme_orders', time: AT.toISOString() });
    expect(event.attributes.id).toBe('destination.suspended-acme_orders-2026-12-06T10:00:00.000Z');
  });

  test('an event is a valid CloudEvent, its data valid against its schema (a state change has no suppressed count)', () => {
    const event = operationalEvent(suspended, AT, 'herald.', 'acme');
    expect(eventAttributesSchema.safeParse(event.attributes).success).toBe(true);
    const data = OPERATIONAL_DATA_SCHEMAS['destination.suspended'].parse(JSON.parse(event.data.toString()));
    expect(data).toMatchObject({ account: 'acme', destinationId: 'orders', cause: 'threshold' });
    expect(JSON.parse(event.data.toString())).not.toHaveProperty('suppressed');
  });

  test('data that does not fit its schema is refused when the event is made', () => {
    const bad = { ...suspended, data: { ...suspended.data, attempts1h: -1 } } as OperationalNotice;
    expect(() => operationalEvent(bad, AT, 'herald.', 'acme')).toThrow();
  });

  test('an operational event is told from a producer event of the same type', () => {
    expect(isOperational(operationalEvent(suspended, AT, 'herald.', 'acme'))).toBe(true);
    expect(isOperational({ attributes: { specversion: '1.0', id: 'x', source: '/shop', type: 'herald.destination.suspended' } })).toBe(false);
  });
});

describe('who may receive one: only destinations that name it, never the one it is about', () => {
  const event = operationalEvent(suspended, AT, 'herald.', 'acme');
  const destinations = [
    { id: 'acme_orders', eventTypes: ['com.acme.*', 'herald.*'] },
    { id: 'acme_ops', eventTypes: ['herald.destination.*'] },
    { id: 'acme_exact', eventTypes: ['herald.destination.suspended'] },
    { id: 'acme_other', eventTypes: ['herald.delivery.dead'] },
    { id: 'acme_everything', eventTypes: [] },
    { id: 'acme_star', eventTypes: ['*'] },
  ];

  test('routing leaves out the concerned destination and those that do not name the type', () => {
    // acme_other matched nothing in the index anyway; a catch-all did, and is still left out.
    expect(receiversOf(event, destinations).map((d) => d.id)).toEqual(['acme_ops', 'acme_exact']);
    expect(mayReceive(event, destinations[0]!)).toBe(false);
  });

  test('a producer event is routed as before, catch-alls included', () => {
    const other = { attributes: { specversion: '1.0' as const, id: 'p', source: '/shop', type: 'herald.destination.suspended', [CONCERNED_DESTINATION_EXTENSION]: 'acme_orders' } };
    expect(receiversOf(other, destinations)).toBe(destinations);
  });

  test('the reconciler expects no delivery where routing sent none', () => {
    const batch = { id: 'i-1', acceptedAt: AT.toISOString(), events: [event] };
    const expected = expectedDeliveries(batch, () => destinations.map((d) => ({ ...d, createdAt: '2026-01-01T00:00:00.000Z' })));
    expect(expected.map((e) => e.destinationId)).toEqual(['acme_ops', 'acme_exact']);
  });
});

describe('failing: a fraction of the threshold failure rate, announced once per crossing', () => {
  const counts = (successes: number, failures: number) => ({ attempts: successes + failures, successes, failures });

  test.each([
    ['below the minimum sample', counts(30, 10), [0.9], undefined],
    ['under every fraction', counts(97, 3), [0.9], undefined],
    ['at 90 % of 5 %: 4.5 % failing', counts(955, 45), [0.9], 0.9],
    ['the highest fraction reached', counts(93, 4), [0.5, 0.9], 0.5],
    ['past the threshold itself', counts(50, 50), [0.5, 0.9], 0.9],
  ])('%s', (_, c, fractions, fraction) => {
    expect(failingMeasure(c, THRESHOLD, fractions).fraction).toBe(fraction);
  });

  test('a crossing is announced once; a higher one again; falling back clears; the next crossing is new', () => {
    const at90 = failingMeasure(counts(955, 45), THRESHOLD, [0.5, 0.9]);
    const at50 = failingMeasure(counts(97, 3), THRESHOLD, [0.5, 0.9]);
    const none = failingMeasure(counts(99, 1), THRESHOLD, [0.5, 0.9]);
    const first = failingChange(undefined, at50, AT);
    expect(first).toMatchObject({ kind: 'crossed', state: { fraction: 0.5 } });
    const kept = first.kind === 'crossed' ? first.state : undefined;
    expect(failingChange(kept, at50, AT)).toEqual({ kind: 'none' });
    expect(failingChange(kept, at90, AT)).toMatchObject({ kind: 'crossed', state: { fraction: 0.9 } });
    expect(failingChange({ ...kept!, fraction: 0.9 }, at50, AT)).toEqual({ kind: 'none' });
    expect(failingChange(kept, none, AT)).toEqual({ kind: 'recovered' });
    expect(failingChange(undefined, none, AT)).toEqual({ kind: 'none' });
  });
});

describe('the rate limit per subject and kind', () => {
  test('one an interval, the ones between counted into the next', () => {
    const limit = new NoticeLimit(1000);
    expect(limit.take('dead\nacme_orders', 0)).toEqual({ ok: true, suppressed: 0 });
    expect(limit.take('dead\nacme_orders', 10)).toEqual({ ok: false });
    expect(limit.take('dead\nacme_orders', 999)).toEqual({ ok: false });
    // Another subject, another kind: their own limits.
    expect(limit.take('dead\nacme_ops', 10)).toEqual({ ok: true, suppressed: 0 });
    expect(limit.take('failing\nacme_orders', 10)).toEqual({ ok: true, suppressed: 0 });
    expect(limit.take('dead\nacme_orders', 1000)).toEqual({ ok: true, suppressed: 2 });
  });

  test('subjects past the bound whose interval ended are forgotten', () => {
    const limit = new NoticeLimit(1000, 2);
    limit.take('a', 0);
    limit.take('b', 0);
    limit.take('c', 5000);
    // a was forgotten: taken again with nothing suppressed, as new.
    expect(limit.take('a', 5001)).toEqual({ ok: true, suppressed: 0 });
  });
});
