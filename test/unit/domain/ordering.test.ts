import { admitted, newKeyState, orderingSpecSchema, partitionKeyOf, resequenced, settled, settleVerdict, skipped } from '../../../shared/domain/ordering';
import { destinationSpecSchema } from '../../../shared/domain/destination';

const now = new Date('2026-11-27T10:00:00.000Z');
const rec = (seq: number, status: 'DELIVERED' | 'DEAD' | 'QUEUED' | 'PENDING' = 'DELIVERED') => ({ id: `d.e${seq}`, eventId: `e${seq}`, status, order: { key: 'k', seq } });

describe('ordering spec', () => {
  it('takes "key" as skip, and an object with onFailure', () => {
    expect(orderingSpecSchema.parse('key')).toEqual({ by: 'key', onFailure: 'skip' });
    expect(orderingSpecSchema.parse({ by: 'key', onFailure: 'block' })).toEqual({ by: 'key', onFailure: 'block' });
  });

  it('refuses anything else with a message that says what is allowed', () => {
    const bad = destinationSpecSchema.safeParse({ url: 'https://example.com/h', ordering: { by: 'key', onFailure: 'wait' } });
    expect(bad.success).toBe(false);
    expect(JSON.stringify(bad.error?.issues)).toMatch(/ordering/);
    const both = destinationSpecSchema.safeParse({ url: 'https://example.com/h', ordering: 'key', batch: { maxEvents: 10, maxWaitMs: 1000 } });
    expect(both.success).toBe(false);
    expect(both.error?.issues[0]?.message).toMatch(/either batch or ordering/);
  });

  it('reads the partitionkey extension; none or empty is unordered', () => {
    expect(partitionKeyOf({ attributes: { partitionkey: 'order-1' } as never })).toBe('order-1');
    expect(partitionKeyOf({ attributes: { partitionkey: '' } as never })).toBeUndefined();
    expect(partitionKeyOf({ attributes: {} as never })).toBeUndefined();
  });
});

describe('a key\'s sequence', () => {
  it('hands out places in order; the first is the head only when nothing before it is unsettled', () => {
    const a = admitted(newKeyState('d', 'k', now), 3, now);
    expect(a.seqs).toEqual([1, 2, 3]);
    expect(a.headFirst).toBe(true);
    const b = admitted(a.state, 2, now);
    expect(b.seqs).toEqual([4, 5]);
    expect(b.headFirst).toBe(false);
  });

  it('moves on when the head is DELIVERED, promoting the next place', () => {
    const s = admitted(newKeyState('d', 'k', now), 3, now).state;
    const after = settled(s, rec(1), settleVerdict('DELIVERED', 'skip', false), now);
    expect(after.state.done).toBe(1);
    expect(after.promote).toBe(2);
    // A copy of the head settling again changes nothing.
    expect(settled(after.state, rec(1), { kind: 'advance' }, now).state).toBe(after.state);
    // Nor does a place that is not the head.
    expect(settled(after.state, rec(3), { kind: 'advance' }, now).state).toBe(after.state);
  });

  it('skip moves past a DEAD head; block holds the key until skipped', () => {
    const s = admitted(newKeyState('d', 'k', now), 2, now).state;
    expect(settled(s, rec(1, 'DEAD'), settleVerdict('DEAD', 'skip', false), now).promote).toBe(2);
    const held = settled(s, rec(1, 'DEAD'), settleVerdict('DEAD', 'block', false), now);
    expect(held.promote).toBeUndefined();
    expect(held.state.blocked).toMatchObject({ seq: 1, deliveryId: 'd.e1', status: 'DEAD', why: 'block' });
    const skip = skipped(held.state, now)!;
    expect(skip.state.done).toBe(1);
    expect(skip.state.blocked).toBeUndefined();
    expect(skip.promote).toBe(2);
    expect(skipped(skip.state, now)).toBeUndefined();
  });

  it('a head QUEUED because its destination is suspended holds the key in every mode; a retry holds nothing', () => {
    expect(settleVerdict('QUEUED', 'skip', true)).toEqual({ kind: 'hold', why: 'suspended' });
    expect(settleVerdict('QUEUED', 'skip', false)).toEqual({ kind: 'advance' });
    expect(settleVerdict('PENDING', 'block', false)).toEqual({ kind: 'none' });
  });

  it('redelivered places go to the end in their old order; a held head keeps its place and goes first', () => {
    let s = admitted(newKeyState('d', 'k', now), 5, now).state; // 1..5
    s = { ...s, done: 5 };
    const r = resequenced(s, [4, 2, 3], now);
    expect(r.seqs).toEqual([8, 6, 7]);
    expect(r.head).toBe(6);
    expect(r.state.last).toBe(8);
    const held = settled({ ...s, done: 2 }, rec(3, 'DEAD'), { kind: 'hold', why: 'block' }, now).state;
    const again = resequenced(held, [1, 3], now);
    expect(again.seqs).toEqual([6, 3]);
    expect(again.head).toBe(3);
    expect(again.state.blocked).toBeUndefined();
    // Places after a busy head wait: no head among them.
    const busy = resequenced({ ...s, done: 3 }, [1], now);
    expect(busy.head).toBeUndefined();
    expect(busy.seqs).toEqual([6]);
  });
});
