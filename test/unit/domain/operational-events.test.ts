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
  withoutConcerned,
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

describe('no loop: an event about a destination never goes to it', () => {
  const event = operationalEvent(suspended, AT, 'herald.', 'acme');
  const destinations = [{ id: 'acme_orders' }, { id: 'acme_ops' }];

  test('routing leaves the concerned destination out, and only it', () => {
    expect(withoutConcerned(event, destinations).map((d) => d.id)).toEqual(['acme_ops']);
    expect(mayReceive(event, 'acme_orders')).toBe(false);
    const other = { attributes: { specversion: '1.0' as const, id: 'p', source: '/shop', type: 'herald.destination.suspended' } };
    expect(withoutConcerned(other, destinations)).toBe(destinations);
  });

  test('the reconciler expects no delivery to it either', () => {
    const batch = { id: 'i-1', acceptedAt: AT.toISOString(), events: [event] };
    const expected = expectedDeliveries(batch, () => destinations.map((d) => ({ ...d, eventTypes: ['herald.*'], createdAt: '2026-01-01T00:00:00.000Z' })));
    expect(expected.map((e) => e.destinationId)).toEqual(['acme_ops']);
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
