import { lease as leaseShare, Lease, LeaseRequest } from '../../domain/rate/rate-control';
import { RATE_LIMITS, RateDoc, readRateDoc } from '../../domain/rate/rate-doc';
import { RateLeaseStore } from '../../ports/rate';
import { FirestoreStore } from './stores';
import { COLLECTIONS } from '../../firestore-schema';
import { transactOne } from './write';

/** Rate controllers in Firestore: one document per destination; a lease is one transaction (a read and a write). */
export class FirestoreRateLeaseStore extends FirestoreStore implements RateLeaseStore {
  private doc(destinationId: string) {
    return this.db.collection(COLLECTIONS.rateControl).doc(destinationId);
  }

  async lease(destinationId: string, request: LeaseRequest): Promise<Lease> {
    const { result: granted, reads } = await transactOne(this.db, this.doc(destinationId), (data) => {
      const { doc, lease } = leaseShare(data === undefined ? undefined : readRateDoc(data, request.bounds, request.now), request);
      return { result: lease, write: { set: doc } };
    });
    this.ops.reads += reads;
    this.ops.writes++;
    return granted;
  }

  async peek(destinationId: string): Promise<RateDoc | undefined> {
    const snap = await this.doc(destinationId).get();
    this.ops.reads++;
    return snap.exists ? readRateDoc(snap.data(), RATE_LIMITS, Date.now()) : undefined;
  }
}
