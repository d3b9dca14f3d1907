import {
  applyFeedback,
  clampRate,
  grantSlots,
  initialRateState,
  lease,
  MAX_PAUSE_MS,
  RATE_LIMITS,
  RateDoc,
  RateState,
} from '../../../shared/domain/rate-control';

const T0 = 1_000_000;
const B = RATE_LIMITS;

const state = (extra: Partial<RateState> = {}): RateState => ({ ...initialRateState(B, T0), ...extra });

describe('bounds', () => {
  it('seed 000: 1 to 100 events/s', () => expect(RATE_LIMITS).toEqual({ minPerSecond: 1, maxPerSecond: 100 }));
  it('clamps to the bounds', () => {
    expect(clampRate(0.2, B)).toBe(1);
    expect(clampRate(250, B)).toBe(100);
    expect(clampRate(37, B)).toBe(37);
    expect(clampRate(50, { minPerSecond: 5, maxPerSecond: 20 })).toBe(20);
  });
  it('starts at 10/s in slow start, or inside narrower bounds', () => {
    expect(initialRateState(B, T0)).toEqual({ rate: 10, phase: 'slow-start', windowStart: T0, successes: 0, throttled: 0 });
    expect(initialRateState({ minPerSecond: 1, maxPerSecond: 5 }, T0).rate).toBe(5);
    expect(initialRateState({ minPerSecond: 20, maxPerSecond: 50 }, T0).rate).toBe(20);
  });
});

describe('windows', () => {
  it('feedback inside a window only adds up', () => {
    const s = applyFeedback(state(), { successes: 4, throttled: 0 }, B, T0 + 500);
    expect(s).toMatchObject({ rate: 10, successes: 4, throttled: 0, windowStart: T0 });
  });

  it('slow start doubles a fully used rate, up to the maximum and never past it', () => {
    const s = applyFeedback(state({ successes: 9 }), { successes: 1, throttled: 0 }, B, T0 + 1000);
    expect(s).toMatchObject({ rate: 20, phase: 'slow-start', successes: 0, windowStart: T0 + 1000 });
    expect(applyFeedback(state({ rate: 80, successes: 80 }), { successes: 0, throttled: 0 }, B, T0 + 1000).rate).toBe(100);
    expect(applyFeedback(state({ rate: 100, successes: 100 }), { successes: 0, throttled: 0 }, B, T0 + 1000).rate).toBe(100);
  });

  it('a window that did not use 80 % of its rate leaves the rate alone (no demand, no lesson)', () => {
    expect(applyFeedback(state({ rate: 50, successes: 39 }), { successes: 0, throttled: 0 }, B, T0 + 1000).rate).toBe(50);
    expect(applyFeedback(state({ rate: 50, successes: 40 }), { successes: 0, throttled: 0 }, B, T0 + 1000).rate).toBe(100);
  });

  it('after the first 429, increases are additive: 5 %, at least 0.5/s', () => {
    expect(applyFeedback(state({ rate: 40, phase: 'avoidance', successes: 40 }), { successes: 0, throttled: 0 }, B, T0 + 1000).rate).toBeCloseTo(42, 10);
    expect(applyFeedback(state({ rate: 4, phase: 'avoidance', successes: 4 }), { successes: 0, throttled: 0 }, B, T0 + 1000).rate).toBeCloseTo(4.5, 10);
    expect(applyFeedback(state({ rate: 99.9, phase: 'avoidance', successes: 100 }), { successes: 0, throttled: 0 }, B, T0 + 1000).rate).toBe(100);
  });

  it('a window with 429s drops to 90 % of what the receiver accepted, and enters avoidance', () => {
    const s = applyFeedback(state({ rate: 80, successes: 37 }), { successes: 0, throttled: 43 }, B, T0 + 1000);
    expect(s.rate).toBeCloseTo(33.3, 10);
    expect(s.phase).toBe('avoidance');
  });

  it('a 429 never raises the rate, even when the window accepted more than the rate (a longer window)', () => {
    const s = applyFeedback(state({ rate: 20, successes: 60 }), { successes: 0, throttled: 1 }, B, T0 + 2000);
    expect(s.rate).toBeCloseTo(18, 10);
  });

  it('a receiver that accepts nothing drives the rate to the minimum, never below', () => {
    expect(applyFeedback(state({ rate: 10 }), { successes: 0, throttled: 10 }, B, T0 + 1000).rate).toBe(1);
    expect(applyFeedback(state({ rate: 1, phase: 'avoidance' }), { successes: 0, throttled: 1 }, B, T0 + 1000).rate).toBe(1);
  });

  it('Retry-After pauses the destination until then, capped at a minute', () => {
    const paused = applyFeedback(state(), { successes: 0, throttled: 1, retryAfterMs: 5000 }, B, T0 + 100);
    expect(paused.pausedUntil).toBe(T0 + 5100);
    expect(applyFeedback(state(), { successes: 0, throttled: 1, retryAfterMs: 3_600_000 }, B, T0 + 100).pausedUntil).toBe(T0 + 100 + MAX_PAUSE_MS);
    // A pause that has passed is dropped.
    expect(applyFeedback(paused, { successes: 0, throttled: 0 }, B, T0 + 6000).pausedUntil).toBeUndefined();
  });
});

describe('slots', () => {
  it('spaces sends 1/rate apart from the next free slot, and moves the cursor past them', () => {
    const { slots, cursor } = grantSlots(state({ rate: 4 }), T0 - 10_000, T0, 3);
    expect(slots).toEqual([T0, T0 + 250, T0 + 500]);
    expect(cursor).toBe(T0 + 750);
  });

  it('a later grant continues from the cursor, so two senders never share a second beyond the rate', () => {
    const s = state({ rate: 10 });
    const a = grantSlots(s, T0, T0, 5);
    const b = grantSlots(s, a.cursor, T0 + 1, 10);
    const all = [...a.slots, ...b.slots];
    for (let i = 1; i < all.length; i++) expect(all[i]! - all[i - 1]!).toBeGreaterThanOrEqual(100);
  });

  it('no slot inside a pause', () => {
    const { slots } = grantSlots(state({ rate: 10, pausedUntil: T0 + 3000 }), T0, T0, 2);
    expect(slots).toEqual([T0 + 3000, T0 + 3100]);
  });
});

/**
 * The controller against a receiver that accepts C events/s and answers 429 above, in
 * virtual time (one-second windows, a sender with unlimited demand). The benchmark does the
 * same across processes on the emulators; this shows the maths alone meets the targets.
 */
function play(capacity: number, seconds: number) {
  let s = initialRateState(B, 0);
  const perSecond: { sent: number; accepted: number }[] = [];
  let carry = 0;
  for (let t = 1; t <= seconds; t++) {
    const exact = s.rate + carry;
    const sent = Math.floor(exact);
    carry = exact - sent;
    const accepted = Math.min(sent, capacity);
    perSecond.push({ sent, accepted });
    s = applyFeedback(s, { successes: accepted, throttled: sent - accepted }, B, t * 1000);
  }
  return perSecond;
}

describe.each([10, 37, 150])('against a receiver of capacity %i/s', (capacity) => {
  const target = Math.min(capacity, 100);
  const run = play(capacity, 180);
  const steady = run.slice(60);

  it('reaches 80 % of min(C, 100) within 60 s', () => {
    const first = run.findIndex((w) => w.accepted >= 0.8 * target);
    expect(first).toBeGreaterThanOrEqual(0);
    expect(first).toBeLessThan(60);
  });

  it('delivers at least 90 % of min(C, 100) in the steady state, with at most 5 % of 429s', () => {
    const accepted = steady.reduce((n, w) => n + w.accepted, 0);
    const sent = steady.reduce((n, w) => n + w.sent, 0);
    expect(accepted / steady.length / target).toBeGreaterThanOrEqual(0.9);
    expect((sent - accepted) / sent).toBeLessThanOrEqual(0.05);
  });

  it('never sends above 100/s', () => {
    expect(Math.max(...run.map((w) => w.sent))).toBeLessThanOrEqual(100);
  });
});

describe('leases: one document shared by every sender of a destination', () => {
  const req = (holder: string, now: number, demandPerSecond = 100, feedback = { successes: 0, throttled: 0 }) => ({ holder, now, demandPerSecond, feedback, bounds: B });

  it('a first lease starts the controller at 10/s and grants a second of demand at most', () => {
    const { doc, lease: l } = lease(undefined, req('a', T0));
    expect(l.rate).toBe(10);
    expect(l.slots).toHaveLength(10);
    expect(l.slots[0]).toBe(T0);
    expect(doc.cursor).toBe(T0 + 1000);
    expect(doc.holders).toEqual({ a: T0 });
  });

  it('grants a quiet sender its fair share of a second (it leases at most once a second), a busy one its demand', () => {
    expect(lease(undefined, req('a', T0, 0)).lease.slots).toHaveLength(10);
    const shared = lease(lease(undefined, req('a', T0, 0)).doc, req('b', T0 + 10, 1));
    expect(shared.lease.slots).toHaveLength(5); // 10/s shared by two
    expect(lease(undefined, req('a', T0, 300)).lease.slots).toHaveLength(10); // never more than a span of the rate
  });

  it('three senders lease spans of three seconds each, so the document takes about one write a second', () => {
    let doc = lease(undefined, req('a', T0)).doc;
    doc = lease(doc, req('b', T0 + 10)).doc;
    const third = lease(doc, req('c', T0 + 20));
    expect(Object.keys(third.doc.holders)).toHaveLength(3);
    expect(third.lease.slots).toHaveLength(30); // 3 s at 10/s
  });

  it('slots of all senders together never exceed the rate in any second', () => {
    let doc: RateDoc | undefined;
    const slots: number[] = [];
    for (let i = 0; i < 12; i++) {
      const r = lease(doc, req(`s${i % 3}`, T0 + i * 50));
      doc = r.doc;
      slots.push(...r.lease.slots);
    }
    slots.sort((x, y) => x - y);
    for (let i = 10; i < slots.length; i++) expect(slots[i]! - slots[i - 10]!).toBeGreaterThanOrEqual(1000 - 1e-6);
  });

  it('forgets senders idle for 5 s', () => {
    const doc = lease(lease(undefined, req('a', T0)).doc, req('b', T0 + 100)).doc;
    expect(Object.keys(lease(doc, req('b', T0 + 5200)).doc.holders)).toEqual(['b']);
  });

  it('applies the feedback a sender brings before granting', () => {
    const first = lease(undefined, req('a', T0));
    const next = lease(first.doc, req('a', T0 + 1000, 100, { successes: 10, throttled: 0 }));
    expect(next.lease.rate).toBe(20);
  });
});
