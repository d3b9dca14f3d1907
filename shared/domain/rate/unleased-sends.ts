import { clampRate, INITIAL_RATE, RateBounds } from './rate-doc';

/**
 * When a process may send to a destination without leasing its rate (rate-control.ts): a
 * lease is a Firestore read and write, and a destination that gets an event now and then
 * would pay one per event (issue 33, decision 3: sparse traffic costs what dense traffic
 * costs). Leases are for destinations that near their rate or push back.
 *
 * A process sends unleased while, for that destination:
 * - it has sent fewer than its allowance unleased in the last second: a fifth of the rate a
 *   destination starts at (INITIAL_RATE, within its bounds), 2/s by default. A destination
 *   that starts below 5/s (a ceiling of 1–4/s) has none: so close to its ceiling, every send
 *   is leased;
 * - it has seen no sign of overload from it (a 429, Retry-After, a timeout; or a lease that
 *   showed the rate cut below where it starts, or paused) for THROTTLE_COOL_DOWN_MS;
 * - it is not in leased mode: once it leases a destination it keeps leasing it until no
 *   delivery asked for a turn for LEASED_QUIET_MS, so a busy destination never flaps between
 *   the modes (and a delivery back from a rate deferral always takes a leased turn).
 *
 * What N processes can do together: each checks its own count only, so N processes may send
 * N × the allowance a second unleased (2N/s by default: 20/s for 10 instances, double where a
 * new destination starts) before any of them leases. That is the price of not sharing a
 * counter; the receiver's first 429 puts the process that saw it in leased mode, and the
 * others follow as their own sends are refused or their bursts pass the allowance. The first
 * second after a process switches may carry its allowance on top of its leased turns.
 */

/** The allowance: this share of the rate a destination starts at. */
export const UNLEASED_SHARE = 1 / 5;
/** The allowance is counted over this sliding window. */
export const UNLEASED_WINDOW_MS = 1000;
/** After a sign of overload, the destination is leased for this long. */
export const THROTTLE_COOL_DOWN_MS = 10 * 60_000;
/** In leased mode until no delivery has asked for a turn for this long. */
export const LEASED_QUIET_MS = 60_000;

export interface UnleasedSends {
  /** This process's sends without a lease within the last window (epoch ms, oldest first). */
  sends: number[];
  /** The last sign of overload this process saw or learnt from a lease (epoch ms). */
  throttledAt?: number;
  /** In leased mode: when a delivery last asked for a turn (epoch ms). */
  leasedAt?: number;
}

export type SendMode = { unleased: true } | { unleased: false; why: 'leased' | 'throttled' | 'returning' | 'allowance' };

export const NO_UNLEASED_SENDS: UnleasedSends = { sends: [] };

/** Sends a second one process may make to a destination without a lease. */
export function unleasedAllowance(bounds: RateBounds): number {
  return Math.floor(clampRate(INITIAL_RATE, bounds) * UNLEASED_SHARE);
}

/**
 * Whether a delivery that asks for a turn now may go without a lease, and the state after it:
 * the send counted if so, leased mode entered (or kept) if not. `returning`: the delivery
 * comes back from a rate deferral (its destination was at its rate a moment ago).
 */
export function takeSendMode(state: UnleasedSends, bounds: RateBounds, now: number, returning: boolean): { mode: SendMode; state: UnleasedSends } {
  const sends = state.sends.filter((t) => t > now - UNLEASED_WINDOW_MS);
  const leased = (why: 'leased' | 'throttled' | 'returning' | 'allowance') => ({ mode: { unleased: false, why } as const, state: { ...state, sends, leasedAt: now } });
  if (state.leasedAt !== undefined && now - state.leasedAt < LEASED_QUIET_MS) return leased('leased');
  if (state.throttledAt !== undefined && now - state.throttledAt < THROTTLE_COOL_DOWN_MS) return leased('throttled');
  if (returning) return leased('returning');
  if (sends.length >= unleasedAllowance(bounds)) return leased('allowance');
  const { leasedAt: _quiet, ...rest } = state;
  return { mode: { unleased: true }, state: { ...rest, sends: [...sends, now] } };
}

/** An unleased send counted at `at` that was not made after all (its caller found nothing to send). */
export function withdrawSend(state: UnleasedSends, at: number): UnleasedSends {
  const i = state.sends.lastIndexOf(at);
  return i < 0 ? state : { ...state, sends: [...state.sends.slice(0, i), ...state.sends.slice(i + 1)] };
}

/** A sign of overload seen at `at`: the destination is leased from its next delivery on, for the cool-down. */
export function throttled(state: UnleasedSends, at: number): UnleasedSends {
  return { ...state, throttledAt: Math.max(state.throttledAt ?? at, at) };
}

/** Whether a lease shows the destination held back by someone's signs of overload: cut below where it starts, or paused. */
export function leaseShowsThrottle(lease: { rate: number; pausedUntil?: number }, bounds: RateBounds, now: number): boolean {
  return lease.rate < clampRate(INITIAL_RATE, bounds) || (lease.pausedUntil ?? 0) > now;
}
