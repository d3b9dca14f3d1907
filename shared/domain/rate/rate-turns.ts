/**
 * A sender's side of rate control (the controller: rate-control.ts): the grids it was leased
 * and its turns on them, how long a caller would wait for one, and where the deliveries it
 * defers are told to come back.
 */

/** A new grid starts this long after the last process on the current one is due to lease again (a lease's own latency). */
export const SWITCH_SLACK_MS = 1500;
/** How late a sender may still take a missed turn. */
export const CATCH_UP_MS = 30;

/**
 * Send times from `from` (epoch ms) until the next grid: points 1000/rate ms apart, shared by
 * `holders` in cycles of Σ weights points, of which the i-th holder takes `weights[i]` in a
 * row: however they are split, the union is the grid. Grids are dealt one point each in turn
 * (rate-grids.ts weightsFor); a document an older Herald wrote may hold grids split by backlog.
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
export const deferGapMs = (rate: number) => 1000 / rate;

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
  spanMs: number;
  /** The rate to count with when the grids have none (epoch ms `now` is before any). */
  rate: number;
  now: number;
}

/**
 * How long a delivery that joins a sender's queue now would wait for its turn (ms), and the
 * sender's pace (ms between its turns). At the sender's share of the grid, or — when that is
 * less — once the next grid deals it its turn among all of them (a span and the slack away at
 * most): a sender that joins has no turn yet, and a grid an older Herald split by backlog may
 * give it few. Before grids were dealt in turn, that second estimate assumed a split that
 * followed the backlogs, and counted the others' backlogs as ahead of it.
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
  const senders = (latest ? latest.holders.filter((h) => h !== holder).length : 0) + 1;
  const onceDealt = first + spanMs + SWITCH_SLACK_MS + (queue * senders * 1000) / pace;
  return { waitMs: Math.min(atShare, onceDealt), gapMs };
}
