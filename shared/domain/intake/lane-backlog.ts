import { activityWindowMs } from './intake';

/**
 * Whether a lane is behind: working through messages published well before now. The
 * reconciler asks it of a destination whose record is missing (domain/intake/intake.ts laneMoving
 * asks its rate controller, which a destination under the unleased allowance never leases): on
 * a shared lane backed up by its neighbours, a quiet destination's message is late, not lost,
 * and recovering it would send it twice. A lane is marked only while it is behind, so a lane
 * that keeps up (sparse traffic, most of the time) costs nothing.
 */

/** A lane message pushed this long after it was published on its lane shows the lane behind (ms). */
export function behindAfterMs(graceMs: number): number {
  return Math.min(10_000, graceMs / 6);
}

/** A sender marks a lane at most this often (ms): three times within the reconciler's activity window. */
export function markEveryMs(graceMs: number): number {
  return activityWindowMs(graceMs) / 3;
}

/** The lane (its topic) a push subscription to `deliver` belongs to: `projects/p/subscriptions/<topic>-deliver`. */
export function laneOfSubscription(subscription: string): string | undefined {
  const name = subscription.slice(subscription.lastIndexOf('/') + 1);
  return name.endsWith('-deliver') && name.length > '-deliver'.length ? name.slice(0, -'-deliver'.length) : undefined;
}

/** Whether a sender that last marked the lane at `lastMarkAt` marks it now for a message published on it at `publishedAt` (epoch ms). */
export function shouldMark(lastMarkAt: number | undefined, publishedAt: number, now: number, graceMs: number): boolean {
  if (!(now - publishedAt > behindAfterMs(graceMs))) return false;
  return lastMarkAt === undefined || now - lastMarkAt >= markEveryMs(graceMs);
}

/** Whether a lane last marked at `markedAt` (epoch ms) is behind now. */
export function laneBehind(markedAt: number | undefined, now: number, graceMs: number): boolean {
  return markedAt !== undefined && markedAt >= now - activityWindowMs(graceMs);
}
