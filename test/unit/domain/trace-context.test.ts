import { buildEvent } from '../../../shared/domain/events/event';
import { eventTraceCarrier, headerTraceCarrier, ingestParent, traceIdOf, traceparentProblem, tracestateProblem, withTraceContext } from '../../../shared/domain/events/trace-context';

const VALID = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
const base = { specversion: '1.0', id: 'e1', source: '/s', type: 't' };

describe('traceparent, as W3C Trace Context writes it', () => {
  test.each([VALID, '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00', '01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-future'])('%s is accepted', (v) => {
    expect(traceparentProblem(v)).toBeUndefined();
  });

  test.each([
    ['00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01', /W3C traceparent/],
    ['00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7', /W3C traceparent/],
    ['00-00000000000000000000000000000000-00f067aa0ba902b7-01', /trace id must not be all zeros/],
    ['00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01', /parent id must not be all zeros/],
    ['ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', /version ff/],
    ['00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra', /exactly 4 fields/],
  ])('%s is refused', (v, why) => {
    expect(traceparentProblem(v)).toMatch(why);
  });
});

describe('tracestate', () => {
  test.each(['congo=t61rcWkgMzE', 'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE', 'tenant@vendor=x', 'a=1, b=2'])('%s is accepted', (v) => {
    expect(tracestateProblem(v)).toBeUndefined();
  });

  test.each([
    ['Congo=x', /not W3C key=value/],
    ['novalue', /not W3C key=value/],
    ['k=a,b', /not W3C key=value/],
    [Array.from({ length: 33 }, (_, i) => `k${i}=v`).join(','), /more than 32 members/],
    [`k=${'v'.repeat(600)}`, /longer than 512/],
  ])('%s is refused', (v, why) => {
    expect(tracestateProblem(v)).toMatch(why);
  });
});

describe('the tracing extension on an event', () => {
  test('a malformed traceparent or tracestate extension refuses the event, naming the attribute', () => {
    const bad = buildEvent({ ...base, traceparent: 'nope' }, Buffer.alloc(0), new Date());
    expect(bad).toEqual({ ok: false, issues: [{ path: 'traceparent', message: expect.stringMatching(/^traceparent must be a W3C traceparent/) }] });
    const badState = buildEvent({ ...base, traceparent: VALID, tracestate: 'A=b' }, Buffer.alloc(0), new Date());
    expect(badState).toMatchObject({ ok: false, issues: [{ path: 'tracestate' }] });
    expect(buildEvent({ ...base, traceparent: VALID, tracestate: 'a=b' }, Buffer.alloc(0), new Date()).ok).toBe(true);
  });

  test('the carrier and trace id come from the extension', () => {
    expect(eventTraceCarrier({ traceparent: VALID, tracestate: 'a=b' })).toEqual({ traceparent: VALID, tracestate: 'a=b' });
    expect(eventTraceCarrier({ traceparent: VALID, tracestate: 'A' })).toEqual({ traceparent: VALID });
    expect(eventTraceCarrier({})).toBeUndefined();
    expect(traceIdOf(VALID)).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    expect(traceIdOf('garbage')).toBeUndefined();
  });

  test("an event without one gets the ingest span's; one with its own keeps it", () => {
    const carrier = { traceparent: VALID, tracestate: 'a=b' };
    const bare = { attributes: { ...base } };
    expect(withTraceContext(bare, carrier).attributes).toMatchObject(carrier);
    const own = { attributes: { ...base, traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' } };
    expect(withTraceContext(own, carrier)).toBe(own);
    expect(withTraceContext(bare, undefined)).toBe(bare);
  });

  test("the ingest span's parent: a lone event's own extension, else the request's header; a malformed header is ignored", () => {
    const own = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    expect(ingestParent({ traceparent: VALID }, [{ attributes: { traceparent: own } }])).toEqual({ traceparent: own });
    expect(ingestParent({ traceparent: VALID, tracestate: 'a=b' }, [{ attributes: {} }])).toEqual({ traceparent: VALID, tracestate: 'a=b' });
    // Two events: neither's own context can be the request's.
    expect(ingestParent({ traceparent: VALID }, [{ attributes: { traceparent: own } }, { attributes: {} }])).toEqual({ traceparent: VALID });
    expect(headerTraceCarrier({ traceparent: 'bad' })).toBeUndefined();
    expect(ingestParent({}, undefined)).toBeUndefined();
  });
});
