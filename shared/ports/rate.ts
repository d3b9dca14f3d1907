import { Lease, LeaseRequest } from '../domain/rate/rate-control';
import { RateDoc } from '../domain/rate/rate-doc';

/** Rate control's leases, and deferred deliveries brought forward. Only shared/adapters/ implements these with SDKs and sockets. */

/**
 * Brings up to `count` of a destination's rate-deferred deliveries forward onto its lane, as a
 * pump round would (app/retry/pump.ts deferredAdvancer); `drained`: fewer were left than asked for.
 * The delivery limiter calls it when rate control grants turns that no sender has work for.
 */
export interface DeferredAdvancer {
  bringForward(destinationId: string, count: number): Promise<{ drained: boolean }>;
}

/**
 * Each destination's rate controller, shared by every process that delivers to it: one
 * document per destination, leased from about once a second (domain/rate/rate-control.ts lease).
 */

export interface RateLeaseStore {
  /** Atomically applies the sender's feedback and grants it its share of the rate. */
  lease(destinationId: string, request: LeaseRequest): Promise<Lease>;
  /** The controller as it stands (the admin API shows its rate); undefined before any lease. */
  peek(destinationId: string): Promise<RateDoc | undefined>;
}
