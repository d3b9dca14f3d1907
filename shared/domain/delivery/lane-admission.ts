import type { Destination } from '../destinations/destination';

/**
 * How a delivery is admitted on its lane. A shared lane's push slots belong to every
 * destination on it (topology.ts), so there a delivery waits only briefly for its rate turn,
 * and a slow destination's first attempts leave it; a dedicated lane is its destination's
 * own. Both waits are bounded by what handling one push may take (the ack deadline less
 * room for Herald's own work), less the attempt that follows the wait.
 */
export interface LaneWaits {
  /** On a dedicated lane (30 s). */
  dedicatedMs: number;
  /** On a shared lane (HERALD_SHARED_LANE_WAIT_MS). */
  sharedMs: number;
  /** What handling one lane push may take, wait and attempt together (LANE_HANDLING_BUDGET_MS). */
  handlingBudgetMs: number;
}

/**
 * The longest a delivery to `destination` may wait in-process for its rate turn. A member of a
 * bundle (one request's events for the destination in one push) waits as long as on a dedicated
 * lane: its whole bundle holds one push slot however many of its members wait, where the same
 * events pushed alone would hold a slot each.
 */
export function rateWaitLimitMs(destination: Pick<Destination, 'lane'>, attemptTimeoutMs: number, waits: LaneWaits, inBundle = false): number {
  const limit = destination.lane === 'dedicated' || inBundle ? waits.dedicatedMs : Math.min(waits.dedicatedMs, waits.sharedMs);
  return Math.max(0, Math.min(limit, waits.handlingBudgetMs - attemptTimeoutMs));
}

/** A first attempt to a destination seen slow is not made on its shared lane: the retry lanes take it. */
export function leavesSharedLane(destination: Pick<Destination, 'lane'>, slow: boolean): boolean {
  return destination.lane !== 'dedicated' && slow;
}
