import { addDeferred, deferTo, waitForTurn } from '../../domain/rate/rate-turns';
import { countsAt, DestinationPace, Waiter } from './destination-pace';
import { Gate } from './limiter-gate';

/** How long a delivery that joins this process's queue now would wait for its turn, and this process's pace (rate-turns.ts waitForTurn). */
export function waitAt(pace: DestinationPace, t: number, holder: string): { wait: number; gap: number } {
  const { waitMs, gapMs } = waitForTurn({
    grids: pace.grids!,
    holder,
    ...(pace.lastTurnAt === undefined ? {} : { lastTurnAt: pace.lastTurnAt }),
    ...(pace.pausedUntil === undefined ? {} : { pausedUntil: pace.pausedUntil }),
    queue: pace.queue.length,
    spanMs: pace.spanMs,
    rate: pace.rate ?? pace.bounds.minPerSecond,
    now: t,
  });
  return { wait: waitMs, gap: gapMs };
}

/**
 * Tells a caller to defer, to `earliest` or later: after the destination's deferrals so far,
 * a turn of the rate apart; or, coming back from a deferral (AcquireOptions.returning), at
 * `earliest`, this process's turns (`gap`) apart.
 */
export function defer(pace: DestinationPace, t: number, earliest: number, gap: number, returning: boolean): Gate {
  countLimited(pace, t);
  pace.deferrals.push(t);
  if (returning) {
    const again = deferTo(pace.againCursor, earliest, 1000 / gap);
    pace.againCursor = again.cursor;
    pace.deferredAgain++;
    return { kind: 'defer', until: again.until };
  }
  const { until, cursor } = deferTo(pace.deferCursor, earliest, pace.rate ?? pace.bounds.minPerSecond);
  pace.deferCursor = cursor;
  pace.deferred = addDeferred(pace.deferred, { count: 1, until });
  return { kind: 'defer', until };
}

/** A waiter gives up its place before its turn; false: it had none left (served, or closed). */
export function leave(pace: DestinationPace, waiter: Waiter): boolean {
  clearTimeout(waiter.deadline);
  const at = pace.queue.indexOf(waiter);
  if (at >= 0) pace.queue.splice(at, 1);
  return at >= 0;
}

export function countLimited(pace: DestinationPace, at: number): void {
  const counts = countsAt(pace, at);
  counts.limited = (counts.limited ?? 0) + 1;
}
