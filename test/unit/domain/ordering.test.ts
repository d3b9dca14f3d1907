import { admitted, keyFor, MAX_WAITING_PER_KEY, newKeyState, takeWaiting, orderingSpecSchema, partitionKeyOf, resequenced, settled, settleVerdict, skipped } from '../../../shared/domain/modes/ordering';
import { destinationSpecSchema } from '../../../shared/domain/destinations/destination';
import { REDELIVERED_ORDER_GRACE_MS, transition } from '../../../shared/domain/retry/delivery-state';

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
    expect(bad.error?.issues[0]).toMatchObject({ path: ['ordering', 'onFailure'], message: 'ordering.onFailure must be "skip" or "block"' });
    expect(orderingSpecSchema.safeParse('keys').error?.issues[0]?.message).toMatch(/ordering must be "key" or an object/);
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
    const a = admitted(newKeyState('d', 'k', now), ['d.e1', 'd.e2', 'd.e3'], now)!;
    expect(a.seqs).toEqual([1, 2, 3]);
    expect(a.headFirst).toBe(true);
    // The head is sent at once; the others wait, found by id when their turn comes.
    expect(a.state.waiting).toEqual({ '2': 'd.e2', '3': 'd.e3' });
    expect(a.state.headId).toBe('d.e1');
    const b = admitted(a.state, ['d.e4', 'd.e5'], now)!;
    expect(b.seqs).toEqual([4, 5]);
    expect(b.headFirst).toBe(false);
    expect(Object.keys(b.state.waiting!)).toEqual(['2', '3', '4', '5']);
    expect(takeWaiting(b.state, 2)).toMatchObject({ deliveryId: 'd.e2', state: { headId: 'd.e2', waiting: { '3': 'd.e3', '4': 'd.e4', '5': 'd.e5' } } });
  });

  it('moves on when the head is DELIVERED, promoting the next place', () => {
    const s = admitted(newKeyState('d', 'k', now), ['d.e1', 'd.e2', 'd.e3'], now)!.state;
    const after = settled(s, rec(1), settleVerdict('DELIVERED', 'skip', false), now);
    expect(after.state.done).toBe(1);
    expect(after.promote).toBe(2);
    // A copy of the head settling again changes nothing.
    expect(settled(after.state, rec(1), { kind: 'advance' }, now).state).toBe(after.state);
    // Nor does a place that is not the head.
    expect(settled(after.state, rec(3), { kind: 'advance' }, now).state).toBe(after.state);
  });

  it('skip moves past a DEAD head; block holds the key until skipped', () => {
    const s = admitted(newKeyState('d', 'k', now), ['d.e1', 'd.e2'], now)!.state;
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
    const s = { ...newKeyState('d', 'k', now), last: 5, done: 5 };
    const r = resequenced(s, [{ id: 'd.e4', seq: 4 }, { id: 'd.e2', seq: 2 }, { id: 'd.e3', seq: 3 }], now);
    expect(r.seqs).toEqual([8, 6, 7]);
    expect(r.head).toBe(6);
    expect(r.state.last).toBe(8);
    expect(r.state.headId).toBe('d.e2');
    expect(r.state.waiting).toEqual({ '7': 'd.e3', '8': 'd.e4' });
    const held = settled({ ...s, done: 2 }, rec(3, 'DEAD'), { kind: 'hold', why: 'block' }, now).state;
    const again = resequenced(held, [{ id: 'd.e1', seq: 1 }, { id: 'd.e3', seq: 3 }], now);
    expect(again.seqs).toEqual([6, 3]);
    expect(again.head).toBe(3);
    expect(again.state.blocked).toBeUndefined();
    // Places after a busy head wait: no head among them.
    const busy = resequenced({ ...s, done: 3 }, [{ id: 'd.e1', seq: 1 }], now);
    expect(busy.head).toBeUndefined();
    expect(busy.seqs).toEqual([6]);
  });

  it('refuses more than MAX_WAITING_PER_KEY waiting behind one head', () => {
    const full = { ...newKeyState('d', 'k', now), last: MAX_WAITING_PER_KEY + 1, waiting: Object.fromEntries(Array.from({ length: MAX_WAITING_PER_KEY }, (_, i) => [String(i + 2), `d.e${i}`])) };
    expect(admitted(full, ['d.x'], now)).toBeUndefined();
  });

  it('a key left by a deleted destination of the same id starts afresh for the new one, numbered on', () => {
    const old = { ...newKeyState('d', 'k', now, '2026-11-01T00:00:00.000Z'), last: 7, done: 3, waiting: { '5': 'd.e5' }, blocked: { seq: 4, deliveryId: 'd.e4', eventId: 'e4', status: 'DEAD' as const, why: 'block' as const, at: now.toISOString() } };
    expect(keyFor(old, 'd', 'k', '2026-11-01T00:00:00.000Z', now)).toBe(old);
    const fresh = keyFor(old, 'd', 'k', '2026-11-27T00:00:00.000Z', now);
    expect(fresh).toMatchObject({ last: 7, done: 7, generation: '2026-11-27T00:00:00.000Z' });
    expect(fresh.waiting).toBeUndefined();
    expect(fresh.blocked).toBeUndefined();
    expect(admitted(fresh, ['d.n1'], now)!.headFirst).toBe(true);
  });

  it('a redelivered ordered delivery is marked to be placed again, a moment later so that what is redelivered together is placed together', () => {
    const dead = { status: 'DEAD' as const, attempts: 3, order: { key: 'k', seq: 2 } };
    const again = transition(dead, { type: 'redeliver', now });
    expect(again.ok && again.state).toMatchObject({ status: 'PENDING', order: { key: 'k', seq: 2, again: true }, availableAt: new Date(now.getTime() + REDELIVERED_ORDER_GRACE_MS).toISOString() });
    const plain = transition({ status: 'DEAD' as const, attempts: 3 }, { type: 'redeliver', now });
    expect(plain.ok && plain.state).toMatchObject({ status: 'PENDING', availableAt: now.toISOString() });
  });
});
