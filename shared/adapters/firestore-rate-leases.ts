import { Firestore } from '@google-cloud/firestore';
import { lease as leaseShare, Lease, LeaseRequest, RATE_LIMITS, RateDoc, readRateDoc } from '../domain/rate-control';
import { RateLeaseStore } from '../ports';
import { COLLECTIONS, OperationCounter } from './firestore-stores';

/** Rate controllers in Firestore: one document per destination; a lease is one transaction (a read and a write). */
export class FirestoreRateLeaseStore implements RateLeaseStore {
  constructor(
    private readonly db: Firestore,
    private readonly ops = new OperationCounter(),
  ) {}

  private doc(destinationId: string) {
    return this.db.collection(COLLECTIONS.rateControl).doc(destinationId);
  }

  async lease(destinationId: string, request: LeaseRequest): Promise<Lease> {
    const ref = this.doc(destinationId);
    let reads = 0;
    const granted = await this.db.runTransaction(async (tx) => {
      const snap = await tx.get(ref);
      reads++;
      const { doc, lease } = leaseShare(snap.exists ? readRateDoc(snap.data(), request.bounds, request.now) : undefined, request);
      tx.set(ref, doc);
      return lease;
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
