import { Firestore } from '@google-cloud/firestore';
import { QuotaBucket, takeFromBucket } from '../domain/quota';
import { QuotaStore } from '../ports';
import { COLLECTIONS, OperationCounter } from './firestore-stores';

/** `publish-quotas/{account}`: one small document per account (a token bucket), rewritten once per slice taken (domain/quota.ts). */
export class FirestoreQuotaStore implements QuotaStore {
  constructor(
    private readonly db: Firestore,
    private readonly ops = new OperationCounter(),
  ) {}

  async take(account: string, want: number, limit: number, nowMs: number): Promise<number> {
    const ref = this.db.collection(COLLECTIONS.publishQuotas).doc(account);
    const granted = await this.db.runTransaction(async (tx) => {
      const snap = await tx.get(ref);
      const taken = takeFromBucket(snap.exists ? (snap.data() as QuotaBucket) : undefined, want, limit, nowMs);
      if (taken.granted > 0) tx.set(ref, taken.doc);
      return taken.granted;
    });
    this.ops.reads++;
    if (granted > 0) this.ops.writes++;
    return granted;
  }
}
