import { DeliveryRecord } from '../../../shared/domain/retry/delivery';
import { UnrecordedSend, UnrecordedSends } from '../../../shared/domain/delivery/unrecorded-sends';

/** The memory of sends not recorded stays bounded: by age, by count and by the bytes of the events it holds. */

function sendOf(id: string, dataBytes = 0): UnrecordedSend {
  const at = new Date(0);
  const record = {
    id,
    status: dataBytes ? 'PENDING' : 'DELIVERED',
    ...(dataBytes ? { event: { attributes: { specversion: '1.0', id, source: '/s', type: 't' }, data: Buffer.alloc(dataBytes) } } : {}),
  } as unknown as DeliveryRecord;
  return { record, result: { kind: 'response', status: 204, durationMs: 1, bodyExcerpt: '' }, decision: { kind: 'delivered' }, detail: {} as UnrecordedSend['detail'], at, publishedAt: at.toISOString() };
}

test('a kept send is taken once, then gone: two copies of one push never both record it', () => {
  const sends = new UnrecordedSends({ keepMs: 1000, maxEntries: 10, maxBytes: 1 << 20 });
  sends.keep('d1', sendOf('d1'), 0);
  expect(sends.take('d1', 10)?.record.id).toBe('d1');
  expect(sends.take('d1', 10)).toBeUndefined();
  expect(sends.size).toBe(0);
});

test('a send older than keepMs is not used, and is dropped when another is kept', () => {
  const sends = new UnrecordedSends({ keepMs: 1000, maxEntries: 10, maxBytes: 1 << 20 });
  sends.keep('old', sendOf('old'), 0);
  expect(sends.take('old', 1000)).toBeUndefined();
  sends.keep('older', sendOf('older'), 0);
  sends.keep('new', sendOf('new'), 1500);
  expect(sends.size).toBe(1);
  expect(sends.take('new', 1600)?.record.id).toBe('new');
});

test('past maxEntries the oldest goes; kept again, a send counts as new', () => {
  const sends = new UnrecordedSends({ keepMs: 60_000, maxEntries: 2, maxBytes: 1 << 20 });
  sends.keep('a', sendOf('a'), 0);
  sends.keep('b', sendOf('b'), 1);
  sends.keep('a', sendOf('a'), 2);
  sends.keep('c', sendOf('c'), 3);
  expect(sends.size).toBe(2);
  expect(sends.take('b', 4)).toBeUndefined();
  expect(sends.take('a', 4)).toBeDefined();
  expect(sends.take('c', 4)).toBeDefined();
});

test('past maxBytes the oldest goes: events held by failed sends cannot fill the memory', () => {
  const sends = new UnrecordedSends({ keepMs: 60_000, maxEntries: 100, maxBytes: 3 * 300 * 1024 });
  for (let i = 0; i < 5; i++) sends.keep(`e${i}`, sendOf(`e${i}`, 256 * 1024), i);
  expect(sends.size).toBe(3);
  expect(sends.take('e1', 10)).toBeUndefined();
  expect(sends.take('e4', 10)).toBeDefined();
});
