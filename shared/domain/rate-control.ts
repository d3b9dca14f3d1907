/**
 * Adaptive delivery rate per destination (seed 000: between 1 and 100 events/s; 200s raise
 * it gradually, 429s lower it), as pure functions of the controller's state, the feedback
 * of the last window and the time.
 *
 * The controller is AIMD with a capacity estimate and a slow start:
 * - Slow start: while nothing has been throttled, the rate doubles each window in which
 *   the destination used at least 80 % of it — from 10/s, 80/s is reached in 3 s.
 * - Congestion avoidance, after the first 429: each fully used window adds 5 % (at least
 *   0.5/s), so the rate creeps toward capacity instead of oscillating far past it.
 * - A window with 429s sets the rate to 90 % of what the receiver accepted in it (the best
 *   estimate of its capacity), and never above 90 % of the current rate. Plain AIMD (halve
 *   on 429) averages 75 % of capacity in its sawtooth; starting the decrease from the
 *   accepted rate keeps the average near 95 % with few 429s.
 * - Retry-After on a 429 pauses the destination until then (at most MAX_PAUSE_MS).
 * A window in which the destination did not use its rate leaves the rate as it is: an idle
 * or slow producer does not teach the controller anything about the receiver.
 */

export interface RateBounds {
  minPerSecond: number;
  maxPerSecond: number;
}

/** Seed 000's bounds; a destination may narrow them (`rate: {min, max}` in its spec). */
export const RATE_LIMITS: RateBounds = { minPerSecond: 1, maxPerSecond: 100 };
export const INITIAL_RATE = 10;
export const RATE_WINDOW_MS = 1000;
export const MAX_PAUSE_MS = 60_000;

const INCREASE_FRACTION = 0.05;
const MIN_INCREASE = 0.5;
const DECREASE = 0.9;
const USED = 0.8;

export interface RateState {
  /** Events per second allowed now. */
  rate: number;
  phase: 'slow-start' | 'avoidance';
  /** Start of the current feedback window (epoch ms). */
  windowStart: number;
  /** Feedback counted in the current window. */
  successes: number;
  throttled: number;
  /** No sends before this (Retry-After), epoch ms. */
  pausedUntil?: number;
}

export interface RateFeedback {
  successes: number;
  throttled: number;
  /** The longest Retry-After among the window's 429s, in ms. */
  retryAfterMs?: number;
}

export function clampRate(rate: number, bounds: RateBounds): number {
  return Math.min(bounds.maxPerSecond, Math.max(bounds.minPerSecond, rate));
}

export function initialRateState(bounds: RateBounds, now: number): RateState {
  return { rate: clampRate(INITIAL_RATE, bounds), phase: 'slow-start', windowStart: now, successes: 0, throttled: 0 };
}

/**
 * Adds a batch of feedback (what some sender saw since it last reported) and closes every
 * window that has ended. Feedback from several senders adds up in the same window.
 */
export function applyFeedback(state: RateState, feedback: RateFeedback, bounds: RateBounds, now: number): RateState {
  let s: RateState = { ...state, successes: state.successes + feedback.successes, throttled: state.throttled + feedback.throttled };
  if (feedback.retryAfterMs !== undefined && feedback.throttled > 0) {
    const until = now + Math.min(MAX_PAUSE_MS, Math.max(0, feedback.retryAfterMs));
    s.pausedUntil = Math.max(s.pausedUntil ?? 0, until);
  }
  if (now - s.windowStart >= RATE_WINDOW_MS) s = closeWindow(s, bounds, now);
  if (s.pausedUntil !== undefined && s.pausedUntil <= now) delete s.pausedUntil;
  return s;
}

function closeWindow(s: RateState, bounds: RateBounds, now: number): RateState {
  const seconds = (now - s.windowStart) / 1000;
  const next: RateState = { ...s, windowStart: now, successes: 0, throttled: 0 };
  if (s.throttled > 0) {
    const accepted = s.successes / seconds;
    next.rate = clampRate(Math.min(s.rate, accepted) * DECREASE, bounds);
    next.phase = 'avoidance';
    return next;
  }
  // Only a window that used most of its rate says the receiver could take more.
  if (s.successes < USED * s.rate * seconds) return next;
  next.rate = clampRate(s.phase === 'slow-start' ? s.rate * 2 : s.rate + Math.max(MIN_INCREASE, s.rate * INCREASE_FRACTION), bounds);
  return next;
}

/** The earliest a send may start: not before now, the pause, or the next free slot. */
export function nextSlot(state: RateState, cursor: number, now: number): number {
  return Math.max(now, cursor, state.pausedUntil ?? 0);
}

/**
 * `count` send times from the first free slot, spaced 1/rate apart, and the cursor after
 * them: however many senders take slots, no second has more than `rate` of them.
 */
export function grantSlots(state: RateState, cursor: number, now: number, count: number): { slots: number[]; cursor: number } {
  const start = nextSlot(state, cursor, now);
  const gap = 1000 / state.rate;
  const slots = Array.from({ length: count }, (_, i) => start + i * gap);
  return { slots, cursor: start + count * gap };
}

/** What one destination's rate controller keeps in the store, shared by every sender. */
export interface RateDoc {
  state: RateState;
  /** Time (epoch ms) after the last slot granted. */
  cursor: number;
  /** Senders that leased recently, and when: how many share the destination. */
  holders: Record<string, number>;
}

export interface LeaseRequest {
  holder: string;
  /** This sender's demand, events per second. */
  demandPerSecond: number;
  /** What this sender saw since its last lease. */
  feedback: RateFeedback;
  bounds: RateBounds;
  now: number;
}

export interface Lease {
  slots: number[];
  /** The rate after the feedback. */
  rate: number;
  pausedUntil?: number;
}

/** A holder that has not leased for this long no longer counts as sharing the destination. */
export const HOLDER_IDLE_MS = 5_000;

/**
 * One lease: the feedback applied, then slots for about one lease span of this sender's
 * demand. The span is a second per active sender, so all senders together lease about once
 * a second: the document takes about one write a second, however many instances deliver.
 */
export function lease(doc: RateDoc | undefined, request: LeaseRequest): { doc: RateDoc; lease: Lease } {
  const { now, bounds } = request;
  const current = doc ?? { state: initialRateState(bounds, now), cursor: now, holders: {} };
  const state = applyFeedback({ ...current.state, rate: clampRate(current.state.rate, bounds) }, request.feedback, bounds, now);
  const holders: Record<string, number> = {};
  for (const [h, at] of Object.entries(current.holders)) if (now - at < HOLDER_IDLE_MS) holders[h] = at;
  holders[request.holder] = now;
  const sharing = Math.max(1, Object.keys(holders).length);
  const spanMs = 1000 * sharing;
  // At least this sender's fair share of a second: a sender leases at most once a second,
  // so a short burst after a quiet spell is not held to one slot per lease.
  const fairShare = Math.ceil(state.rate / sharing);
  const count = Math.max(1, Math.min(Math.max(fairShare, Math.ceil((request.demandPerSecond * spanMs) / 1000)), Math.floor((state.rate * spanMs) / 1000)));
  const granted = grantSlots(state, current.cursor, now, count);
  return {
    doc: { state, cursor: granted.cursor, holders },
    lease: { slots: granted.slots, rate: state.rate, ...(state.pausedUntil === undefined ? {} : { pausedUntil: state.pausedUntil }) },
  };
}
