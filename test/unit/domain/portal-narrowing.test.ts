import { Caller } from '../../../shared/domain/access/account';
import { narrowedWrite, typesBeyond } from '../../../shared/domain/access/portal-narrowing';

/**
 * What a portal session narrowed to some destinations may write (issue 50: it PUT its
 * destination with eventTypes ["t.*"] and took another destination's events).
 */

const narrowed: Caller = { kind: 'portal', account: 'acme', sessionId: 's', scopes: ['read', 'write'], destinations: ['d1'] };

describe('typesBeyond', () => {
  test('the same or narrower patterns are within; wider, other or none (every type) are not', () => {
    expect(typesBeyond(['t.a'], ['t.a'])).toEqual([]);
    expect(typesBeyond(['t.a.*'], ['t.a.b', 't.a.*', 't.a.b.*', 't.a.bc*'])).toEqual([]);
    expect(typesBeyond(['t.a.*', 't.x'], ['t.x', 't.a.z'])).toEqual([]);
    expect(typesBeyond(['*'], ['anything', 'x.*'])).toEqual([]);
    expect(typesBeyond(['t.a.*'], ['t.*', 't.a', 't.b', '*'])).toEqual(['t.*', 't.a', 't.b', '*']);
    expect(typesBeyond(['t.a'], ['t.a*'])).toEqual(['t.a*']);
    expect(typesBeyond(['t.a'], [])).toEqual(['every type (eventTypes left out or empty)']);
    // A destination taking every type already: nothing is wider.
    expect(typesBeyond([], ['t.*'])).toEqual([]);
    expect(typesBeyond([], [])).toEqual([]);
  });
});

describe('narrowedWrite', () => {
  test('a narrowed session: keeps or narrows the types of a destination it has; creates none; widens none', () => {
    expect(narrowedWrite(narrowed, 'd1', { eventTypes: ['t.d1.*'] }, ['t.d1.created'])).toEqual({ ok: true });
    expect(narrowedWrite(narrowed, 'd1', undefined, ['t.d1.*'])).toMatchObject({ ok: false, error: expect.stringMatching(/^this portal session cannot create destination "d1"/) as unknown, issues: [{ path: 'id' }] });
    expect(narrowedWrite(narrowed, 'd1', { eventTypes: ['t.d1.*'] }, ['t.*'])).toEqual({
      ok: false,
      error: 'this portal session cannot widen the event types of destination "d1": it takes "t.d1.*", and "t.*" would take more; give eventTypes within those (the same, or narrower), or ask whoever gave you the portal link',
      issues: [{ path: 'eventTypes', message: 'must stay within "t.d1.*"' }],
    });
    expect(narrowedWrite(narrowed, 'd1', { eventTypes: ['t.d1.*'] }, [])).toMatchObject({ ok: false, error: expect.stringMatching(/and every type \(eventTypes left out or empty\) would take more/) as unknown });
  });

  test('anyone else writes as before: the operator, a key, a session of the whole account', () => {
    const others: Caller[] = [{ kind: 'operator' }, { kind: 'key', account: 'acme', keyId: 'k', scopes: ['write'] }, { kind: 'portal', account: 'acme', sessionId: 's', scopes: ['read', 'write'] }];
    for (const caller of others) {
      expect(narrowedWrite(caller, 'd1', undefined, [])).toEqual({ ok: true });
      expect(narrowedWrite(caller, 'd1', { eventTypes: ['t.d1.*'] }, ['t.*'])).toEqual({ ok: true });
    }
  });
});
