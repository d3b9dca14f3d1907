import { DocumentData } from '@google-cloud/firestore';
import { lease as leaseShare, Lease, LeaseRequest } from '../../domain/rate/rate-control';
import { RATE_LIMITS, RateDoc, readRateDoc } from '../../domain/rate/rate-doc';
import { RateLeaseStore } from '../../ports/rate';
import { FirestoreStore } from './stores';
import { COLLECTIONS } from '../../firestore-schema';
import { AS_STORED, AS_TRANSACTION_RETRY, readDecideWrite } from './write';

/**
 * Rate controllers in Firestore: one document per destination; a lease is a read and a write
 * under the read's `lastUpdateTime` (readDecideWrite), read again on a lost race. Not a
 * transaction: a Firestore transaction locks the document it read, and a process killed
 * inside one left the lock to expire — measured in the chaos run, a destination's every
 * instance failed its leases for about a minute ("Transaction lock timeout") and sent nothing.
 */
export class FirestoreRateLeaseStore extends FirestoreStore implements RateLeaseStore {
  private doc(destinationId: string) {
    return this.db.collection(COLLECTIONS.rateControl).doc(destinationId);
  }

  async lease(destinationId: string, request: LeaseRequest): Promise<Lease> {
    // The lease of the try that was written: a lost race decides again on what it reads then.
    let granted: Lease | undefined;
    const { reads, writes } = await readDecideWrite(
      this.db,
      this.doc(destinationId),
      (data) => {
        const { doc, lease } = leaseShare(data === undefined ? undefined : readRateDoc(data, request.bounds, request.now), request);
        granted = lease;
        return doc as DocumentData;
      },
      AS_STORED,
      AS_TRANSACTION_RETRY,
    );
    this.ops.reads += reads;
    this.ops.writes += writes;
    return granted!;
  }

  async peek(destinationId: string): Promise<RateDoc | undefined> {
    const snap = await this.doc(destinationId).get();
    this.ops.reads++;
    return snap.exists ? readRateDoc(snap.data(), RATE_LIMITS, Date.now()) : undefined;
  }
}
