import { addHistograms } from './latency-histogram';
import { LastError } from '../retry/delivery';
import { addSettled, bucketStart, RateBucket, RECENT_ERRORS } from './success-rate';

/**
 * A destination's counters folded into one document, so that a read of its hour or its day
 * costs one document and not one per minute (a destination busy all day has 1,440 counter
 * documents per writer). Pure: the suspension check folds, the stats and window reads read,
 * and both pass the times in.
 */
export interface RateRollup {
  destinationId: string;
  /** The first counter bucket not folded in: every bucket before it is in `minutes` (the recent ones) and in `coarse`. */
  foldedThrough: number;
  /**
   * Counter buckets, complete and oldest first: those that started within `minutesMs` before
   * `foldedThrough`, with the newest RECENT_ERRORS errors of them all and no others: a window
   * ends now, so its newest errors are among those.
   */
  minutes: RateBucket[];
  /** The folded counter buckets summed per `coarseMs` (aligned on it), oldest first, for a day; no errors kept. */
  coarse: RateBucket[];
}

export interface RollupShape {
  /** The counters' bucket (destination-counters.ts counterBucketMs). */
  bucketMs: number;
  /** How far back before `foldedThrough` the minutes are kept: the longest window read minute by minute (the rolling hour and a margin). */
  minutesMs: number;
  /** The coarse bucket: the 24 h chart's point (a whole number of counter buckets), so the chart sums whole coarse buckets. */
  coarseMs: number;
  /** How far back the coarse buckets reach. */
  dayMs: number;
}

/** The earliest bucket a rollup with this `foldedThrough` holds in each granularity (every one from there on). */
export function heldFrom(foldedThrough: number, shape: RollupShape): { minutes: number; coarse: number } {
  return { minutes: foldedThrough - shape.minutesMs, coarse: bucketStart(foldedThrough - shape.dayMs, shape.coarseMs) - shape.coarseMs };
}

/**
 * The rollup with the counter buckets of [from, foldTo) folded in: `raw` must hold every
 * bucket of the destination from `from` on, merged across documents (one per start), and
 * `from` must be the rollup's `foldedThrough` (or, with none, where the read of `raw` began).
 * Each bucket is folded once, overwriting: nothing is ever added twice as long as a write
 * of the result is refused when the rollup changed since it was read (the stores' version).
 * Undefined when there is nothing to fold: no complete bucket with counts in [from, foldTo).
 */
export function foldRollup(rollup: RateRollup | undefined, destinationId: string, raw: readonly RateBucket[], from: number, foldTo: number, shape: RollupShape): RateRollup | undefined {
  const start = rollup?.foldedThrough ?? from;
  if (rollup && foldTo <= start) return undefined;
  const through = Math.max(start, foldTo);
  const folded = raw.filter((b) => b.start >= start && b.start < through);
  // No complete bucket to add: no write. Reads go on from the stored `foldedThrough`, over no more documents than from a later one.
  if (folded.length === 0) return undefined;
  const held = heldFrom(through, shape);
  const minutes = [...(rollup?.minutes ?? []), ...folded].filter((b) => b.start >= held.minutes).sort((a, b) => a.start - b.start);
  const coarse = new Map((rollup?.coarse ?? []).map((b) => [b.start, { ...b }]));
  for (const b of folded) {
    const at = bucketStart(b.start, shape.coarseMs);
    coarse.set(at, addBuckets(coarse.get(at) ?? { destinationId, start: at, attempts: 0, successes: 0, failures: 0 }, b));
  }
  const kept = new Set(minutes.flatMap((b) => b.lastErrors ?? []).sort((x, y) => y.at.localeCompare(x.at)).slice(0, RECENT_ERRORS));
  return {
    destinationId,
    foldedThrough: through,
    minutes: minutes.map((b) => withErrors({ ...b, destinationId }, (b.lastErrors ?? []).filter((e) => kept.has(e)))),
    coarse: [...coarse.values()].filter((b) => b.start >= held.coarse).sort((a, b) => a.start - b.start),
  };
}

/**
 * What the rollup answers of a read since `since`: its buckets (minutes, or `coarse` ones,
 * those that started at or after `since`) and `rawSince`, where the counter documents take
 * over. A rollup that does not reach back to `since` answers nothing: the raw counters then
 * answer all of it (dearer, never wrong).
 */
export function rolledUp(rollup: RateRollup | undefined, since: number, coarse: boolean, shape: RollupShape): { buckets: RateBucket[]; rawSince: number } {
  if (!rollup || rollup.foldedThrough <= since) return { buckets: [], rawSince: since };
  const held = heldFrom(rollup.foldedThrough, shape);
  if (since < (coarse ? held.coarse : held.minutes)) return { buckets: [], rawSince: since };
  return { buckets: (coarse ? rollup.coarse : rollup.minutes).filter((b) => b.start >= since), rawSince: rollup.foldedThrough };
}

function withErrors(b: RateBucket, errors: LastError[]): RateBucket {
  const { lastErrors: _all, ...counts } = b;
  return errors.length ? { ...counts, lastErrors: errors } : counts;
}

/** Two buckets' counts summed into the first's span (a coarse bucket takes no errors). */
function addBuckets(into: RateBucket, b: RateBucket): RateBucket {
  const settled = addSettled(into.settled, b.settled);
  const latency = b.latency && Object.keys(b.latency).length ? addHistograms(into.latency, b.latency) : into.latency;
  return {
    destinationId: into.destinationId,
    start: into.start,
    attempts: into.attempts + b.attempts,
    successes: into.successes + b.successes,
    failures: into.failures + b.failures,
    ...(latency ? { latency } : {}),
    ...(settled ? { settled } : {}),
  };
}
