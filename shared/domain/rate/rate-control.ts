import { advanceGrant } from './rate-advance';
import { DeferredReport, Grid, gridAt, gridIndexAt, nextDeferCursor, SWITCH_SLACK_MS } from './rate-turns';

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
 * A grid is the rate as send times: after its start, points 1/rate apart, dealt out to the
 * processes on it in proportion to their backlogs (a process with little work gets few
 * points, so its turns are not lost). Together they never send more than the grid holds — at most the rate in any window, not
 * just on average: independent pacers at rate/N each can put N − 1 extra sends into a
 * sliding second (30 % at 10/s with three processes), which a receiver counting a sliding
 * second answers with 429s.
 *
 * A change of rate or of the processes sharing it is a new grid, scheduled to start once
 * every process on the current one has leased again (its span, plus slack): all switch at
 * the same instant, so two grids never overlap.
 *
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
 * - Retry-After on a 429 pauses the destination until then (at most MAX_PAUSE_MS).
 */

export interface RateBounds {
  minPerSecond: number;
  maxPerSecond: number;
}

/** Seed 000's bounds; a destination may narrow them (`rate: {min, max}` in its spec). */
export const RATE_LIMITS: RateBounds = { minPerSecond: 1, maxPerSecond: 100 };
export const INITIAL_RATE = 10;
export const MAX_PAUSE_MS = 60_000;
/**
 * A process leases about this often per process sharing the destination, with no cap (a 12 s
 * cap let 11 processes and more write the document more than once a second). The price of many
 * is a slower rate: a second is judged, and a new grid starts, once every process has leased
 * again, each about a span (60 s with 50 processes).
 */
export const SPAN_PER_HOLDER_MS = 1200;
/** A sender that has not leased this long after it was due has stopped sending (its turns go to the others). */
export const HOLDER_GRACE_MS = 2000;
/** A sender that does not say what it has reported is taken to have reported all but this last stretch (its attempts' time). */
const REPORT_SLACK_MS = 500;
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
  /**
   * The other senders' backlogs at their last leases: with this sender's, the work ahead of a
   * new delivery once the split follows the backlogs (the next grid).
   */
  othersBacklog: number;
}

const secondOf = (ms: number) => Math.floor(ms / 1000);

export function clampRate(rate: number, bounds: RateBounds): number {
  return Math.min(bounds.maxPerSecond, Math.max(bounds.minPerSecond, rate));
}

export function initialRateState(bounds: RateBounds, now: number): RateState {
  return { rate: clampRate(INITIAL_RATE, bounds), phase: 'slow-start', judgedThrough: secondOf(now) - 1 };
}

export function spanFor(holders: number): number {
  return Math.max(1, holders) * SPAN_PER_HOLDER_MS;
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
  const used = counts.ok >= USED * before || ((counts.limited ?? 0) >= counts.sent / 2 && counts.ok >= counts.sent / 2);
  if (!used) return s;
  const raised = s.phase === 'slow-start' ? Math.min(before * 2, s.ceiling ?? Infinity) : before + Math.max(MIN_INCREASE, before * INCREASE_FRACTION);
  // Never far above what was actually accepted: senders that could not keep up have not shown
  // the receiver takes the rate, and would send all of a rate raised blind once they can.
  const proven = counts.ok * (s.phase === 'slow-start' ? 2 : 1 + AHEAD_OF_SENT);
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

/**
 * The grids after this lease: a new one when the rate or the senders changed, starting once
 * every other sender on the current grids is due to have leased again (a sender that leases
 * now learns it now); then only those still needed — to send on, or to judge by.
 */
/** Points per cycle per holder, on average: the grain of the split. */
const WEIGHT_GRAIN = 10;

/**
 * Each holder's points per cycle, in the order of their names: its share of the backlog (at
 * least one). Backlog, not throughput: a process sends as fast as its points let it, so
 * splitting by what each sent would keep the split as it is, however unfair.
 */
export function weightsFor(names: readonly string[], holders: Record<string, HolderEntry>): number[] {
  const demands = names.map((h) => Math.max(0.1, holders[h]?.backlog ?? 1));
  const total = demands.reduce((a, b) => a + b, 0);
  return demands.map((d) => Math.max(1, Math.round((WEIGHT_GRAIN * names.length * d) / total)));
}

/** Whether a split moved enough to be worth a new grid (backlogs move all the time). */
function splitMoved(before: readonly number[], after: readonly number[]): boolean {
  const total = (w: readonly number[]) => w.reduce((a, b) => a + b, 0);
  const [tb, ta] = [total(before), total(after)];
  return after.some((w, i) => Math.abs(w / ta - (before[i] ?? 0) / tb) > SPLIT_TOLERANCE);
}
const SPLIT_TOLERANCE = 0.15;

/**
 * The bound is a limit on every sliding second as the receiver sees it: sends bunched on
 * their way (a late timer, the network) would take a second at or near the bound past it,
 * so the points never run faster than the bound less this, whatever the rate (before, it
 * applied at the bound only: slow start doubling 49 to 98/s ran at 98). Measured at a 150/s
 * receiver, 3 %: peaks of 102–104 in a second (106 once); 5 %: 101, but 2 % less steady
 * state, which one instance starved of work for a few seconds then took below 0.9.
 */
export const BOUND_HEADROOM = 0.03;

export function paceFor(rate: number, bounds: RateBounds): number {
  return Math.min(rate, bounds.maxPerSecond * (1 - BOUND_HEADROOM));
}

export function scheduleGrids(grids: readonly Grid[], rate: number, pace: number, holders: Record<string, HolderEntry>, leasing: string, now: number, judgedThrough: number): Grid[] {
  const names = Object.keys(holders).sort();
  const weights = weightsFor(names, holders);
  const latest = grids[grids.length - 1];
  let next = [...grids];
  if (!latest || latest.rate !== rate || latest.holders.join('\n') !== names.join('\n') || splitMoved(latest.weights, weights)) {
    const others = names.filter((h) => h !== leasing).map((h) => holders[h]!.until + SWITCH_SLACK_MS);
    // Alone on the grids, the sender may replace a grid nobody else has learned; otherwise a
    // scheduled grid stands (another sender may know it) and the new one starts after it.
    const alone = grids.every((g) => g.holders.every((h) => h === leasing)) && others.length === 0;
    const from = alone ? Math.max(now, latest?.from ?? 0) : Math.max(now, latest ? latest.from + 1 : 0, ...others);
    next = [...next.filter((g) => g.from < from), { from, rate, ...(pace < rate ? { pace } : {}), holders: names, weights }];
  }
  // Keep the grid in force at the oldest second still to judge (and at now), and all after it.
  const oldest = Math.min((judgedThrough + 1) * 1000, now);
  return next.slice(gridIndexAt(next, oldest));
}

/**
 * When the leasing sender is to lease again: a span from now, and a spacing
 * (SPAN_PER_HOLDER_MS) after every other sender's next lease, so that the document takes its
 * leases one at a time, not two or three in one instant when spans happen to end together
 * (senders keep the phase they joined at: 2–5 leases in one second were measured at 0.85
 * a second on average). At most one spacing past the span.
 */
export function nextLeaseAt(holders: Record<string, HolderEntry>, leasing: string, spanMs: number, now: number): number {
  const others = Object.entries(holders).filter(([h]) => h !== leasing).map(([, e]) => e.until + SPAN_PER_HOLDER_MS);
  return Math.min(now + spanMs + SPAN_PER_HOLDER_MS, Math.max(now + spanMs, ...others));
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
  const othersBacklog = backlog - (holders[holder]!.backlog ?? 0);
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
      othersBacklog,
    },
  };
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
