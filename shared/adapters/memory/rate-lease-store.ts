import { lease as leaseShare, Lease, LeaseRequest } from '../../domain/rate/rate-control';
import { RateDoc } from '../../domain/rate/rate-doc';
import { RateLeaseStore } from '../../ports/rate';

/** Rate controllers in memory, for unit tests; it records every lease (a write in Firestore). */
export class MemoryRateLeaseStore implements RateLeaseStore {
  private readonly docs = new Map<string, RateDoc>();
  readonly leases: { destinationId: string; holder: string; at: number; rate: number; grids: Lease['grids'] }[] = [];

  async lease(destinationId: string, request: LeaseRequest): Promise<Lease> {
    const { doc, lease } = leaseShare(this.docs.get(destinationId), request);
    this.docs.set(destinationId, structuredClone(doc));
    this.leases.push({ destinationId, holder: request.holder, at: request.now, rate: lease.rate, grids: lease.grids });
    return lease;
  }

  async peek(destinationId: string): Promise<RateDoc | undefined> {
    const d = this.docs.get(destinationId);
    return d && structuredClone(d);
  }
}
