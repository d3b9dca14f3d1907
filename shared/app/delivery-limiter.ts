import { AttemptResult, isSuccess } from '../domain/delivery';
import { RateBounds, RateFeedback } from '../domain/rate-control';
import { parseRetryAfter } from '../domain/retry-decision';
import { Clock, Logger, RateLeaseStore } from '../ports';

interface Lane {
  /** Send slots this process holds, in time order (epoch ms). */
  slots: number[];
  /** The lease being taken, which every waiting caller shares. */
  leasing?: Promise<void>;
  /** When this process was asked for a slot in the last second: its demand. */
  asked: number[];
  /** What this process saw since its last lease. */
  feedback: RateFeedback;
  rate?: number;
  lastLeaseAt?: number;
}

/**
 * A process leases a destination's slots at most this often: callers that find the slots
 * used up meanwhile wait and share the next lease, which their asks have sized. Without it,
 * a crowd of callers beyond one lease's slots leases again and again in the same instant.
 */
export const MIN_LEASE_GAP_MS = 1000;

/**
 * Enforces each destination's adaptive rate across every process that delivers to it: this
 * process leases send slots from the destination's shared controller (one document; a lease
 * covers about a second of this process's demand per process sharing it, so the document
 * takes about one write a second) and hands them out one attempt at a time. The feedback of
 * the attempts (successes, 429s, Retry-After) travels with the next lease, so it costs no
 * write of its own.
 */
export class DeliveryLimiter {
  private readonly lanes = new Map<string, Lane>();

  constructor(
    private readonly store: RateLeaseStore,
    private readonly clock: Clock,
    private readonly log: Logger,
    /** This process, as the controller counts its senders. */
    private readonly holder: string,
    private readonly minLeaseGapMs = MIN_LEASE_GAP_MS,
  ) {}

  /**
   * The time (epoch ms) this process may start one attempt to the destination: now or later.
   * A slot already past is skipped unless it is the latest gone by (a late caller may use
   * the slot it was late for, never a backlog of them: that would be a burst).
   */
  async acquire(destinationId: string, bounds: RateBounds): Promise<number> {
    const lane = this.lane(destinationId);
    const now = this.clock.now().getTime();
    lane.asked = [...lane.asked.filter((t) => now - t < 1000), now];
    for (;;) {
      const t = this.clock.now().getTime();
      let i = 0;
      while (i + 1 < lane.slots.length && lane.slots[i + 1]! <= t) i++;
      if (i > 0) lane.slots.splice(0, i);
      const slot = lane.slots.shift();
      if (slot !== undefined) return slot;
      lane.leasing ??= this.refill(destinationId, lane, bounds).finally(() => (lane.leasing = undefined));
      await lane.leasing;
    }
  }

  /** What an attempt came to: the controller learns it with this process's next lease. */
  report(destinationId: string, result: AttemptResult): void {
    const f = this.lane(destinationId).feedback;
    if (isSuccess(result)) f.successes++;
    else if (result.kind === 'response' && result.status === 429) {
      f.throttled++;
      const after = result.retryAfter === undefined ? undefined : parseRetryAfter(result.retryAfter, this.clock.now());
      if (after !== undefined) f.retryAfterMs = Math.max(f.retryAfterMs ?? 0, after);
    }
  }

  /** The destination's rate as this process last leased it. */
  rateOf(destinationId: string): number | undefined {
    return this.lanes.get(destinationId)?.rate;
  }

  private lane(destinationId: string): Lane {
    let lane = this.lanes.get(destinationId);
    if (!lane) {
      lane = { slots: [], asked: [], feedback: { successes: 0, throttled: 0 } };
      this.lanes.set(destinationId, lane);
    }
    return lane;
  }

  private async refill(destinationId: string, lane: Lane, bounds: RateBounds): Promise<void> {
    const gap = lane.lastLeaseAt === undefined ? 0 : lane.lastLeaseAt + this.minLeaseGapMs - this.clock.now().getTime();
    if (gap > 0) await new Promise((resolve) => setTimeout(resolve, gap));
    lane.lastLeaseAt = this.clock.now().getTime();
    const feedback = lane.feedback;
    lane.feedback = { successes: 0, throttled: 0 };
    try {
      const granted = await this.store.lease(destinationId, { holder: this.holder, demandPerSecond: lane.asked.length, feedback, bounds, now: this.clock.now().getTime() });
      lane.slots.push(...granted.slots);
      if (lane.rate !== undefined && Math.abs(granted.rate - lane.rate) >= 1) this.log.debug('delivery rate changed', { destinationId, rate: granted.rate, from: lane.rate });
      lane.rate = granted.rate;
    } catch (e) {
      // Not lost: the next lease carries it.
      lane.feedback = { successes: lane.feedback.successes + feedback.successes, throttled: lane.feedback.throttled + feedback.throttled, ...(feedback.retryAfterMs !== undefined ? { retryAfterMs: feedback.retryAfterMs } : {}) };
      throw e;
    }
  }
}
