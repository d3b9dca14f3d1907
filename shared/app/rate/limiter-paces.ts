import { RateBounds } from '../../domain/rate/rate-doc';
import { NO_UNLEASED_SENDS } from '../../domain/rate/unleased-sends';
import { Clock, Logger } from '../../ports/clock';
import { DestinationPace, FORGET_IDLE_MS, forgettable, SWEEP_EVERY_MS } from './destination-pace';

/** A process leases a destination at most this often, however its share runs. */
export const MIN_LEASE_GAP_MS = 1000;

/**
 * The destinations the delivery limiter (DeliveryLimiter, delivery-limiter.ts) keeps state for:
 * made on first use, kept in order of last use, forgotten once idle.
 */
export class LimiterPaces {
  /** By last use, the least recent first (a use moves a destination to the end). */
  protected readonly paces = new Map<string, DestinationPace>();
  private nextSweepAt = 0;

  constructor(
    protected readonly clock: Clock,
    protected readonly log: Logger,
  ) {}

  /** How many destinations this process keeps state for (idle ones are forgotten: FORGET_IDLE_MS). */
  destinationsHeld(): number {
    return this.paces.size;
  }

  /** Whether this process keeps state for the destination. */
  holds(destinationId: string): boolean {
    return this.paces.has(destinationId);
  }

  /** The destination's rate as this process last leased it (undefined: never leased, its sends went unleased). */
  rateOf(destinationId: string): number | undefined {
    return this.paces.get(destinationId)?.rate;
  }

  protected now(): number {
    return this.clock.now().getTime();
  }

  protected pace(destinationId: string, bounds: RateBounds): DestinationPace {
    const now = this.now();
    if (now >= this.nextSweepAt) this.forgetIdle(now);
    let pace = this.paces.get(destinationId);
    if (!pace) {
      pace = { bounds, validUntil: 0, spanMs: MIN_LEASE_GAP_MS, queue: [], deferCursor: 0, againCursor: 0, deferredAgain: 0, deferred: { count: 0, until: 0 }, advanceOwed: 0, feedback: {}, inFlight: [], deferrals: [], unleased: NO_UNLEASED_SENDS, lastUsed: now };
    }
    this.touch(destinationId, pace);
    pace.bounds = bounds;
    return pace;
  }

  /** Marks the destination used now: to the end of the map, which stays in order of last use. */
  protected touch(destinationId: string, pace: DestinationPace): void {
    pace.lastUsed = this.now();
    this.paces.delete(destinationId);
    this.paces.set(destinationId, pace);
  }

  /**
   * Forgets the destinations idle past FORGET_IDLE_MS that hold nothing worth keeping, least
   * recently used first: it stops at the first used since, so a sweep reads the idle ones
   * only (and those kept for a pause or a cool-down, until it ends).
   */
  private forgetIdle(now: number): void {
    this.nextSweepAt = now + SWEEP_EVERY_MS;
    let forgotten = 0;
    for (const [destinationId, pace] of this.paces) {
      if (pace.lastUsed > now - FORGET_IDLE_MS) break;
      if (!forgettable(pace, now)) continue;
      this.paces.delete(destinationId);
      forgotten++;
    }
    if (forgotten > 0) this.log.debug('idle destinations forgotten', { forgotten, held: this.paces.size });
  }
}
