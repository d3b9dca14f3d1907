import { DocumentData } from '@google-cloud/firestore';
import { QuotaBucket, takeFromBucket } from '../../domain/intake/quota';
import { QuotaStore } from '../../ports/accounts';
import { FirestoreStore } from './stores';
import { COLLECTIONS } from '../../firestore-schema';
import { AS_STORED, AS_TRANSACTION_RETRY, readDecideWrite } from './write';

/**
 * `publish-quotas/{account}`: one small document per account (a token bucket), rewritten once
 * per slice taken (domain/intake/quota.ts). A slice is a read and a write under the read's update
 * time, not a transaction: an ingest instance killed inside one would leave the account's bucket
 * locked, and every instance's ingest for the account waiting, until the transaction expired.
 */
export class FirestoreQuotaStore extends FirestoreStore implements QuotaStore {
  async take(account: string, want: number, limit: number, nowMs: number): Promise<number> {
    const ref = this.db.collection(COLLECTIONS.publishQuotas).doc(account);
    // What the try that was written (or, granting nothing, the last) took.
    let granted = 0;
    const { reads, writes } = await readDecideWrite<DocumentData>(
      this.db,
      ref,
      (data) => {
        const taken = takeFromBucket(data as QuotaBucket | undefined, want, limit, nowMs);
        granted = taken.granted;
        return taken.granted > 0 ? (taken.doc as DocumentData) : undefined;
      },
      AS_STORED,
      AS_TRANSACTION_RETRY,
    );
    this.ops.reads += reads;
    this.ops.writes += writes;
    return granted;
  }
}
