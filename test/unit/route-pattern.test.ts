import { patternOf } from '../../functions/admin/route-pattern';

describe('patternOf: an admin route pattern derived from its path', () => {
  test('each {param} is one segment, captured by name and in order', () => {
    const match = patternOf('/accounts/{accountId}/portal-links/{linkId}').exec('/accounts/acme/portal-links/l1');
    expect(match?.groups).toEqual({ accountId: 'acme', linkId: 'l1' });
    expect(match?.slice(1)).toEqual(['acme', 'l1']);
    expect(patternOf('/destinations/{id}').test('/destinations/a/b')).toBe(false);
    expect(patternOf('/destinations/{id}').test('/destinations/')).toBe(false);
  });

  test('a trailing slash is taken after a fixed segment, never after a parameter', () => {
    expect(patternOf('/destinations').test('/destinations/')).toBe(true);
    expect(patternOf('/destinations/{id}/ordered-keys/blocked').test('/destinations/x/ordered-keys/blocked/')).toBe(true);
    expect(patternOf('/destinations/{id}').test('/destinations/x/')).toBe(false);
  });

  test('fixed segments match only themselves', () => {
    expect(patternOf('/event-types').test('/event-types')).toBe(true);
    expect(patternOf('/event-types').test('/event_types')).toBe(false);
    expect(patternOf('/stats').test('/stats/x')).toBe(false);
  });
});
