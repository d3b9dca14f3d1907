import { LONGEST_HEALTH_WINDOW_MS } from './health-rates';

/** Ages kept per slot of this many ms: the oldest age seen in each. */
const SLOT_MS = 5_000;

/**
 * How far behind the lanes are as this process sees them: each first attempt's age when it was
 * taken from its lane (pushed now, published on the lane then). Local mode has no Cloud
 * Monitoring to ask Pub/Sub's oldest unacked message age of, so the Overview panel shows the
 * oldest of these in its window instead, labelled as such. Bounded: one number per 5 s slot,
 * for the longest window.
 */
export class LaneAges {
  private readonly slots = new Map<number, number>();

  /** A first attempt published on its lane at `publishedAt`, taken at `now` (epoch ms). */
  seen(publishedAt: number, now: number): void {
    const slot = Math.floor(now / SLOT_MS) * SLOT_MS;
    const age = Math.max(0, now - publishedAt);
    if (age > (this.slots.get(slot) ?? -1)) this.slots.set(slot, age);
    if (this.slots.size > LONGEST_HEALTH_WINDOW_MS / SLOT_MS + 1) {
      for (const at of this.slots.keys()) if (at < now - LONGEST_HEALTH_WINDOW_MS - SLOT_MS) this.slots.delete(at);
    }
  }

  /** The oldest age (ms) of a first attempt taken since `from` (epoch ms), or undefined if none was. */
  oldestSince(from: number): number | undefined {
    let oldest: number | undefined;
    for (const [at, age] of this.slots) if (at + SLOT_MS > from && (oldest === undefined || age > oldest)) oldest = age;
    return oldest;
  }
}
