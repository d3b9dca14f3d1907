import { Grid, gridIndexAt, SWITCH_SLACK_MS } from './rate-turns';
import { HolderEntry, RateBounds } from './rate-doc';

/**
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
 */

/**
 * A process leases about this often per process sharing the destination, with no cap (a 12 s
 * cap let 11 processes and more write the document more than once a second). The price of many
 * is a slower rate: a second is judged, and a new grid starts, once every process has leased
 * again, each about a span (60 s with 50 processes).
 */
export const SPAN_PER_HOLDER_MS = 1200;

export function spanFor(holders: number): number {
  return Math.max(1, holders) * SPAN_PER_HOLDER_MS;
}

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

/**
 * The grids after this lease: a new one when the rate or the senders changed, starting once
 * every other sender on the current grids is due to have leased again (a sender that leases
 * now learns it now); then only those still needed — to send on, or to judge by.
 */
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
