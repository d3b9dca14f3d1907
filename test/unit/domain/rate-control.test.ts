import { HOLDER_GRACE_MS, lease, LeaseRequest } from '../../../shared/domain/rate/rate-control';
import { clampRate, CountsBySecond, initialRateState, MAX_PAUSE_MS, RATE_LIMITS, RateDoc, RateState, readRateDoc } from '../../../shared/domain/rate/rate-doc';
import { CAPACITY_MEMORY_S, judgeSecond, judgeSettled, settledThrough } from '../../../shared/domain/rate/rate-judging';
import { nextLeaseAt, paceFor, scheduleGrids, SPAN_PER_HOLDER_MS, spanFor, weightsFor } from '../../../shared/domain/rate/rate-grids';
import { ADVANCE_AHEAD_MS, ADVANCE_RATE_FACTOR, advanceGrant, AdvanceInput, MAX_ADVANCE } from '../../../shared/domain/rate/rate-advance';
import { Grid, gridAt, nextDeferCursor, nextTurn, SWITCH_SLACK_MS, waitForTurn } from '../../../shared/domain/rate/rate-turns';

const T0 = 1_000_000_000; // a whole second, in ms
const S0 = T0 / 1000;
const B = RATE_LIMITS;

const state = (extra: Partial<RateState> = {}): RateState => ({ ...initialRateState(B, T0), ...extra });
const counts = (sent: number, ok: number, throttled = sent - ok, limited = 0) => ({ sent, ok, throttled, limited });

describe('bounds', () => {
  it('seed 000: 1 to 100 events/s', () => expect(RATE_LIMITS).toEqual({ minPerSecond: 1, maxPerSecond: 100 }));
  it('clamps to the bounds', () => {
    expect(clampRate(0.2, B)).toBe(1);
    expect(clampRate(250, B)).toBe(100);
    expect(clampRate(37, B)).toBe(37);
    expect(clampRate(50, { minPerSecond: 5, maxPerSecond: 20 })).toBe(20);
  });
  it('starts at 10/s in slow start, or inside narrower bounds', () => {
    expect(initialRateState(B, T0)).toEqual({ rate: 10, phase: 'slow-start', judgedThrough: S0 - 1 });
    expect(initialRateState({ minPerSecond: 1, maxPerSecond: 5 }, T0).rate).toBe(5);
    expect(initialRateState({ minPerSecond: 20, maxPerSecond: 50 }, T0).rate).toBe(20);
  });
  it('a lease span is 1.2 s per sender (together a little under a write a second), however many', () => {
    expect(spanFor(0)).toBe(1200);
    expect(spanFor(3)).toBe(3600);
    expect(spanFor(40)).toBe(48_000);
    expect(spanFor(100)).toBe(120_000);
  });
});

describe('judging one second', () => {
  const now = T0 + 10_000;
  const span = 1000;
  // One grid, in force since well before the judged second.
  const on = (rate: number): Grid[] => [{ from: T0 - 20_000, rate, holders: ['a'], weights: [1] }];
  const judge = (rate: number, c: ReturnType<typeof counts> | undefined, extra: Partial<RateState> = {}, grids = on(rate)) =>
    judgeSecond(state({ rate, ...extra }), grids, S0, c, B, now, span);

  it('slow start doubles a rate used on the latest grid, up to the maximum and never past it', () => {
    expect(judge(10, counts(10, 10)).rate).toBe(20);
    expect(judge(10, counts(9, 9)).rate).toBe(18); // twice what went out, at most
    expect(judge(80, counts(80, 80)).rate).toBe(100);
    expect(judge(100, counts(100, 100)).rate).toBe(100);
  });

  it('no increase from a second sent before the latest grid started, or once one is decided (one per round trip)', () => {
    const changing: Grid[] = [...on(10), { from: T0 + 500, rate: 20, holders: ['a'], weights: [1] }];
    expect(judge(20, counts(10, 10), {}, changing).rate).toBe(20);
    expect(judge(20, counts(10, 10), {}, on(10)).rate).toBe(20);
  });

  it('a second that used neither 80 % of its rate nor queued its sends teaches nothing (no demand, no lesson)', () => {
    expect(judge(50, counts(39, 39)).rate).toBe(50);
    expect(judge(50, counts(40, 40)).rate).toBe(80);
    expect(judge(50, undefined).rate).toBe(50);
  });

  it('a second whose sends mostly queued for their turn was used, however few went out: slow start doubles it (the rate held them back), avoidance goes no further than what it sent shows', () => {
    // Three instances on a lane of two pushes: sends queue on two while the third's turns go unused.
    expect(judge(50, counts(30, 30, 0, 15)).rate).toBe(100);
    expect(judge(20, counts(8, 8, 0, 8)).rate).toBe(40);
    expect(judge(50, counts(30, 30, 0, 14)).rate).toBe(50);
    expect(judge(50, counts(30, 30, 0, 30), { phase: 'avoidance' }).rate).toBe(50); // 30 × 1.25 is below the rate: no rise
    expect(judge(50, counts(45, 45, 0, 45), { phase: 'avoidance' }).rate).toBeCloseTo(51, 10);
  });

  it('only accepted sends raise the rate: a second of failures that are not 429s, used or queued, raises nothing', () => {
    expect(judge(10, counts(10, 0, 0)).rate).toBe(10);
    expect(judge(10, counts(10, 7, 0)).rate).toBe(10); // 7 accepted: under 80 % of 10
    expect(judge(10, counts(10, 8, 0)).rate).toBe(16); // twice what was accepted
    expect(judge(50, counts(30, 10, 0, 30)).rate).toBe(50); // queued, but mostly refused
    expect(judge(50, counts(30, 14, 0, 30)).rate).toBe(50); // queued, but under half accepted
    expect(judge(40, counts(30, 25, 0, 30), { phase: 'avoidance' }).rate).toBe(40); // avoidance: 1.25 × 25 accepted is under the rate, no rise
  });

  it('after the first 429, increases are additive: 2 %, at least 0.2/s', () => {
    expect(judge(40, counts(40, 40), { phase: 'avoidance' }).rate).toBeCloseTo(40.8, 10);
    expect(judge(4, counts(4, 4), { phase: 'avoidance' }).rate).toBeCloseTo(4.2, 10);
    expect(judge(99.5, counts(100, 100), { phase: 'avoidance' }).rate).toBe(100);
  });

  it('one second of many 429s alone waits for the next (sends bunched on their way): two in a row are a receiver over capacity', () => {
    const first = judge(10, counts(10, 7), { phase: 'avoidance' });
    expect(first.rate).toBe(10);
    expect(first).toMatchObject({ heavyAt: S0, era: { sent: 10, throttled: 3 } });
    // The next second heavy too: the cut, to 95 % of the best second.
    expect(judgeSecond(first, on(10), S0 + 1, counts(10, 6), B, now, span).rate).toBeCloseTo(0.95 * 7, 10);
    // The next clean, and one later heavy again: alone again, no cut.
    const clean = judgeSecond(first, on(10), S0 + 1, counts(10, 10, 0), B, now, span);
    expect(judgeSecond(clean, on(10), S0 + 2, counts(10, 7), B, now, span).rate).toBe(clean.rate);
  });

  it('a second with many 429s drops to 95 % of what the receiver accepted, enters avoidance and holds until the lower grid starts', () => {
    const s = judgeSecond(state({ rate: 80, heavyAt: S0 - 1 }), on(80), S0, counts(80, 37), B, now, 3000);
    expect(s.rate).toBeCloseTo(35.15, 10);
    expect(s.phase).toBe('avoidance');
    expect(s.holdUntil).toBe(Math.floor((now + 3000 + SWITCH_SLACK_MS) / 1000) + 1);
  });

  it('a few 429s (at most 20 % of a second) take 3 % off the rate once they add up to 1.5 % of the sends at it', () => {
    expect(judge(40, counts(40, 37), { phase: 'avoidance' }).rate).toBeCloseTo(38.8, 10);
    expect(judge(10, counts(10, 9), { phase: 'avoidance' }).rate).toBeCloseTo(9.7, 10);
    // One 429 among the 100 sends so far at this rate: jitter, kept in mind.
    const kept = judge(10, counts(10, 9), { phase: 'avoidance', era: { sent: 90, throttled: 0 } });
    expect(kept.rate).toBe(10);
    expect(kept.era).toEqual({ sent: 100, throttled: 1 });
    // A second one, 2 in 110: a step back, and the count starts again.
    const dropped = judgeSecond(kept, on(10), S0 + 1, counts(10, 9), B, now, span);
    expect(dropped.rate).toBeCloseTo(9.7, 10);
    expect(dropped.era).toBeUndefined();
  });

  it('a few 429s in a second a higher grid started in take 3 % off the higher rate, not the one the second began on', () => {
    const doubled: Grid[] = [...on(20), { from: S0 * 1000 + 400, rate: 40, holders: ['a'], weights: [1] }];
    expect(judge(40, counts(30, 28), {}, doubled).rate).toBeCloseTo(38.8, 10);
  });

  it('the points never run faster than 3 % below the upper bound, so jitter never takes a second past it', () => {
    expect(paceFor(100, B)).toBeCloseTo(97, 10);
    // Near the bound too (slow start doubles 48 to 98).
    expect(paceFor(98, B)).toBeCloseTo(97, 10);
    expect(paceFor(96, B)).toBe(96);
    expect(paceFor(50, { minPerSecond: 1, maxPerSecond: 50 })).toBeCloseTo(48.5, 10);
    const l = lease(undefined, { holder: 'a', now: T0, backlog: 1, feedback: { seconds: {} }, bounds: { minPerSecond: 100, maxPerSecond: 100 } }).lease;
    expect(l.grids[0]).toMatchObject({ rate: 100, pace: 97 });
    expect(nextTurn(l.grids, 'a', T0 + 1000 / 97, T0)! - T0).toBeCloseTo(2000 / 97, 6);
  });

  it('capacity is the best second of the last CAPACITY_MEMORY_S: a second of bunched sends delivers less than the receiver takes', () => {
    const seen = judge(40, counts(40, 37, 3), { phase: 'avoidance', era: { sent: 400, throttled: 0 } });
    expect(seen.recentOk).toEqual({ [S0]: 37 });
    // (the second before it heavy too)
    const bunched = judgeSecond({ ...seen, heavyAt: S0 }, on(40), S0 + 1, counts(30, 20), B, now, span);
    expect(bunched.rate).toBeCloseTo(0.95 * 37, 10);
    expect(bunched.recentOk).toEqual({ [S0]: 37, [S0 + 1]: 20 });
  });

  it('seconds the senders could not fill after a decrease do not drag the next one down to them (12/s fell to 5.7 at C = 10)', () => {
    // At 12/s the receiver (C = 10) took 10 a second; a heavy second takes the rate to 9.5.
    let s = state({ rate: 12, phase: 'avoidance' });
    for (let k = 0; k < 3; k++) s = judgeSecond(s, on(12), S0 + k, counts(12, 10, 0), B, T0 + 4000, span);
    s = judgeSecond({ ...s, heavyAt: S0 + 2 }, on(12), S0 + 3, counts(12, 8), B, T0 + 4000, span);
    expect(s.rate).toBeCloseTo(9.5, 10);
    // A stalled sender: seconds of 3-6 sends, then a bunched second with many 429s.
    const after = s.holdUntil!;
    expect(after).toBeLessThan(S0 + 8);
    for (let k = 0; k < 3; k++) s = judgeSecond(s, on(9.5), after + k, counts(4, 4, 0), B, T0 + 11_000, span);
    s = judgeSecond({ ...s, heavyAt: after + 2 }, on(9.5), after + 3, counts(6, 4), B, T0 + 11_000, span);
    expect(s.rate).toBeCloseTo(9.5 * 0.95, 10);
  });

  it('a receiver whose capacity really dropped is believed once the seconds before the drop are CAPACITY_MEMORY_S old', () => {
    let s = state({ rate: 100, phase: 'avoidance' });
    for (let k = 0; k < 5; k++) s = judgeSecond(s, on(100), S0 + k, counts(100, 100, 0), B, now, span);
    // Capacity falls to 10: a heavy second, still measured against the seconds before the fall.
    s = judgeSecond({ ...s, heavyAt: S0 + 4 }, on(100), S0 + 5, counts(100, 10), B, now, span);
    expect(s.rate).toBeCloseTo(95, 10);
    for (let k = 6; k < 5 + CAPACITY_MEMORY_S; k++) s = judgeSecond(s, on(s.rate), S0 + k, counts(10, 10, 0), B, now, span);
    expect(s.holdUntil).toBeLessThan(S0 + 5 + CAPACITY_MEMORY_S);
    s = judgeSecond({ ...s, heavyAt: S0 + 4 + CAPACITY_MEMORY_S }, on(s.rate), S0 + 5 + CAPACITY_MEMORY_S, counts(95, 10), B, now, span);
    expect(s.rate).toBeCloseTo(9.5, 10);
  });

  it('a cut made of timeouts is recovered at once to the initial rate, then by slow start up to the rate before it, then additive steps', () => {
    const timeouts = (n: number) => ({ sent: n, ok: 0, throttled: n, timedOut: n, limited: 0 });
    let s = judgeSecond(state({ rate: 40, phase: 'avoidance', heavyAt: S0 - 1 }), on(40), S0, timeouts(40), B, T0 + 2000, span);
    expect(s).toMatchObject({ rate: 1, phase: 'slow-start', ceiling: 40 });
    // Still hanging at the minimum: the ceiling the first cut set stays.
    s = judgeSecond({ ...s, holdUntil: S0 + 1, heavyAt: S0 + 4 }, on(1), S0 + 5, timeouts(1), B, T0 + 7000, span);
    expect(s).toMatchObject({ rate: 1, phase: 'slow-start', ceiling: 40 });
    // It answers again: where a new destination starts (10/s), doubling per round trip to the ceiling, then 2 % steps.
    const rates: number[] = [];
    let second = s.holdUntil! + 1;
    for (let i = 0; i < 7; i++, second += 5) {
      s = judgeSecond(s, on(s.rate), second, counts(Math.ceil(s.rate), Math.ceil(s.rate), 0), B, (second + 1) * 1000, span);
      rates.push(s.rate);
    }
    expect(rates.map((r) => Math.round(r * 1000) / 1000)).toEqual([10, 20, 40, 40.8, 41.616, 42.448, 43.297]);
    expect(s.phase).toBe('avoidance');
    expect(s.ceiling).toBeUndefined();
    expect(s.resume).toBeUndefined();
  });

  it('a destination that hangs in its first slow start (no capacity known yet) probes again without a ceiling once it answers', () => {
    const timeouts = (n: number) => ({ sent: n, ok: 0, throttled: n, timedOut: n, limited: 0 });
    let s = judgeSecond(state({ rate: 10, phase: 'slow-start', heavyAt: S0 - 1 }), on(10), S0, timeouts(10), B, T0 + 2000, span);
    expect(s).toMatchObject({ rate: 1, phase: 'slow-start' });
    expect(s.ceiling).toBeUndefined();
    const rates: number[] = [];
    let second = s.holdUntil! + 1;
    for (let i = 0; i < 7; i++, second += 5) {
      s = judgeSecond(s, on(s.rate), second, counts(Math.ceil(s.rate), Math.ceil(s.rate), 0), B, (second + 1) * 1000, span);
      rates.push(s.rate);
    }
    // Its initial 10/s again, then doubling past it to the bound, as a new destination would until its first 429.
    expect(rates).toEqual([10, 20, 40, 80, 100, 100, 100]);
    expect(s.phase).toBe('slow-start');
  });

  it('the restart at the initial rate never passes a lower ceiling (a destination that took 4/s before it hung)', () => {
    const timeouts = (n: number) => ({ sent: n, ok: 0, throttled: n, timedOut: n, limited: 0 });
    let s = judgeSecond(state({ rate: 4, phase: 'avoidance', heavyAt: S0 - 1 }), on(4), S0, timeouts(4), B, T0 + 2000, span);
    s = judgeSecond(s, on(s.rate), s.holdUntil! + 1, counts(1, 1, 0), B, (s.holdUntil! + 2) * 1000, span);
    expect(s).toMatchObject({ rate: 4, phase: 'avoidance' });
  });

  it('429s end the slow start after timeouts, as any cut by 429s', () => {
    const s = judgeSecond(state({ rate: 8, phase: 'slow-start', ceiling: 20, heavyAt: S0 - 1 }), on(8), S0, counts(8, 5), B, T0 + 2000, span);
    expect(s.phase).toBe('avoidance');
    expect(s.ceiling).toBeUndefined();
  });

  it('a 429 never raises the rate, even when the receiver accepted more than it', () => {
    expect(judge(20, counts(100, 60), { heavyAt: S0 - 1 }).rate).toBeLessThan(20);
  });

  it('seconds sent at the old rate after a decrease are not judged again (one decrease per episode)', () => {
    const dropped = judgeSecond(state({ rate: 80, heavyAt: S0 - 1 }), on(80), S0, counts(80, 37), B, now, 3000);
    expect(judgeSecond(dropped, on(80), S0 + 1, counts(80, 37), B, now + 500, 3000).rate).toBe(dropped.rate);
    expect(judgeSecond(dropped, on(dropped.rate), dropped.holdUntil!, counts(36, 35), B, now + 5000, 3000).rate).toBeLessThan(dropped.rate);
  });

  it('a receiver that accepts nothing drives the rate to the minimum, never below', () => {
    expect(judge(10, counts(10, 0), { heavyAt: S0 - 1 }).rate).toBe(1);
    expect(judge(1, counts(1, 0), { phase: 'avoidance', heavyAt: S0 - 1 }).rate).toBe(1);
  });
});

describe('settled seconds', () => {
  it('are those every sender still sharing the destination has reported in full', () => {
    expect(settledThrough({ a: { at: T0 + 9000, until: T0 + 12_000, reportedThrough: T0 + 8999 }, b: { at: T0 + 5000, until: T0 + 8000, reportedThrough: T0 + 4200 } })).toBe(S0 + 3);
    // A sender that does not say: all but the last half second before its lease.
    expect(settledThrough({ a: { at: T0 + 5000, until: T0 + 8000 } })).toBe(S0 + 3);
  });

  it('are judged in order, once, and no further than the last whole second', () => {
    const grids: Grid[] = [{ from: T0 - 20_000, rate: 10, holders: ['a'], weights: [1] }];
    const seconds: CountsBySecond = { [S0]: counts(10, 10) };
    const s = state({ judgedThrough: S0 - 1 });
    expect(judgeSettled(s, grids, seconds, B, T0 + 5000, 3000, S0 - 1)).toMatchObject({ judgedThrough: S0 - 1, rate: 10 });
    expect(judgeSettled(s, grids, seconds, B, T0 + 5000, 3000, S0)).toMatchObject({ judgedThrough: S0, rate: 20 });
    expect(judgeSettled(s, grids, seconds, B, T0 + 500, 3000, S0 + 10).judgedThrough).toBe(S0 - 1);
  });

  it('a Retry-After pause ends on time', () => {
    expect(judgeSettled(state({ pausedUntil: T0 + 1000 }), [], {}, B, T0 + 1001, 1000, S0 - 1).pausedUntil).toBeUndefined();
  });
});

describe('grids', () => {
  const holders = (entries: Record<string, number>) => Object.fromEntries(Object.entries(entries).map(([h, until]) => [h, { at: until - 1000, until }]));

  it('a sender alone on the grids changes them at once', () => {
    const grids: Grid[] = [{ from: T0, rate: 10, holders: ['a'], weights: [1] }];
    expect(scheduleGrids(grids, 20, 20, holders({ a: T0 + 6000 }), 'a', T0 + 5000, S0 + 3).at(-1)).toEqual({ from: T0 + 5000, rate: 20, holders: ['a'], weights: [1] });
  });

  it('a change starts once every other sender is due to have leased again, plus the slack', () => {
    const grids: Grid[] = [{ from: T0, rate: 10, holders: ['a', 'b'], weights: [1, 1] }];
    const next = scheduleGrids(grids, 20, 20, holders({ a: T0 + 7000, b: T0 + 6200 }), 'a', T0 + 5000, S0 + 3);
    expect(next.at(-1)).toEqual({ from: T0 + 6200 + SWITCH_SLACK_MS, rate: 20, holders: ['a', 'b'], weights: [1, 1] });
  });

  it('a newcomer is on the next grid only: until it starts the others keep every turn', () => {
    const grids: Grid[] = [{ from: T0, rate: 10, holders: ['a'], weights: [1] }];
    const next = scheduleGrids(grids, 10, 10, holders({ a: T0 + 1000, b: T0 + 2000 }), 'b', T0 + 500, S0 - 1);
    expect(next).toEqual([grids[0], { from: T0 + 1000 + SWITCH_SLACK_MS, rate: 10, holders: ['a', 'b'], weights: [1, 1] }]);
    expect(nextTurn(next, 'b', undefined, T0 + 500)).toBeGreaterThan(T0 + 1000 + SWITCH_SLACK_MS);
  });

  it('deals the points in turn, one each, whatever the backlogs: a lane moves work between instances faster than a split could follow', () => {
    const uneven = { a: { at: T0, until: T0 + 3600, backlog: 500 }, b: { at: T0 - 1200, until: T0 + 2400, backlog: 0 }, c: { at: T0 - 2400, until: T0 + 1200, backlog: 3 } };
    expect(weightsFor(['a', 'b', 'c'])).toEqual([1, 1, 1]);
    const grid = scheduleGrids([], 30, 30, uneven, 'a', T0, S0 - 1).at(-1)!;
    expect(grid.weights).toEqual([1, 1, 1]);
    // Each sender's turns are three points (100 ms at 30/s) apart, wherever its work is.
    for (const h of ['a', 'b', 'c']) {
      const turns: number[] = [];
      let last: number | undefined;
      for (let i = 0; i < 6; i++) turns.push((last = nextTurn([grid], h, last, T0)!));
      expect(turns.slice(1).map((t, i) => Math.round(t - turns[i]!))).toEqual([100, 100, 100, 100, 100]);
    }
  });

  it('a grid an older Herald split by backlog is followed by one dealt in turn, after every sender has leased again', () => {
    const split: Grid[] = [{ from: T0, rate: 30, holders: ['a', 'b'], weights: [29, 1] }];
    const next = scheduleGrids(split, 30, 30, holders({ a: T0 + 2400, b: T0 + 2000 }), 'a', T0 + 1000, S0);
    expect(next).toEqual([split[0], { from: T0 + 2000 + SWITCH_SLACK_MS, rate: 30, holders: ['a', 'b'], weights: [1, 1] }]);
    // Dealt in turn already: nothing changes.
    expect(scheduleGrids(next, 30, 30, holders({ a: T0 + 4400, b: T0 + 2000 }), 'a', T0 + 3000, S0)).toEqual(next);
  });

  it('a grid another sender may know is never replaced: the next starts after it', () => {
    const grids: Grid[] = [
      { from: T0, rate: 10, holders: ['a', 'b'], weights: [1, 1] },
      { from: T0 + 3000, rate: 20, holders: ['a', 'b'], weights: [1, 1] },
    ];
    const next = scheduleGrids(grids, 19, 19, holders({ a: T0 + 2000, b: T0 + 2400 }), 'a', T0 + 1000, S0 - 1);
    expect(next.map((g) => g.rate)).toEqual([10, 20, 19]);
    expect(next[2]!.from).toBeGreaterThan(T0 + 3000);
  });

  it('keeps only the grids still needed to judge by or send on', () => {
    const grids: Grid[] = [
      { from: T0, rate: 10, holders: ['a'], weights: [1] },
      { from: T0 + 5000, rate: 20, holders: ['a'], weights: [1] },
      { from: T0 + 9000, rate: 40, holders: ['a'], weights: [1] },
    ];
    expect(scheduleGrids(grids, 40, 40, holders({ a: T0 + 20_000 }), 'a', T0 + 19_000, S0 + 6).map((g) => g.rate)).toEqual([20, 40]);
    expect(gridAt(grids, T0 + 5500)?.rate).toBe(20);
    expect(gridAt(grids, T0 - 1)?.rate).toBe(10);
  });
});

describe('turns on a grid', () => {
  it('a sender alone takes every point, 1/rate apart, from one gap after the start', () => {
    const grids: Grid[] = [{ from: T0, rate: 10, holders: ['a'], weights: [1] }];
    const first = nextTurn(grids, 'a', undefined, T0);
    expect(first).toBe(T0 + 100);
    expect(nextTurn(grids, 'a', first, T0)).toBe(T0 + 200);
  });

  it('three senders take disjoint points that together fill the grid, so no window holds more than the rate', () => {
    const grids: Grid[] = [{ from: T0, rate: 10, holders: ['a', 'b', 'c'], weights: [1, 1, 1] }];
    const sends: number[] = [];
    for (const h of ['a', 'b', 'c']) {
      let last: number | undefined;
      for (let i = 0; i < 30; i++) sends.push((last = nextTurn(grids, h, last, T0)!));
    }
    sends.sort((x, y) => x - y);
    expect(new Set(sends).size).toBe(sends.length);
    for (let i = 10; i < sends.length; i++) expect(sends[i]! - sends[i - 10]!).toBeGreaterThanOrEqual(1000 - 1e-6);
  });

  it('moves to the next grid at its start, never closer than a gap to the last point before it', () => {
    const grids: Grid[] = [
      { from: T0, rate: 10, holders: ['a'], weights: [1] },
      { from: T0 + 1050, rate: 5, holders: ['a'], weights: [1] },
    ];
    expect(nextTurn(grids, 'a', T0 + 1000, T0 + 1000)).toBe(T0 + 1050 + 200);
  });

  it('a sender running late takes the turn it missed, never a backlog of them', () => {
    const grids: Grid[] = [{ from: T0, rate: 10, holders: ['a', 'b'], weights: [1, 1] }];
    const late = T0 + 10_000;
    const t1 = nextTurn(grids, 'b', T0 + 100, late)!;
    expect(t1).toBeLessThanOrEqual(late);
    const t2 = nextTurn(grids, 'b', t1, late)!;
    expect(t2).toBeGreaterThan(late);
    expect(t2 - t1).toBeCloseTo(200, 6);
  });

  it('no turn for a sender on none of the grids', () => {
    expect(nextTurn([{ from: T0, rate: 10, holders: ['a'], weights: [1] }], 'z', undefined, T0)).toBeUndefined();
  });
});

describe('leases: one document shared by every sender of a destination', () => {
  const req = (holder: string, now: number, seconds: CountsBySecond = {}, pauseUntil?: number, backlog = 100): LeaseRequest => ({
    holder,
    now,
    backlog,
    feedback: { seconds, ...(pauseUntil !== undefined ? { pauseUntil } : {}) },
    bounds: B,
  });

  it('a first lease starts the controller at 10/s on a grid of its own, for a span', () => {
    const { doc, lease: l } = lease(undefined, req('a', T0));
    expect(l).toEqual({ rate: 10, grids: [{ from: T0, rate: 10, holders: ['a'], weights: [1] }], spanMs: 1200, validUntil: T0 + 1200 + SWITCH_SLACK_MS, deferCursor: T0, advance: 0 });
    expect(doc.holders).toEqual({ a: { at: T0, until: T0 + 1200, backlog: 100, reportedThrough: T0 - 500 } });
  });

  it('three senders share one grid in the order of their names and lease every 3.6 s', () => {
    let doc = lease(undefined, req('c', T0)).doc;
    doc = lease(doc, req('a', T0 + 10)).doc;
    const third = lease(doc, req('b', T0 + 20));
    expect(third.lease.spanMs).toBe(3600);
    expect(third.lease.grids.at(-1)!.holders).toEqual(['a', 'b', 'c']);
  });

  it(`forgets a sender ${HOLDER_GRACE_MS} ms after it was due to lease, and gives its turns to the others`, () => {
    const doc = lease(lease(undefined, req('a', T0)).doc, req('b', T0 + 100)).doc;
    // a was due again at T0 + 1200.
    const later = lease(doc, req('b', T0 + 1200 + HOLDER_GRACE_MS));
    expect(Object.keys(later.doc.holders)).toEqual(['b']);
    expect(later.lease.grids.at(-1)!.holders).toEqual(['b']);
  });

  it('merges the feedback senders bring by second and judges it once settled', () => {
    let doc: RateDoc = lease(undefined, req('a', T0 - 5000)).doc;
    doc = lease(doc, req('a', T0 + 1000, { [S0]: counts(4, 4) })).doc;
    doc = lease(doc, req('a', T0 + 1200, { [S0]: counts(6, 6) })).doc;
    expect(doc.seconds[S0]).toEqual(counts(10, 10));
    // Settled once the sender says it has reported every attempt it started in S0.
    expect(lease(doc, { ...req('a', T0 + 1500), reportedThrough: T0 + 999 }).lease.rate).toBe(10);
    expect(lease(doc, { ...req('a', T0 + 1500), reportedThrough: T0 + 1000 }).lease.rate).toBe(20);
  });

  it('a Retry-After a sender saw pauses every sender, capped at a minute', () => {
    const first = lease(undefined, req('a', T0));
    const paused = lease(first.doc, req('a', T0 + 1000, {}, T0 + 31_000));
    expect(paused.lease.pausedUntil).toBe(T0 + 31_000);
    expect(lease(paused.doc, req('b', T0 + 1100)).lease.pausedUntil).toBe(T0 + 31_000);
    expect(lease(first.doc, req('a', T0 + 1000, {}, T0 + 3_600_000)).lease.pausedUntil).toBe(T0 + 1000 + MAX_PAUSE_MS);
  });

  it("an older Herald's document keeps its rate and starts afresh otherwise", () => {
    expect(readRateDoc({ state: { rate: 42, phase: 'avoidance', windowStart: T0 }, cursor: T0, holders: { a: T0 } }, B, T0)?.state.rate).toBe(42);
    expect(readRateDoc({ nonsense: true }, B, T0)).toBeUndefined();
  });
});

/**
 * The whole loop in virtual time: W senders, each leasing once per span and sending in its
 * turns (always backlogged), reporting per-second counts at its next lease; a receiver that
 * accepts C requests in any sliding 1 s window and answers 429 above. The benchmark does
 * the same across processes on the emulators; this shows the maths alone meets the
 * targets, with the feedback as late as the leases make it.
 */
function play(capacity: number, seconds: number, workers = 3) {
  const TICK = 5;
  let doc: RateDoc | undefined;
  const senders = Array.from({ length: workers }, (_, i) => ({ id: `w${i}`, grids: undefined as Grid[] | undefined, spanMs: 1000, leasedAt: -Infinity, last: undefined as number | undefined, feedback: {} as CountsBySecond, offset: i * 97 }));
  const accepted: number[] = [];
  const perSecond = Array.from({ length: seconds }, () => ({ sent: 0, accepted: 0 }));
  const writes: number[] = [];
  let head = 0;
  for (let t = T0; t < T0 + seconds * 1000; t += TICK) {
    for (const s of senders) {
      if (t < T0 + s.offset) continue;
      if (t >= s.leasedAt + Math.max(1000, s.spanMs)) {
        const r = lease(doc, { holder: s.id, now: t, backlog: 100, reportedThrough: t, feedback: { seconds: s.feedback }, bounds: B });
        doc = r.doc;
        writes.push(t);
        [s.grids, s.spanMs, s.leasedAt, s.feedback] = [r.lease.grids, r.lease.spanMs, t, {}];
      }
      for (let turn = nextTurn(s.grids ?? [], s.id, s.last, t); turn !== undefined && turn <= t; turn = nextTurn(s.grids ?? [], s.id, s.last, t)) {
        s.last = turn;
        while (head < accepted.length && accepted[head]! <= t - 1000) head++;
        const ok = accepted.length - head < capacity;
        if (ok) accepted.push(t);
        const c = (s.feedback[Math.floor(t / 1000)] ??= { sent: 0, ok: 0, throttled: 0, limited: 0 });
        c.sent++;
        c.limited!++;
        if (ok) c.ok++;
        else c.throttled++;
        const w = perSecond[Math.floor((t - T0) / 1000)]!;
        w.sent++;
        if (ok) w.accepted++;
      }
    }
  }
  return { perSecond, writes };
}

describe.each([10, 37, 150])('three senders against a receiver of capacity %i/s', (capacity) => {
  const target = Math.min(capacity, 100);
  const { perSecond, writes } = play(capacity, 180);
  const steady = perSecond.slice(90);

  it('reaches 80 % of min(C, 100) within 60 s', () => {
    const first = perSecond.findIndex((w) => w.accepted >= 0.8 * target);
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
    expect(Math.max(...perSecond.map((w) => w.sent))).toBeLessThanOrEqual(100);
  });

  it('writes the shared document less than once a second', () => {
    const span = (writes.at(-1)! - writes[10]!) / 1000;
    expect((writes.length - 11) / span).toBeLessThanOrEqual(0.9);
  });
});

describe('many senders on one destination: the document stays under a write a second', () => {
  const req = (holder: string, now: number): LeaseRequest => ({ holder, now, backlog: 50, feedback: { seconds: {} }, bounds: B });

  /**
   * `senders` processes, each leasing when its lease says (staggered joins), for `ms`; those in
   * `stopAt` stop leasing then. Returns every lease's time and the document after each.
   */
  function run(senders: number, ms: number, stopAt: Record<string, number> = {}): { at: number; doc: RateDoc }[] {
    const due = new Map<string, number>();
    for (let i = 0; i < senders; i++) due.set(`p${String(i).padStart(3, '0')}`, T0 + i * 37);
    let doc: RateDoc | undefined;
    const writes: { at: number; doc: RateDoc }[] = [];
    for (;;) {
      const [holder, at] = [...due.entries()].reduce((a, b) => (b[1] < a[1] ? b : a));
      if (at > T0 + ms) return writes;
      const out = lease(doc, req(holder, at));
      doc = out.doc;
      writes.push({ at, doc });
      if (stopAt[holder] !== undefined && at >= stopAt[holder]) due.delete(holder);
      else due.set(holder, at + out.lease.spanMs);
    }
  }
  /** The most writes in any `windowMs` from `from` on. */
  const busiest = (writes: { at: number }[], windowMs: number, from: number) => {
    const at = writes.map((w) => w.at).filter((t) => t >= from);
    return Math.max(...at.map((t) => at.filter((u) => u >= t && u < t + windowMs).length));
  };

  it.each([5, 20, 60])('%i senders: at most ~1 write a second to the document once all have joined', (senders) => {
    const writes = run(senders, 10 * 60_000);
    const joined = T0 + senders * 37 + spanFor(senders) * 2;
    // Every sender still leases: each holds its share of the grid.
    expect(Object.keys(writes.at(-1)!.doc.holders)).toHaveLength(senders);
    expect(busiest(writes, 60_000, joined)).toBeLessThanOrEqual(60_000 / SPAN_PER_HOLDER_MS + 1);
    expect(busiest(writes, 10_000, joined)).toBeLessThanOrEqual(10);
  });

  it('60 senders: every one is on the latest grid, which deals the whole rate among them', () => {
    const { doc } = run(60, 5 * 60_000).at(-1)!;
    const grid = doc.grids.at(-1)!;
    expect(grid.holders).toEqual(Object.keys(doc.holders).sort());
    expect(grid.holders).toHaveLength(60);
    expect(grid.rate).toBe(doc.state.rate);
    expect(grid.weights.every((w) => w === 1)).toBe(true);
  });

  it('a sender that stops among 60 is forgotten within its span, the spacing and the grace', () => {
    const stop = T0 + 3 * 60_000;
    const writes = run(60, 8 * 60_000, { p007: stop });
    const own = writes.filter((w) => w.doc.holders.p007?.at === w.at).at(-1)!;
    expect(own.at).toBeGreaterThanOrEqual(stop);
    const last = [...writes].reverse().find((w) => w.doc.holders.p007 !== undefined)!;
    // Its entry lasts to its next lease's time and the grace; the others' next lease drops it.
    expect(last.at - own.at).toBeLessThanOrEqual(spanFor(60) + SPAN_PER_HOLDER_MS + HOLDER_GRACE_MS);
    const after = writes.find((w) => w.at > last.at)!;
    expect(after.doc.grids.at(-1)!.holders).not.toContain('p007');
    expect(after.doc.grids.at(-1)!.holders).toHaveLength(59);
  });
});

describe('when a sender leases next', () => {
  const entry = (until: number) => ({ at: until - 3600, until });

  it('a span from now, alone or with the others due well before', () => {
    expect(nextLeaseAt({}, 'a', 1200, T0)).toBe(T0 + 1200);
    expect(nextLeaseAt({ a: entry(T0), b: entry(T0 + 1200), c: entry(T0 + 2400) }, 'a', 3600, T0)).toBe(T0 + 3600);
  });

  it(`${SPAN_PER_HOLDER_MS} ms after every other sender's next lease, so two never land in one instant`, () => {
    // b and c are due 0.1 s and 3.5 s from now: a goes 1.2 s after c, not with it at 3.6 s.
    expect(nextLeaseAt({ b: entry(T0 + 100), c: entry(T0 + 3500) }, 'a', 3600, T0)).toBe(T0 + 3500 + SPAN_PER_HOLDER_MS);
  });

  it('at most one spacing past the span, however far the others are', () => {
    expect(nextLeaseAt({ b: entry(T0 + 9000) }, 'a', 2400, T0)).toBe(T0 + 2400 + SPAN_PER_HOLDER_MS);
  });

  it("the lease's span and the sender's entry follow it", () => {
    const at = (holder: string, now: number, doc?: RateDoc) => lease(doc, { holder, now, backlog: 5, feedback: { seconds: {} }, bounds: B });
    const b1 = at('b', T0); // alone: next at T0 + 1.2 s
    const a1 = at('a', T0 + 100, b1.doc); // two: a span of 2.4 s, next at T0 + 2.5 s
    const b2 = at('b', T0 + 1200, a1.doc);
    // A span of 2.4 s would put b at T0 + 3.6 s, 1.1 s after a's next: it goes 1.2 s after it.
    expect(b2.doc.holders.b!.until).toBe(T0 + 3700);
    expect(b2.lease.spanMs).toBe(2500);
    expect(b2.lease.validUntil).toBe(T0 + 3700 + SWITCH_SLACK_MS);
  });
});

describe('the deferral cursor', () => {
  it("moves a turn of the rate for each delivery a sender deferred, after the latest it handed out, and never lags now", () => {
    expect(nextDeferCursor(undefined, undefined, 10, T0)).toBe(T0);
    expect(nextDeferCursor(T0 + 5000, { count: 20, until: T0 + 6000 }, 10, T0)).toBe(T0 + 7000);
    // Another sender deferred 50 from the same cursor meanwhile: both counted.
    expect(nextDeferCursor(T0 + 7000, { count: 50, until: T0 + 9900 }, 10, T0)).toBe(T0 + 12_000);
    expect(nextDeferCursor(T0 - 60_000, { count: 1, until: T0 - 59_000 }, 10, T0)).toBe(T0);
  });

  it('travels in the document and the lease', () => {
    const first = lease(undefined, { holder: 'a', now: T0, backlog: 5, feedback: { seconds: {} }, deferred: { count: 30, until: T0 + 40_000 }, bounds: B });
    expect(first.doc.deferCursor).toBe(T0 + 40_000 + 100);
    const second = lease(first.doc, { holder: 'b', now: T0 + 500, backlog: 5, feedback: { seconds: {} }, bounds: B });
    expect(second.lease.deferCursor).toBe(T0 + 40_100);
  });
});

describe('bringing deferred deliveries forward when turns go unused', () => {
  const idle = (extra: Partial<AdvanceInput> = {}): AdvanceInput => ({ deferCursor: T0 + 3_600_000, advancedThrough: undefined, rate: 20, backlog: 0, deferring: false, now: T0, ...extra });

  it(`grants the turns of the next ${ADVANCE_AHEAD_MS} ms while deferrals wait beyond them`, () => {
    expect(advanceGrant(idle())).toEqual({ count: 200, advancedThrough: T0 + 10_000 });
    // At the minimum rate: 10 turns.
    expect(advanceGrant(idle({ rate: 1 }))).toEqual({ count: 10, advancedThrough: T0 + 10_000 });
  });

  it(`at most ${MAX_ADVANCE} in one grant (each a claim), the window's later turns left to the next leases`, () => {
    expect(advanceGrant(idle({ rate: 100 }))).toEqual({ count: MAX_ADVANCE, advancedThrough: T0 + MAX_ADVANCE * 10 });
  });

  it('less what the senders already have waiting for a turn', () => {
    expect(advanceGrant(idle({ backlog: 30 })).count).toBe(170);
    expect(advanceGrant(idle({ backlog: 200 })).count).toBe(0);
    expect(advanceGrant(idle({ backlog: 5000 })).count).toBe(0);
  });

  it('after the turns already granted: senders leasing one after the other do not bring the same turns twice', () => {
    const first = advanceGrant(idle());
    const second = advanceGrant(idle({ now: T0 + 1200, advancedThrough: first.advancedThrough }));
    // Only the 1.2 s of turns that came into the window since.
    expect(second).toEqual({ count: 24, advancedThrough: T0 + 11_200 });
    // Granted turns are not forgotten when nothing more is granted.
    expect(advanceGrant(idle({ now: T0 + 100, advancedThrough: T0 + 10_000, backlog: 190 }))).toEqual({ count: 0, advancedThrough: T0 + 10_000 });
  });

  it('nothing once every deferral is back, while paused, or while the sender itself defers', () => {
    expect(advanceGrant(idle({ deferCursor: T0 })).count).toBe(0);
    // Due within the window, but spread at 1/s: they would come back a second apart.
    expect(advanceGrant(idle({ deferCursor: T0 + ADVANCE_AHEAD_MS, deferredAtRate: 1 })).count).toBe(200);
    expect(advanceGrant(idle({ pausedUntil: T0 + 10_000 })).count).toBe(0);
    expect(advanceGrant(idle({ deferring: true })).count).toBe(0);
  });

  it(`nothing until the rate is ${ADVANCE_RATE_FACTOR}× the rate the deferrals were spread at: before, they come back about as fast as they can go`, () => {
    expect(advanceGrant(idle({ rate: 20, deferredAtRate: 15 })).count).toBe(0);
    expect(advanceGrant(idle({ rate: 20, deferredAtRate: 13 })).count).toBe(200);
    expect(advanceGrant(idle({ rate: 20, deferredAtRate: 1 })).count).toBe(200);
  });

  it('a lease carries the grant, and a sender that found the deferrals drained starts the cursor again from now', () => {
    const deferred = lease(undefined, { holder: 'a', now: T0, backlog: 400, feedback: { seconds: {} }, deferred: { count: 400, until: T0 + 400_000 }, bounds: B });
    expect(deferred.lease.advance).toBe(0);
    expect(deferred.doc.deferredAtRate).toBe(10);
    // Spread at 10/s and sent at 10/s, they come back as fast as they can go: nothing to bring.
    expect(lease(deferred.doc, { holder: 'a', now: T0 + 1000, backlog: 0, feedback: { seconds: {} }, bounds: B }).lease.advance).toBe(0);
    // Had they been spread while the rate was 2/s, its queue emptied: a is granted the window's turns at 10/s.
    const idleNow = lease({ ...deferred.doc, deferredAtRate: 2 }, { holder: 'a', now: T0 + 1000, backlog: 0, feedback: { seconds: {} }, bounds: B });
    expect(idleNow.lease.advance).toBe(100);
    // b, joining a second later, gets only the turns that came into the window since.
    const again = lease(idleNow.doc, { holder: 'b', now: T0 + 2000, backlog: 0, feedback: { seconds: {} }, bounds: B });
    expect(again.lease.advance).toBe(10);
    expect(again.lease.deferCursor).toBe(T0 + 400_100);
    const drained = lease(again.doc, { holder: 'b', now: T0 + 3000, backlog: 0, feedback: { seconds: {} }, drainedAt: T0 + 2500, bounds: B });
    expect(drained.lease.deferCursor).toBe(T0 + 3000);
    expect(drained.lease.advance).toBe(0);
  });

  it('the deferrals still out are taken to come back at the lowest rate any was spread at; a cursor that came back forgets it', () => {
    const slow = lease(undefined, { holder: 'a', now: T0, backlog: 30, feedback: { seconds: {} }, deferred: { count: 600, until: T0 + 600_000 }, bounds: { minPerSecond: 1, maxPerSecond: 1 } });
    expect(slow.doc.deferredAtRate).toBe(1);
    // A few more deferred once the rate is 10/s: still 1.
    const more = lease(slow.doc, { holder: 'a', now: T0 + 2000, backlog: 30, feedback: { seconds: {} }, deferred: { count: 3, until: T0 + 600_300 }, bounds: { minPerSecond: 10, maxPerSecond: 10 } });
    expect(more.doc.deferredAtRate).toBe(1);
    // Long after the cursor came back, new deferrals at 10/s stand alone.
    const later = lease(more.doc, { holder: 'a', now: T0 + 700_000, backlog: 30, feedback: { seconds: {} }, deferred: { count: 3, until: T0 + 740_000 }, bounds: { minPerSecond: 10, maxPerSecond: 10 } });
    expect(later.doc.deferredAtRate).toBe(10);
  });

  it('deliveries deferred again keep no place behind the cursor, but the sender is deferring: no grant, and a drained report before them is stale', () => {
    const deferred = lease({ ...lease(undefined, { holder: 'a', now: T0, backlog: 10, feedback: { seconds: {} }, bounds: B }).doc, deferCursor: T0 + 60_000, deferredAtRate: 2 }, {
      holder: 'a',
      now: T0 + 1000,
      backlog: 0,
      feedback: { seconds: {} },
      deferredAgain: 40,
      bounds: B,
    });
    expect(deferred.lease.deferCursor).toBe(T0 + 60_000);
    expect(deferred.lease.advance).toBe(0);
    expect(deferred.doc.deferredReportedAt).toBe(T0 + 1000);
    const stale = lease(deferred.doc, { holder: 'b', now: T0 + 1500, backlog: 0, feedback: { seconds: {} }, drainedAt: T0 + 900, bounds: B });
    expect(stale.lease.deferCursor).toBe(T0 + 60_000);
  });

  it('a drained report older than a deferral reported since keeps the cursor: that deferral may be out there still', () => {
    const deferred = lease(undefined, { holder: 'a', now: T0, backlog: 10, feedback: { seconds: {} }, deferred: { count: 10, until: T0 + 60_000 }, bounds: B });
    const stale = lease(deferred.doc, { holder: 'b', now: T0 + 500, backlog: 0, feedback: { seconds: {} }, drainedAt: T0 - 100, bounds: B });
    expect(stale.lease.deferCursor).toBe(T0 + 60_100);
  });
});

describe('the wait for a turn', () => {
  // 10/s on a grid an older Herald split by backlog, the busy sender holding 9 points of every 10, the small one 1: its own turns are a second apart.
  const grids: Grid[] = [{ from: T0, rate: 10, holders: ['busy', 'small'], weights: [9, 1] }];
  const base = { grids, holder: 'small', queue: 20, spanMs: 2400, rate: 10, now: T0 };

  it("at the sender's share while that is the shorter: a busy sender's own queue", () => {
    const { waitMs, gapMs } = waitForTurn({ ...base, holder: 'busy', queue: 5 });
    expect(gapMs).toBeCloseTo(1000 / 9, 6);
    expect(waitMs).toBeLessThan(1000);
  });

  it('once the next grid deals it its turn among all of them, when that is shorter: a small share does not make a burst look 20 s long', () => {
    const { waitMs, gapMs } = waitForTurn(base);
    expect(gapMs).toBe(1000);
    // Its first point (the tenth, 900 ms in), then a span and the slack, then its 20 at half of 10/s.
    expect(waitMs).toBeLessThan(20 * gapMs);
    expect(waitMs).toBeCloseTo(900 + 2400 + SWITCH_SLACK_MS + 4000, 0);
  });

  it('on a grid dealt in turn, at its share: N points apart', () => {
    const dealt: Grid[] = [{ from: T0, rate: 30, holders: ['a', 'b', 'c'], weights: [1, 1, 1] }];
    const { waitMs, gapMs } = waitForTurn({ ...base, grids: dealt, holder: 'b', queue: 4, rate: 30 });
    expect(gapMs).toBeCloseTo(100, 6);
    expect(waitMs).toBeLessThanOrEqual(5 * 100 + 1);
  });

  it('a sender that joins (on no grid yet) waits for the next grid, then its turn among all of them', () => {
    const { waitMs } = waitForTurn({ ...base, holder: 'new', queue: 10 });
    // A span until the next grid (at most), the slack, then 10 at a third of 10/s.
    expect(waitMs).toBeCloseTo(2400 + 2400 + SWITCH_SLACK_MS + 3000, 0);
  });

  it('a pause pushes the first turn back', () => {
    expect(waitForTurn({ ...base, queue: 0, pausedUntil: T0 + 30_000 }).waitMs).toBeGreaterThanOrEqual(30_000);
  });
});
