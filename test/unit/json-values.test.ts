import { jsonBytes, sameJson } from '../../shared/domain/events/json-values';

describe('sameJson: equal as JSON', () => {
  test('values equal as JSON are the same; any difference, nested or in order, is not', () => {
    const detail = { at: '2026-11-27T12:00:00.000Z', request: { headers: { 'webhook-id': 'msg_1' }, bodyBytes: 10 } };
    expect(sameJson([detail], [detail])).toBe(true);
    expect(sameJson({ a: [1, { b: 'x' }] }, { a: [1, { b: 'x' }] })).toBe(true);
    expect(sameJson({ a: 1, b: 2 }, { b: 2, a: 1 })).toBe(true);
    expect(sameJson({ a: [1, { b: 'x' }] }, { a: [1, { b: 'y' }] })).toBe(false);
    expect(sameJson([1, 2], [2, 1])).toBe(false);
    expect(sameJson({ a: 1 }, { a: 1, b: 2 })).toBe(false);
    expect(sameJson([], {})).toBe(false);
    expect(sameJson(null, {})).toBe(false);
    expect(sameJson('1', 1)).toBe(false);
  });

  test('bytes and dates compare by their JSON, not as empty objects', () => {
    expect(sameJson(Buffer.from('ab'), Buffer.from('ab'))).toBe(true);
    expect(sameJson(Buffer.from('ab'), Buffer.from('ac'))).toBe(false);
    expect(sameJson(new Date(0), new Date(1))).toBe(false);
  });
});

describe('jsonBytes: length as JSON', () => {
  test('is the length JSON.stringify gives, give or take a separator per field, for nested values', () => {
    const values = [{ id: 'batched.abc', n: 12, ok: true, none: null, log: [{ at: 'x', headers: { a: 'é"' } }] }, ['a', 1, [2, 3]], 'plain', 42];
    for (const v of values) {
      const exact = JSON.stringify(v).length;
      const measured = jsonBytes(v);
      expect(measured).toBeGreaterThanOrEqual(exact);
      expect(measured).toBeLessThanOrEqual(exact + 8);
    }
    expect(jsonBytes({ a: undefined })).toBe(2);
  });

  test('with what was counted before, an object met again adds nothing (a batch detail stored once)', () => {
    const detail = { request: { headers: { 'content-type': 'application/json' }, body: 'x'.repeat(1000) } };
    const counted = new Set<object>();
    const first = jsonBytes({ id: 'a', attemptLog: [detail] }, counted);
    expect(first).toBeGreaterThan(1000);
    expect(counted.has(detail)).toBe(true);
    const second = jsonBytes({ id: 'b', attemptLog: [detail] }, counted);
    expect(second).toBe(jsonBytes({ id: 'b', attemptLog: [] }) + 1);
    expect(jsonBytes({ id: 'c', attemptLog: [detail] })).toBe(first);
  });
});
