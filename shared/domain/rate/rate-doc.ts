import { Grid } from './rate-turns';

/**
 * The rate controller's document (rate-control.ts): the rate and its bounds, the feedback
 * counted by second, the senders sharing the destination and the grids they send on, as the
 * store keeps it.
 */

export interface RateBounds {
  minPerSecond: number;
  maxPerSecond: number;
}

/** Seed 000's bounds; a destination may narrow them (`rate: {min, max}` in its spec). */
export const RATE_LIMITS: RateBounds = { minPerSecond: 1, maxPerSecond: 100 };
export const INITIAL_RATE = 10;
export const MAX_PAUSE_MS = 60_000;

/** Attempts that started in one second (epoch seconds), across the senders that reported them. */
export interface SecondCounts {
  sent: number;
  /** Accepted (2xx, or a topic took the message): only these raise the rate. */
  ok: number;
  /** The receiver's signs of overload: 429s, and attempts that timed out. */
  throttled: number;
  /** Of those, attempts that timed out. */
  timedOut?: number;
  /** Sends that waited their turn behind others, and deliveries deferred: the rate, not the producer, set the pace. */
  limited?: number;
}

/** Keyed by the epoch second, as a string (a Firestore map key). */
export type CountsBySecond = Record<string, SecondCounts>;

export interface RateState {
  /** Events per second: the latest grid's, or the one about to be scheduled. */
  rate: number;
  phase: 'slow-start' | 'avoidance';
  /** Every second up to this one (epoch s) has been judged. */
  judgedThrough: number;
  /** After a decrease: seconds before this one (epoch s) went out at the old rate; their 429s are not judged. */
  holdUntil?: number;
  /** No sends before this (Retry-After), epoch ms. */
  pausedUntil?: number;
  /** Sends and 429s of the seconds judged at the current rate: a few 429s count only once they add up. */
  era?: { sent: number; throttled: number };
  /** Slow start after a cut by timeouts ends here: the rate before the cut. */
  ceiling?: number;
  /**
   * Cut by timeouts and not seen accepting since: the first round trip accepted in full takes
   * the rate straight to where a new destination starts (INITIAL_RATE, or the ceiling if lower).
   */
  resume?: true;
  /** What each judged second of the last CAPACITY_MEMORY_S accepted, by epoch second (a map: Firestore takes no nested arrays): the receiver takes at least their best. */
  recentOk?: Record<string, number>;
  /** The last judged second with many 429s (epoch s): a heavy decrease needs two in a row. */
  heavyAt?: number;
}

export interface HolderEntry {
  /** When it last leased, epoch ms. */
  at: number;
  /** Its backlog then (deliveries waiting for a turn, or deferred lately). */
  backlog?: number;
  /** When it is due to lease again (if it still has work), epoch ms. */
  until: number;
  /** It has reported every attempt it started before this, epoch ms. */
  reportedThrough?: number;
}

/** What one destination's controller keeps in the store, shared by every sender. */
export interface RateDoc {
  state: RateState;
  /** Feedback of the seconds not yet judged. */
  seconds: CountsBySecond;
  /** Senders that share the destination now. */
  holders: Record<string, HolderEntry>;
  /** In start order: from the one in force at the oldest second still to judge, to any scheduled. */
  grids: Grid[];
  /**
   * Deliveries deferred to the destination's turns are due back up to here (epoch ms), at the
   * rate, across every sender: a sender defers after it, so they come back about as fast as
   * they can be sent, whichever process takes them then.
   */
  deferCursor?: number;
  /** When a lease last reported deferrals (epoch ms): a sender that found none left before this may not reset the cursor. */
  deferredReportedAt?: number;
  /** The lowest rate the deferrals still out were spread at (a turn of it apart): they come back no faster. */
  deferredAtRate?: number;
  /** Deliveries brought forward fill the destination's turns up to here (epoch ms): the next are brought for the turns after. */
  advancedThrough?: number;
}

export interface RateFeedback {
  seconds: CountsBySecond;
  /** A 429's Retry-After: no sends before this, epoch ms. */
  pauseUntil?: number;
}

export const secondOf = (ms: number) => Math.floor(ms / 1000);

export function clampRate(rate: number, bounds: RateBounds): number {
  return Math.min(bounds.maxPerSecond, Math.max(bounds.minPerSecond, rate));
}

export function initialRateState(bounds: RateBounds, now: number): RateState {
  return { rate: clampRate(INITIAL_RATE, bounds), phase: 'slow-start', judgedThrough: secondOf(now) - 1 };
}

/** Adds a sender's per-second counts into the document's. */
export function mergeCounts(into: CountsBySecond, from: CountsBySecond): CountsBySecond {
  const out: CountsBySecond = { ...into };
  for (const [second, c] of Object.entries(from)) {
    const prior = out[second] ?? { sent: 0, ok: 0, throttled: 0 };
    out[second] = {
      sent: prior.sent + c.sent,
      ok: prior.ok + c.ok,
      throttled: prior.throttled + c.throttled,
      limited: (prior.limited ?? 0) + (c.limited ?? 0),
      ...(prior.timedOut || c.timedOut ? { timedOut: (prior.timedOut ?? 0) + (c.timedOut ?? 0) } : {}),
    };
  }
  return out;
}

/**
 * A document of another shape (an older Herald's) keeps its rate and starts afresh otherwise:
 * the rate is all that is worth carrying over.
 */
export function readRateDoc(raw: unknown, bounds: RateBounds, now: number): RateDoc | undefined {
  if (typeof raw !== 'object' || raw === null) return undefined;
  const doc = raw as Partial<RateDoc>;
  if (doc.state && typeof doc.state.rate === 'number' && Array.isArray(doc.grids) && doc.seconds && doc.holders) return doc as RateDoc;
  if (typeof doc.state?.rate !== 'number') return undefined;
  return { state: { ...initialRateState(bounds, now), rate: clampRate(doc.state.rate, bounds), phase: 'avoidance' }, seconds: {}, holders: {}, grids: [] };
}
