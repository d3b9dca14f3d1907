import { Grid, gridAt, gridIndexAt, SWITCH_SLACK_MS } from './rate-turns';
import { clampRate, CountsBySecond, HolderEntry, INITIAL_RATE, RateBounds, RateState, SecondCounts, secondOf } from './rate-doc';

/**
 * Feedback is counted by the second the attempts started in, and the controller judges a
 * second only once every sender has reported all its attempts that started in it. The
 * rule, per judged second — AIMD with a capacity estimate and a slow start, its increases
 * paced by the feedback's round trip:
 * - Two seconds in a row with many 429s (over 20 % of their sends; one alone is more often
 *   sends bunched on their way) set the rate to 95 % of what the receiver accepted (its
 *   capacity, measured: the best second of the last CAPACITY_MEMORY_S, since a second of
 *   bunched sends, or one the senders could not fill, delivers less than the receiver
 *   takes). A few 429s (a small crossing, or sends bunched on their way) take 3 % off once
 *   they add up to 1.5 % of the sends at the current rate: one now and then is jitter, not
 *   capacity. The seconds until the lower grid
 *   starts still go out at the old rate: their 429s are not news and are not judged — one
 *   decrease per episode, as TCP halves once per round trip.
 * - An increase needs a used second sent entirely on the latest grid, so a rate only goes
 *   up once it was seen to work: slow start doubles it (until the first 429), congestion
 *   avoidance adds 2 % (at least 0.2/s), crossing capacity by at most that before the 429s
 *   of the crossing are judged. Plain AIMD (halve on 429) averages 75 % of capacity in its
 *   sawtooth; this one stays between 95 % and 100 %.
 * - A second that did not use its rate teaches nothing (an idle or slow producer): used
 *   means 80 % of the rate was accepted, or most sends queued for their turn and most were
 *   accepted. Failures raise nothing: a receiver answering 500s has not shown it takes more.
 * - An attempt that timed out counts as a 429 does: a receiver too slow to answer in time is
 *   past its capacity, and a destination that hangs on every request sinks to the minimum
 *   rate instead of holding up to 100 attempts a second open for the whole timeout (the
 *   instances, connections and retries that would take from every other destination).
 *   A cut made mostly of timeouts measured no capacity: once the receiver answers again,
 *   slow start takes the rate back to what it was before the cut (a webhook that hangs is
 *   more often down than overloaded; if it was overloaded, it times out again).
 */

/** A sender that does not say what it has reported is taken to have reported all but this last stretch (its attempts' time). */
export const REPORT_SLACK_MS = 500;
/** Seconds judged in one lease at most (after a long quiet spell, only the latest matter). */
const MAX_JUDGED_PER_LEASE = 10;

const DECREASE = 0.95;
/**
 * How far back a second's deliveries still vouch for the receiver's capacity, s. Not just
 * since the last decrease: a few seconds the senders could not fill (a stalled process)
 * would then make a heavy decrease fall to what they happened to send (12/s to 5.7/s at
 * C = 10, measured), and the additive climb back takes minutes at low rates. Bounded, so a
 * receiver whose capacity really dropped is believed within a few seconds.
 */
export const CAPACITY_MEMORY_S = 10;
/** A second with at most this share of 429s was a slight overshoot: a smaller step back. */
const MILD_THROTTLE = 0.2;
const MILD_DECREASE = 0.97;
/** The share of 429s over the seconds at one rate that a few 429s must add up to. */
const ERA_THROTTLE = 0.015;
const INCREASE_FRACTION = 0.02;
const MIN_INCREASE = 0.2;
const USED = 0.8;
/** In congestion avoidance the rate goes at most this far above what the judged second sent. */
const AHEAD_OF_SENT = 0.25;

/** One second's verdict, given the grids it went out on: the state after it (the second marked judged). */
export function judgeSecond(state: RateState, grids: readonly Grid[], second: number, counts: SecondCounts | undefined, bounds: RateBounds, now: number, spanMs: number): RateState {
  const s: RateState = { ...state, judgedThrough: Math.max(state.judgedThrough, second) };
  const held = s.holdUntil !== undefined && second < s.holdUntil;
  if (!counts || counts.sent === 0) return s;
  // Every second, held or not, shows what the receiver accepted.
  s.recentOk = { ...Object.fromEntries(Object.entries(s.recentOk ?? {}).filter(([at]) => Number(at) > second - CAPACITY_MEMORY_S)), [second]: counts.ok };
  if (held) return s;
  // The rate the second ended on: a second a higher grid started in crossed capacity at that
  // rate, not at the one it began on (a step back from the lower one took a destination that
  // had just doubled to 40/s against a receiver of 37/s down to 19.4/s, and 2 % steps took
  // minutes to climb back: 0.61 of the target in the recovery bench).
  const before = gridAt(grids, second * 1000 + 999)?.rate ?? s.rate;
  // Every second judged since the last change counts toward it (one sent before the change
  // and judged after it errs toward a decrease, never away from one).
  const era = { sent: (s.era?.sent ?? 0) + counts.sent, throttled: (s.era?.throttled ?? 0) + counts.throttled };
  if (counts.throttled > 0) {
    // Many 429s say the rate was far above capacity, which is then what the receiver
    // accepted. A few (a crossing by a step, or sends bunched on their way) call for a step
    // back once they add up over the seconds at this rate: one now and then is jitter.
    const heavy = counts.throttled > MILD_THROTTLE * counts.sent;
    // One second of many 429s alone is more often sends bunched on their way (a stalled
    // instance catching up, three instances joining) than a receiver over capacity, which
    // refuses second after second: the cut waits for the next (one C=10 run cut 10 to 6.7/s
    // on one such second early on, and 2 % steps were still at 9/s 90 s later: 0.81).
    if (heavy && s.heavyAt !== second - 1) return { ...s, era, heavyAt: second };
    if (!heavy && era.throttled <= ERA_THROTTLE * era.sent) return { ...s, era };
    // Capacity is at least the best recent second: a second of bunched sends (a stalled sender
    // catching up) draws many 429s while delivering less than the receiver takes.
    const capacity = Math.max(...Object.values(s.recentOk));
    const rate = clampRate(heavy ? Math.min(s.rate, capacity) * DECREASE : Math.min(s.rate, before) * MILD_DECREASE, bounds);
    // The lower grid starts once every sender has leased again: at most a span and the slack from now.
    const { era: _old, ceiling: _c, resume: _r, ...rest } = s;
    const hold = secondOf(now + spanMs + SWITCH_SLACK_MS) + 1;
    // Cut mostly by timeouts (a receiver that hung, or went away): its capacity was never
    // measured, and once it answers again the rate climbs back by slow start to what it was,
    // not by 0.2/s a round trip (a limiter test: 2.9/s 30 s after a destination that hung at
    // 10/s answered again, most new events deferred meanwhile). Slow start still waits for
    // each doubling to be seen accepted, and a timeout is reported only when its attempt's
    // time is up: it cannot run ahead of them.
    if (heavy && (counts.timedOut ?? 0) * 2 > counts.throttled) {
      // A destination still timing out at the minimum keeps the ceiling its first cut set. One
      // cut while still in its first slow start (no 429 yet, so no capacity known: a new
      // destination hangs at its initial 10/s) gets none: it probes again as a new destination
      // does (measured: one that hung at 10/s for a minute, then took 37/s, crept from 10 to
      // 11.5/s in the 90 s after, by 2 % steps, capped by the ceiling of its initial rate).
      const probing = s.phase === 'slow-start' && s.ceiling === undefined;
      const ceiling = probing ? {} : { ceiling: clampRate(Math.max(s.ceiling ?? 0, s.rate), bounds) };
      return { ...rest, rate: Math.min(s.rate, rate), phase: 'slow-start', ...ceiling, resume: true, holdUntil: hold };
    }
    return { ...rest, rate: Math.min(s.rate, rate), phase: 'avoidance', holdUntil: hold };
  }
  s.era = era;
  // Sent entirely at the latest rate, and no change decided since: the round trip is complete.
  if (grids.slice(gridIndexAt(grids, second * 1000)).some((g) => g.rate !== s.rate)) return s;
  // Used: most of the rate was accepted, or most sends waited for their turn and were accepted
  // (senders slower than their turns — a busy process — still show the receiver took all it was given).
  const queued = (counts.limited ?? 0) >= counts.sent / 2 && counts.ok >= counts.sent / 2;
  const used = counts.ok >= USED * before || queued;
  if (!used) return s;
  const raised = s.phase === 'slow-start' ? Math.min(before * 2, s.ceiling ?? Infinity) : before + Math.max(MIN_INCREASE, before * INCREASE_FRACTION);
  // Never far above what was actually accepted: senders that could not keep up have not shown
  // the receiver takes the rate, and would send all of a rate raised blind once they can. In
  // slow start a second whose sends queued for their turn doubles whatever went out: the rate
  // held them back, and turns dealt to instances with nothing to send kept what went out under
  // it (three instances on a lane of two pushes sent 0.4 of the rate, so twice what went out was
  // no rise: 10/s took 100 s to reach 70/s). A first 429 still ends slow start at capacity.
  const proven = s.phase === 'slow-start' ? (queued ? Infinity : counts.ok * 2) : counts.ok * (1 + AHEAD_OF_SENT);
  // Answering again after a cut by timeouts, a destination is granted at once what a new one
  // starts at, without proof, as a new one is: doubling from the minimum took about 8 s a
  // step with three instances (a new grid per step), 30 s to get from 1 back to 8/s.
  const restart = s.resume ? clampRate(Math.min(INITIAL_RATE, s.ceiling ?? Infinity), bounds) : 0;
  const rate = clampRate(Math.max(s.rate, restart, Math.min(raised, Math.max(before, proven))), bounds);
  if (s.ceiling !== undefined && rate >= s.ceiling) {
    const { era: _old, ceiling: _c, resume: _r, ...rest } = s;
    return { ...rest, rate, phase: 'avoidance' };
  }
  if (rate === s.rate) return s;
  const { era: _old, resume: _r, ...rest } = s;
  return { ...rest, rate };
}

/**
 * The last second every sender has reported in full (epoch s): the earliest `reportedThrough`
 * among the senders still sharing the destination. A sender that stopped leasing holds the
 * judgement back until it is forgotten, and its counts with it.
 */
export function settledThrough(holders: Record<string, HolderEntry>): number {
  const through = Math.min(...Object.values(holders).map((h) => h.reportedThrough ?? h.at - REPORT_SLACK_MS));
  return secondOf(through) - 1;
}

/** Judges, in order, every second not judged yet up to `through` (epoch s). */
export function judgeSettled(state: RateState, grids: readonly Grid[], seconds: CountsBySecond, bounds: RateBounds, now: number, spanMs: number, through: number): RateState {
  const settledThrough = Math.min(through, secondOf(now) - 1);
  let s = { ...state, rate: clampRate(state.rate, bounds) };
  const from = Math.max(s.judgedThrough + 1, settledThrough - MAX_JUDGED_PER_LEASE + 1);
  for (let second = from; second <= settledThrough; second++) s = judgeSecond(s, grids, second, seconds[second], bounds, now, spanMs);
  s = { ...s, judgedThrough: Math.max(s.judgedThrough, settledThrough) };
  if (s.holdUntil !== undefined && s.holdUntil <= s.judgedThrough) delete s.holdUntil;
  if (s.pausedUntil !== undefined && s.pausedUntil <= now) delete s.pausedUntil;
  return s;
}
