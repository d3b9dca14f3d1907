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
