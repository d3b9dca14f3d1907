import { CountsBySecond, RateBounds, SecondCounts } from '../../domain/rate/rate-doc';
import { DeferredReport, Grid } from '../../domain/rate/rate-turns';
import { THROTTLE_COOL_DOWN_MS, UnleasedSends } from '../../domain/rate/unleased-sends';

/**
 * What the delivery limiter (delivery-limiter.ts) keeps per destination a process sends to,
 * and when it may forget it.
 */

export interface Waiter {
  /** Its work before the turn is done: it may take one. */
  ready: boolean;
  go: () => void;
  stop: (e: Error) => void;
  /** Deferred after all if its turn has not come by the caller's limit. */
  deadline?: NodeJS.Timeout;
}

/** What this process keeps per destination it sends to: its leased grids, its queue of callers, what it owes the next lease. */
export interface DestinationPace {
  bounds: RateBounds;
  /** The grids this process sends on (the one in force, then any scheduled); undefined before the first lease. */
  grids?: Grid[];
  /** Not past this on them without a newer lease (epoch ms). */
  validUntil: number;
  rate?: number;
  spanMs: number;
  leasedAt?: number;
  leasing?: Promise<void>;
  /** Callers waiting for their turn to send, first come first served (a turn goes to the first that is ready). */
  queue: Waiter[];
  /** The grid time of the last turn taken (epoch ms). */
  lastTurnAt?: number;
  /** Where the next deferred delivery is told to come back: after the destination's deferrals so far (the lease says), a turn of the rate apart. */
  deferCursor: number;
  /** Where the next delivery deferred again (AcquireOptions.returning) is told to come back: this process's turns apart. */
  againCursor: number;
  /** Deliveries deferred again since the last lease: reported with the next (they keep no place behind the cursor). */
  deferredAgain: number;
  /** Deferred since the last lease: reported with the next. */
  deferred: DeferredReport;
  /** Deferred deliveries being brought forward (one grant at a time). */
  advancing?: Promise<void>;
  /** Granted while the last grant was still being carried out: brought next. */
  advanceOwed: number;
  /** When a grant found no deferred delivery left beyond it (epoch ms): reported with the next lease. */
  drainedAt?: number;
  /** Attempts by the second they started in, since the last lease. */
  feedback: CountsBySecond;
  /** When the attempts not reported yet were let go, oldest first. */
  inFlight: number[];
  /** When callers were told to defer, over the last DEFER_WINDOW_MS: with the queue, the backlog reported with a lease. */
  deferrals: number[];
  /** The next lease, while there is work. */
  renewTimer?: NodeJS.Timeout;
  /** No sends before this (Retry-After, this process's or another's through the lease), epoch ms. */
  pausedUntil?: number;
  /** A Retry-After this process saw, still to be reported. */
  reportPause?: number;
  timer?: NodeJS.Timeout;
  /** Whether this process leases the destination now (domain/rate/unleased-sends.ts). */
  unleased: UnleasedSends;
  /** When a caller last asked for a turn or reported an attempt (epoch ms): long idle, the destination is forgotten. */
  lastUsed: number;
}

/**
 * A destination idle this long is forgotten (`forgettable`): an instance that has delivered to
 * 100,000 destinations would otherwise keep 100,000 of them. Longer than anything the state
 * carries for an idle destination (unreported counts, the last lease, leased mode), so one
 * that comes back starts as the first time: a send within the allowance, or a first lease,
 * which the lapsed lease would have cost anyway.
 */
export const FORGET_IDLE_MS = 5 * 60_000;
/** Idle destinations are looked for at most this often, on a caller's way in. */
export const SWEEP_EVERY_MS = 30_000;

/**
 * Whether the destination holds nothing a fresh start would not redo: no caller, timer, lease
 * or grant under way, no lease still in force, no pause, no deferral still out (the cursors
 * that space them), and no sign of overload within the cool-down (forgotten, it would send
 * unleased again). Counts not reported by now are older than any lease judges.
 */
export function forgettable(pace: DestinationPace, now: number): boolean {
  return (
    pace.lastUsed <= now - FORGET_IDLE_MS &&
    pace.queue.length === 0 &&
    pace.timer === undefined &&
    pace.renewTimer === undefined &&
    pace.leasing === undefined &&
    pace.advancing === undefined &&
    pace.validUntil <= now &&
    Math.max(pace.pausedUntil ?? 0, pace.reportPause ?? 0) <= now &&
    Math.max(pace.deferCursor, pace.againCursor, pace.deferred.until) <= now &&
    (pace.unleased.throttledAt === undefined || now - pace.unleased.throttledAt >= THROTTLE_COOL_DOWN_MS)
  );
}

/** This process's counts for the second `at` (epoch ms) falls in, still to be reported. */
export function countsAt(pace: DestinationPace, at: number): SecondCounts {
  return (pace.feedback[String(Math.floor(at / 1000))] ??= { sent: 0, ok: 0, throttled: 0 });
}
