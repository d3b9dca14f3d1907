/**
 * Adaptive delivery rate per destination (seed 000: between 1 and 100 events/s; 200s raise
 * it gradually, 429s lower it), as pure functions of the controller's document, the
 * feedback a sender brings and the time.
 *
 * Every process that delivers to a destination shares one controller document. A process
 * leases from it about once per *span* (1.2 s per process sharing the destination, so the
 * document takes a little under a write a second however many deliver): the lease brings the
 * process's feedback and takes back the *grids* it is to send on.
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
/** A process leases about this often per process sharing the destination... */
export const SPAN_PER_HOLDER_MS = 1200;
/** ...but at least this often: beyond 10 processes the document takes more than a write a second, and the rate stays fresh. */
export const MAX_SPAN_MS = 12_000;
/** A new grid starts this long after the last process on the current one is due to lease again (a lease's own latency). */
export const SWITCH_SLACK_MS = 1500;
/** How late a sender may still take a missed turn. */
export const CATCH_UP_MS = 30;
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

/**
 * Send times from `from` (epoch ms) until the next grid: points 1000/rate ms apart, shared by
 * `holders` in cycles of Σ weights points, of which the i-th holder takes `weights[i]` in a
 * row (its demand's share): however they are split, the union is the grid.
 */
export interface Grid {
  from: number;
  rate: number;
  /** The points' rate when it is below `rate`: at the upper bound, the headroom that keeps jitter from taking a second past it. */
  pace?: number;
  /** The processes sending on it, sorted by name. */
  holders: string[];
  weights: number[];
}

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
  return Math.min(MAX_SPAN_MS, Math.max(1, holders) * SPAN_PER_HOLDER_MS);
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

/** The index of the grid in force at `at` (epoch ms): the last to start by then, or the first if none had. */
export function gridIndexAt(grids: readonly Grid[], at: number): number {
  return grids.reduce((found, g, j) => (g.from <= at ? j : found), 0);
}

/** The grid in force at `at` (epoch ms). */
export function gridAt(grids: readonly Grid[], at: number): Grid | undefined {
  return grids[gridIndexAt(grids, at)];
}

/** A holder's place on a grid: its run of `mine` points starting `first` into each cycle of `cycle` points. */
function placeOn(grid: Grid, holder: string): { cycle: number; first: number; mine: number } | undefined {
  const i = grid.holders.indexOf(holder);
  if (i < 0) return undefined;
  const sum = (w: readonly number[]) => w.reduce((a, b) => a + b, 0);
  return { cycle: sum(grid.weights), first: sum(grid.weights.slice(0, i)), mine: grid.weights[i]! };
}

/** How far apart a holder's turns on `grid` are on average, in ms: its pace (undefined: it has none there). */
export function turnGapMs(grid: Grid, holder: string): number | undefined {
  const place = placeOn(grid, holder);
  return place && (1000 * place.cycle) / ((grid.pace ?? grid.rate) * place.mine);
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

/**
 * Where the destination's deferrals stand after a sender reports its own: each takes a turn
 * of the rate after those before it. Senders that deferred from the same cursor between
 * leases overlap (their deliveries come back faster than the rate for a while, and wait
 * their turn, at most the caller's limit, or are deferred again); the cursor still moves by
 * all of them, so the destination's deferrals come back at the rate on average. Before, each
 * sender spread its own at its own share of the turns, or a span apart when it had none yet:
 * 586 deliveries deferred by one process at C = 10 were due back over 20 minutes, and the
 * destination sat idle with work waiting (steady state 0.29 of its capacity).
 */
export function nextDeferCursor(cursor: number | undefined, deferred: DeferredReport | undefined, rate: number, now: number): number {
  const gap = deferGapMs(rate);
  if (!deferred || deferred.count === 0) return Math.max(now, cursor ?? 0);
  return Math.max(now, (cursor ?? 0) + deferred.count * gap, deferred.until + gap);
}

/** Deliveries a sender deferred: how many, and the latest time it told one to come back (epoch ms). */
export interface DeferredReport {
  count: number;
  until: number;
}

/** Deferred deliveries come back a turn of the destination's rate apart. */
const deferGapMs = (rate: number) => 1000 / rate;

/**
 * Where a delivery deferred now is told to come back: at its earliest turn (`earliest`, epoch
 * ms) or after the destination's deferrals so far (`cursor`), whichever is later; the
 * cursor then moves a turn of the rate past it. The rate, not this sender's share of it:
 * whichever sender takes the delivery when it comes back sends it.
 */
export function deferTo(cursor: number, earliest: number, rate: number): { until: number; cursor: number } {
  const until = Math.max(earliest, cursor);
  return { until, cursor: until + deferGapMs(rate) };
}

/** Two reports of deferrals as one (a sender's, kept while a lease failed, and its newer ones). */
export function addDeferred(a: DeferredReport, b: DeferredReport): DeferredReport {
  return { count: a.count + b.count, until: Math.max(a.until, b.until) };
}

/**
 * When `holder`'s next turn is (epoch ms) on the grids it was given: the first of its points
 * after its last turn, and not before `now` by more than a gap or CATCH_UP_MS. A sender
 * running late (a timer fires late in a busy process) takes the turns it missed within
 * that, never a longer backlog: at 100/s, 50 ms of turns is 5 sends more in some second at
 * most, where dropping them would lose a tenth of the rate to 10 ms of lateness.
 * Undefined: it has no turn on these grids (it joined and its first grid is not known yet).
 */
export function nextTurn(grids: readonly Grid[], holder: string, lastTurnAt: number | undefined, now: number): number | undefined {
  for (const [j, g] of grids.entries()) {
    const end = grids[j + 1]?.from ?? Infinity;
    const place = placeOn(g, holder);
    if (!place) continue;
    const { cycle, first, mine } = place;
    const gap = 1000 / (g.pace ?? g.rate);
    const start = Math.max(g.from, now - Math.max(gap, CATCH_UP_MS), lastTurnAt === undefined ? -Infinity : lastTurnAt + 0.001);
    if (start >= end) continue;
    // Points from one gap after the start: the previous grid's last point was before it.
    let k = Math.max(1, Math.ceil((start - g.from) / gap - 1e-9));
    const r = k % cycle;
    if (r < first) k += first - r;
    else if (r >= first + mine) k += cycle - r + first;
    const at = g.from + k * gap;
    if (at < end) return at;
  }
  return undefined;
}

export interface TurnWaitInput {
  /** The grids the sender was leased, and its place on them. */
  grids: readonly Grid[];
  holder: string;
  lastTurnAt?: number;
  pausedUntil?: number;
  /** Callers already waiting for this sender's turns. */
  queue: number;
  /** The other senders' backlogs, as the sender's last lease said. */
  othersBacklog: number;
  spanMs: number;
  /** The rate to count with when the grids have none (epoch ms `now` is before any). */
  rate: number;
  now: number;
}

/**
 * How long a delivery that joins a sender's queue now would wait for its turn (ms), and the
 * sender's pace (ms between its turns). At the sender's share of the grid, or — when that is
 * less — once the split follows the backlogs (the next grid, a span and the slack away at
 * most): then its queue and the others' backlogs share the whole rate of the latest grid.
 * The share alone lags: a burst landing on a sender with few points (brought-forward
 * deliveries, or deferrals coming back, spread over every sender by Pub/Sub) was deferred
 * again while other senders' turns went unused (0.79 of the target at C = 37 in one run,
 * 5,226 deferrals for 2,155 deliveries). The others' backlogs are as old as their leases:
 * each is taken to be at least this sender's queue (Pub/Sub spreads a lane's messages over
 * every sender), so a burst here is never thought to have the rate to itself.
 */
export function waitForTurn(input: TurnWaitInput): { waitMs: number; gapMs: number } {
  const { grids, holder, queue, spanMs, now } = input;
  const turn = nextTurn(grids, holder, input.lastTurnAt, now);
  // The sender's pace: its points per cycle of the grid (a grid it is not on yet: a span away at most).
  const grid = turn === undefined ? undefined : gridAt(grids, turn);
  const gapMs = (grid && turnGapMs(grid, holder)) ?? spanMs;
  const first = Math.max(0, Math.max(turn ?? now + spanMs, input.pausedUntil ?? 0) - now);
  const atShare = first + queue * gapMs;
  const latest = grids.at(-1);
  const pace = latest ? (latest.pace ?? latest.rate) : input.rate;
  const others = latest ? latest.holders.filter((h) => h !== holder).length : 0;
  const onceSplit = first + spanMs + SWITCH_SLACK_MS + ((queue + Math.max(input.othersBacklog, queue * others)) * 1000) / pace;
  return { waitMs: Math.min(atShare, onceSplit), gapMs };
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
