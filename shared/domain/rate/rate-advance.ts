import { deferGapMs } from './rate-turns';

/**
 * Rate control's grants (the controller: rate-control.ts): deferred deliveries brought
 * forward to fill turns no sender has work for once the rate has climbed.
 */

/**
 * How far ahead deferred deliveries are brought forward to fill turns, ms: brought now, they
 * wait for those turns queued (well inside the 30 s a caller may wait, so none is deferred
 * again), and a lease or two later the next are brought for the turns after.
 */
export const ADVANCE_AHEAD_MS = 10_000;
/** Deferrals are brought forward only once the rate is this many times the lowest rate they were spread at. */
export const ADVANCE_RATE_FACTOR = 1.5;
/** At most this many in one grant: each is a claim transaction, and a sender carries a grant out at once. */
export const MAX_ADVANCE = 250;

export interface AdvanceInput {
  /** The destination's deferrals are due back up to here (epoch ms). */
  deferCursor: number;
  advancedThrough: number | undefined;
  rate: number;
  /** Every sender's backlog at its last lease: deliveries waiting for a turn, or deferred lately. */
  backlog: number;
  /** The leasing sender deferred deliveries since its last lease: it has more work than turns. */
  deferring: boolean;
  /** The lowest rate the deferrals still out were spread at. */
  deferredAtRate?: number;
  pausedUntil?: number;
  now: number;
}

/**
 * Deferred deliveries come back at the rate they were deferred at: a destination that timed
 * out for an hour at 20 events/s sits at 1/s, and that hour's events are deferred a second
 * apart, over some 20 hours. When it answers again, its rate climbs, and without this rule
 * the backlog would still come back at 1/s while the turns went unused. So each lease grants
 * the turns of the next ADVANCE_AHEAD_MS that the senders' backlogs do not fill — after those
 * already granted (`advancedThrough`, so senders leasing one after the other do not bring the
 * same turns' worth twice) — as long as any deferral is still out, and only once the rate is
 * ADVANCE_RATE_FACTOR times the lowest rate the deferrals still out were spread at. A
 * destination whose senders are busy (a backlog of a window's turns, or deferrals of the
 * leasing one lately) or paused by Retry-After is granted nothing. Other gates measured
 * worse (README, *Adaptive delivery rate*).
 */
export function advanceGrant(input: AdvanceInput): { count: number; advancedThrough?: number } {
  const { now, rate } = input;
  const horizon = now + ADVANCE_AHEAD_MS;
  const kept = input.advancedThrough === undefined ? {} : { advancedThrough: input.advancedThrough };
  // Deferred at about this rate, they come back about as fast as they can be sent: bringing them
  // forward only moves them into a sender that may have no share for them yet, to be deferred
  // again (measured at C = 10: 333 brought forward in a minute and the steady state 0.71).
  const spreadAtThisRate = input.deferredAtRate !== undefined && rate < ADVANCE_RATE_FACTOR * input.deferredAtRate;
  // Deferrals due within the window come back at the rate they were spread at too: left to
  // come back on their own, a backlog spread at 1/s ended in a trickle (the recovery bench at
  // C=10: its last ten deliveries over ten seconds beside the producer's 5/s, 0.87 of the target).
  if (input.deferring || spreadAtThisRate || (input.pausedUntil ?? 0) > now || input.deferCursor <= now) return { count: 0, ...kept };
  const from = Math.max(now, input.advancedThrough ?? 0);
  const turns = Math.floor(((horizon - from) * rate) / 1000);
  const count = Math.min(MAX_ADVANCE, Math.max(0, turns - input.backlog));
  if (count === 0) return { count: 0, ...kept };
  return { count, advancedThrough: from + deferGapMs(rate) * count };
}
