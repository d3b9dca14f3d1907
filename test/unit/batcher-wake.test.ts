import { MemoryBatcherLease } from '../../shared/adapters/memory/batcher-lease';
import { BatcherLeaseKeeper, BatcherWaker } from '../../shared/app/lanes/batcher-wake';
import { BATCHER_WAKE, leaseRenewal, NOTHING_SEEN, publisherStep } from '../../shared/domain/modes/batcher-lease';
import { createLogger } from '../../shared/log';

/** A batcher's wake-up: publishers read the lease a running batcher keeps, and wake a pump run when none does. */

function setup(start = 1_000_000) {
  let t = start;
  const lease = new MemoryBatcherLease();
  const wakes: number[] = [];
  const logs: Record<string, unknown>[] = [];
  const log = createLogger({ level: 'DEBUG', write: (line) => logs.push(JSON.parse(line) as Record<string, unknown>) });
  const waker = new BatcherWaker({ lease, wake: async () => void wakes.push(t), clock: { now: () => new Date(t) }, log });
  return { lease, wakes, logs, log, waker, advance: (ms: number) => (t += ms), now: () => t };
}

describe('BatcherWaker', () => {
  test('no batcher has said it runs: one read, one wake-up; more events meanwhile wake nothing more until WAKE_EVERY_MS', async () => {
    const h = setup();
    await h.waker.published();
    expect([h.lease.reads, h.wakes.length]).toEqual([1, 1]);
    expect(h.logs.some((l) => l.message === 'no batcher was running: a pump run woken to start one')).toBe(true);
    await Promise.all([h.waker.published(), h.waker.published()]);
    h.advance(BATCHER_WAKE.lookEveryMs);
    await h.waker.published();
    // Looked again (the run it woke has not said so yet), not woken again so soon.
    expect([h.lease.reads, h.wakes.length]).toEqual([2, 1]);
    h.advance(BATCHER_WAKE.wakeEveryMs);
    await h.waker.published();
    expect([h.lease.reads, h.wakes.length]).toEqual([3, 2]);
  });

  test('while the lease a batcher keeps runs, nothing is read or sent; past it, a look, and a wake-up only if it was not renewed', async () => {
    const h = setup();
    h.lease.until = new Date(h.now() + 20_000);
    await h.waker.published();
    expect([h.lease.reads, h.wakes.length]).toEqual([1, 0]);
    h.advance(19_000);
    for (let i = 0; i < 10; i++) await h.waker.published();
    expect([h.lease.reads, h.wakes.length]).toEqual([1, 0]);
    // Renewed meanwhile: found so, nothing sent.
    h.lease.until = new Date(h.now() + 30_000);
    h.advance(2_000);
    await h.waker.published();
    expect([h.lease.reads, h.wakes.length]).toEqual([2, 0]);
    // Lapsed: woken.
    h.advance(30_000);
    await h.waker.published();
    expect([h.lease.reads, h.wakes.length]).toEqual([3, 1]);
  });

  test('a lease that cannot be read, or a wake-up that cannot be sent, never fails the publish: logged', async () => {
    const h = setup();
    h.lease.aliveUntil = () => Promise.reject(new Error('Firestore unavailable'));
    await expect(h.waker.published()).resolves.toBeUndefined();
    expect(h.logs.some((l) => l.severity === 'WARNING' && String(l.error).includes('Firestore unavailable'))).toBe(true);
  });
});

describe('BatcherLeaseKeeper', () => {
  test('renews the lease only when it is about to lapse and the run will still be pulling after it; not at all without a horizon', async () => {
    let t = 1_000_000;
    const lease = new MemoryBatcherLease();
    const keeper = new BatcherLeaseKeeper(lease, createLogger({ level: 'ERROR', write: () => undefined }), () => t);
    keeper.pulling(undefined);
    expect(lease.writes).toBe(0);
    keeper.pulling(t + 15_000);
    expect(lease.until?.getTime()).toBe(t + 15_000);
    // Messages keep coming (the horizon moves on): no write while the lease has time left.
    for (let i = 0; i < 9; i++) keeper.pulling((t += 1_000) + 15_000);
    expect(lease.writes).toBe(1);
    t += 2_000;
    keeper.pulling(t + 15_000);
    expect([lease.writes, lease.until?.getTime()]).toEqual([2, t + 15_000]);
    // Quiet: the horizon stays where the last message put it; nothing more is written.
    const last = t + 15_000;
    for (let i = 0; i < 20; i++) keeper.pulling(last);
    t += 14_000;
    keeper.pulling(last);
    expect(lease.writes).toBe(2);
  });
});

describe('the rules (domain/modes/batcher-lease.ts)', () => {
  test('a publisher does nothing while a lease runs; past it, looks at most every LOOK_EVERY_MS, and wakes at most every WAKE_EVERY_MS', () => {
    const now = 1_000_000;
    expect(publisherStep(NOTHING_SEEN, now)).toBe('look');
    expect(publisherStep({ ...NOTHING_SEEN, knownUntil: now + 1 }, now)).toBe('nothing');
    expect(publisherStep({ knownUntil: 0, lookedAt: now - 1, wokeAt: Number.NEGATIVE_INFINITY }, now)).toBe('wake');
    expect(publisherStep({ knownUntil: 0, lookedAt: now - 1, wokeAt: now - BATCHER_WAKE.wakeEveryMs + 1 }, now)).toBe('nothing');
    expect(publisherStep({ knownUntil: 0, lookedAt: now - BATCHER_WAKE.lookEveryMs, wokeAt: now - 1 }, now)).toBe('look');
  });

  test('a batcher renews only a lease about to lapse, and only to a later time it is sure of', () => {
    const now = 1_000_000;
    expect(leaseRenewal(0, undefined, now)).toBeUndefined();
    expect(leaseRenewal(0, now + 15_000, now)).toBe(now + 15_000);
    expect(leaseRenewal(now + BATCHER_WAKE.renewWithinMs, now + 30_000, now)).toBeUndefined();
    expect(leaseRenewal(now + BATCHER_WAKE.renewWithinMs - 1, now + 30_000, now)).toBe(now + 30_000);
    expect(leaseRenewal(now + 1_000, now + 1_000, now)).toBeUndefined();
  });
});
