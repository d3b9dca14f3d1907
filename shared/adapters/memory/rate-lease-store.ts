import { lease as leaseSlots, Lease, LeaseRequest, RateDoc } from '../../domain/rate-control';
import { RateLeaseStore } from '../../ports';

/** Rate controllers in memory, for unit tests; it records every lease (a write in Firestore). */
export class MemoryRateLeaseStore implements RateLeaseStore {
  private readonly docs = new Map<string, RateDoc>();
  readonly leases: { destinationId: string; at: number; slots: number }[] = [];

  async lease(destinationId: string, request: LeaseRequest): Promise<Lease> {
    const { doc, lease } = leaseSlots(this.docs.get(destinationId), request);
    this.docs.set(destinationId, structuredClone(doc));
    this.leases.push({ destinationId, at: request.now, slots: lease.slots.length });
    return lease;
  }

  async peek(destinationId: string): Promise<RateDoc | undefined> {
    const d = this.docs.get(destinationId);
    return d && structuredClone(d);
  }
}
