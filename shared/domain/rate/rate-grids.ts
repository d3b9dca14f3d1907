import { Grid, gridIndexAt, SWITCH_SLACK_MS } from './rate-turns';
import { HolderEntry, RateBounds } from './rate-doc';

/**
 * A grid is the rate as send times: after its start, points 1/rate apart, dealt out to the
 * processes on it in turn, one point each (a, b, c, a, b, c…). Together they never send more
 * than the grid holds — at most the rate in any window, not just on average: independent
 * pacers at rate/N each can put N − 1 extra sends into a sliding second (30 % at 10/s with
 * three processes), which a receiver counting a sliding second answers with 429s.
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

/**
 * Each holder's points per cycle, in the order of their names: one each, whatever their
 * backlogs, so that each holder's turns come N points apart. A split by the backlogs each
 * holder reported at its last lease (before 2026-12-06) is a bet that the work stays where it
 * was: a new grid follows a lease only once every other holder has leased again (5 s and more
 * with three), and a lane pushes whole bundles, two at a time on the emulator, to whichever
 * instance. A bundle that landed on an instance with 1 point in 31 waited for those while the
 * instance with 29 had nothing left to send: in virtual time, 2,000 events in bundles of 30
 * took 155 s on three instances against 25 s on one (62 s dealt in turn); single retries with
 * a second's wait, 184 s against 20 s (29 s in turn). A holder with no work leaves the grid
 * once it stops leasing (its span and HOLDER_GRACE_MS), and deferred deliveries come back to
 * any instance, so an even deal loses little to idle holders.
 */
export function weightsFor(names: readonly string[]): number[] {
  return names.map(() => 1);
}

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
  const weights = weightsFor(names);
  const latest = grids[grids.length - 1];
  let next = [...grids];
  // A grid an older Herald split by the backlogs is dealt in turn from the next one on.
  if (!latest || latest.rate !== rate || latest.holders.join('\n') !== names.join('\n') || latest.weights.join() !== weights.join()) {
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
