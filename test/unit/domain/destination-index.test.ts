import { applySpec, Destination } from '../../../shared/domain/destinations/destination';
import { DestinationIndex } from '../../../shared/domain/destinations/destination-index';
import { matchesType } from '../../../shared/domain/events/event';

const at = new Date('2026-01-01T00:00:00Z');
const dest = (id: string, eventTypes?: string[]): Destination => applySpec(id, { url: `https://example.com/${id}`, ...(eventTypes ? { eventTypes } : {}) }, undefined, at);

test('matching agrees with matchesType for exact types, wildcards of any length and catch-alls', () => {
  const all = [
    dest('exact', ['com.example.order.created']),
    dest('orders', ['com.example.order.*']),
    dest('example', ['com.example.*', 'org.other.thing']),
    dest('short', ['c*']),
    dest('star', ['*']),
    dest('none'),
    dest('two', ['com.example.order.created', 'com.example.*']),
  ];
  const index = DestinationIndex.of(all);
  for (const type of ['com.example.order.created', 'com.example.order.paid', 'com.example', 'com.example.', 'org.other.thing', 'org.other', 'x', 'c']) {
    const expected = all.filter((d) => matchesType(d.eventTypes, type)).map((d) => d.id).sort();
    expect([type, index.matching(type).map((d) => d.id)]).toEqual([type, expected]);
  }
});

test('a changed or removed destination stops matching what it no longer takes', () => {
  const index = DestinationIndex.of([dest('a', ['com.example.*']), dest('b', ['com.example.*'])]);
  index.put(dest('a', ['org.x']));
  expect(index.matching('com.example.y').map((d) => d.id)).toEqual(['b']);
  expect(index.matching('org.x').map((d) => d.id)).toEqual(['a']);
  index.remove('b');
  expect(index.matching('com.example.y')).toEqual([]);
  expect(index.get('a')?.eventTypes).toEqual(['org.x']);
  expect(index.get('b')).toBeUndefined();
});

test('a lookup among 100,000 destinations touches only the ones it returns', () => {
  const index = new DestinationIndex();
  const base = dest('base');
  for (let i = 0; i < 100_000; i++) index.put({ ...base, id: `customer-${i}`, eventTypes: [`com.example.customer-${i}.*`, `com.example.type-${i % 1000}`] });
  expect(index.matching('com.example.type-7').map((d) => d.id)).toHaveLength(100);
  expect(index.matching('com.example.customer-42.paid').map((d) => d.id)).toEqual(['customer-42']);
});
