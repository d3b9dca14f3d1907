import { advanceGrant } from './rate-advance';
import { DeferredReport, Grid, gridIndexAt, nextDeferCursor, SWITCH_SLACK_MS } from './rate-turns';
import { CountsBySecond, HolderEntry, initialRateState, MAX_PAUSE_MS, mergeCounts, RateBounds, RateDoc, RateFeedback } from './rate-doc';
import { judgeSettled, REPORT_SLACK_MS, settledThrough } from './rate-judging';
import { nextLeaseAt, paceFor, scheduleGrids, spanFor } from './rate-grids';


/**
 * Adaptive delivery rate per destination (docs/rate-control.md: between 1 and 100 events/s; 200s raise
 * it gradually, 429s lower it), as pure functions of the controller's document, the
 * feedback a sender brings and the time.
 *
 * Every process that delivers to a destination shares one controller document. A process
 * leases from it about once per *span* (1.2 s per process sharing the destination, so the
 * document takes a little under a write a second however many deliver, what Firestore sustains):
 * the lease brings the process's feedback and takes back the *grids* it is to send on.
 *
 * The grids (rate-grids.ts) and the judging of the feedback (rate-judging.ts) are apart; the
 * document's shape is rate-doc.ts.
 *
 * Retry-After on a 429 pauses the destination until then (at most MAX_PAUSE_MS).
 */

/** A sender that has not leased this long after it was due has stopped sending (its turns go to the others). */
export const HOLDER_GRACE_MS = 2000;

export interface LeaseRequest {
  holder: string;
  /** This sender's work: deliveries waiting for a turn, and those it deferred lately. */
  backlog: number;
  /** What this sender saw since its last lease. */
  feedback: RateFeedback;
  /** Every attempt this sender started before this (epoch ms) is in this report or an earlier one; default: now less the report slack. */
  reportedThrough?: number;
  /** Deliveries this sender deferred since its last lease (each keeps a place behind the cursor). */
  deferred?: DeferredReport;
  /** Deliveries this sender deferred again since its last lease, back from a deferral: near their turn, behind no cursor. */
  deferredAgain?: number;
  /**
   * When this sender, bringing deferred deliveries forward, found fewer than it was granted
   * (epoch ms): none was left beyond them, so the destination's deferrals start again from now.
   */
  drainedAt?: number;
  bounds: RateBounds;
  now: number;
}

export interface Lease {
  /** The destination's rate after the feedback. */
  rate: number;
  /** The grid in force now and any scheduled after it. */
  grids: Grid[];
  /** Lease again after this long (if there is still work). */
  spanMs: number;
  /**
   * No sending on these grids from this time (epoch ms) without a newer lease: a grid
   * scheduled meanwhile may start then, and a sender still on the old one would double up
   * on its points.
   */
  validUntil: number;
  pausedUntil?: number;
  /** Defer after this (epoch ms), a turn of the rate apart: the destination's deferrals so far are due back until then. */
  deferCursor: number;
  /**
   * Deferred deliveries this sender is to bring forward now, earliest first: turns of the next
   * ADVANCE_AHEAD_MS that no sender has work for, while any deferral is still out.
   */
  advance: number;
}

/** One lease: the sender's feedback merged, the settled seconds judged, and the grids to send on. */
export function lease(doc: RateDoc | undefined, request: LeaseRequest): { doc: RateDoc; lease: Lease } {
  const { now, bounds, holder } = request;
  const current: RateDoc = doc ?? { state: initialRateState(bounds, now), seconds: {}, holders: {}, grids: [] };
  const holders: Record<string, HolderEntry> = {};
  for (const [h, entry] of Object.entries(current.holders)) if (now < entry.until + HOLDER_GRACE_MS) holders[h] = entry;
  const spanMs = nextLeaseAt(holders, holder, spanFor(Object.keys({ ...holders, [holder]: true }).length), now) - now;
  holders[holder] = { at: now, until: now + spanMs, backlog: request.backlog, reportedThrough: Math.min(now, request.reportedThrough ?? now - REPORT_SLACK_MS) };
  const seconds = mergeCounts(current.seconds, request.feedback.seconds);
  let state = judgeSettled(current.state, current.grids, seconds, bounds, now, spanMs, settledThrough(holders));
  if (request.feedback.pauseUntil !== undefined && request.feedback.pauseUntil > now) {
    state = { ...state, pausedUntil: Math.max(state.pausedUntil ?? 0, Math.min(request.feedback.pauseUntil, now + MAX_PAUSE_MS)) };
  }
  const grids = scheduleGrids(current.grids, state.rate, paceFor(state.rate, bounds), holders, holder, now, state.judgedThrough);
  const unjudged: CountsBySecond = {};
  for (const [k, c] of Object.entries(seconds)) if (Number(k) > state.judgedThrough) unjudged[k] = c;
  // A sender found no deferral left, and none was reported since it looked: they all came back.
  const drained = request.drainedAt !== undefined && request.drainedAt >= (current.deferredReportedAt ?? -Infinity);
  const deferCursor = nextDeferCursor(drained ? undefined : current.deferCursor, request.deferred, state.rate, now);
  const reporting = (request.deferred?.count ?? 0) > 0 || (request.deferredAgain ?? 0) > 0;
  const reported = reporting ? now : current.deferredReportedAt;
  // The lowest rate any deferral still out was spread at: a few deferred at the rate of now
  // (a burst on a sender whose share lags) do not hide a backlog spread at 1/s before them.
  const outstanding = !drained && (current.deferCursor ?? 0) > now ? current.deferredAtRate : undefined;
  const deferredAtRate = reporting ? Math.min(outstanding ?? Infinity, state.rate) : outstanding;
  const backlog = Object.values(holders).reduce((n, h) => n + (h.backlog ?? 0), 0);
  const advance = advanceGrant({
    deferCursor,
    advancedThrough: current.advancedThrough,
    rate: state.rate,
    backlog,
    deferring: reporting,
    ...(deferredAtRate === undefined ? {} : { deferredAtRate }),
    now,
    ...(state.pausedUntil === undefined ? {} : { pausedUntil: state.pausedUntil }),
  });
  return {
    doc: {
      state,
      seconds: unjudged,
      holders,
      grids,
      deferCursor,
      ...(reported === undefined ? {} : { deferredReportedAt: reported }),
      ...(deferredAtRate === undefined ? {} : { deferredAtRate }),
      ...(advance.advancedThrough === undefined ? {} : { advancedThrough: advance.advancedThrough }),
    },
    lease: {
      rate: state.rate,
      grids: grids.slice(gridIndexAt(grids, now)),
      spanMs,
      validUntil: now + spanMs + SWITCH_SLACK_MS,
      ...(state.pausedUntil === undefined ? {} : { pausedUntil: state.pausedUntil }),
      deferCursor,
      advance: advance.count,
    },
  };
}
