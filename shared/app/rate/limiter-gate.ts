/**
 * What a caller may do now: send, or defer the delivery (PENDING) to about `until`; or, its
 * work before the turn found nothing to send, leave without one.
 */
export type Gate = { kind: 'send' } | { kind: 'defer'; until: number } | { kind: 'skip' };

/**
 * What a caller that is not deferred does before its turn (a read that may show the delivery
 * is done already), in its place in the queue: resolves whether it still needs the turn.
 * Done before the turn, not after it: a send that waits on a read after its turn goes out
 * whenever the read comes back, and reads that come back together (a stall in the store or
 * the process) put a second's sends past the rate (107 in one second at 100/s, measured).
 */
export type BeforeTurn = () => Promise<boolean>;

export interface AcquireOptions {
  beforeTurn?: BeforeTurn;
  /**
   * The delivery comes back from a deferral for a turn (`rateDeferred`). Deferred again, it
   * goes near its turn, not behind the destination's deferrals: several senders that defer
   * between two leases each place theirs from the cursor they last leased, so some come back
   * faster than the turns, and the cursor has already moved past all of them. Put behind it
   * again, they would leave the slots kept for them empty (measured at C = 10: two workers
   * deferred 1,445 deliveries in the first seconds, due back within 72 s; the cursor moved
   * 145 s, the 345 deferred again were due after 170 s, and nothing was due between 100 and
   * 170 s; in another run the destination sat idle from the 65th second).
   */
  returning?: boolean;
}

export class LimiterClosedError extends Error {
  override name = 'LimiterClosedError';
  constructor() {
    super('Herald is shutting down: the delivery was not attempted (Pub/Sub brings it again)');
  }
}
