import { QuotaBucket, takeFromBucket } from '../../domain/intake/quota';
import { QuotaStore } from '../../ports/accounts';
import { FirestoreStore } from './stores';
import { COLLECTIONS } from '../../firestore-schema';
import { transactOne } from './write';

/** `publish-quotas/{account}`: one small document per account (a token bucket), rewritten once per slice taken (domain/intake/quota.ts). */
export class FirestoreQuotaStore extends FirestoreStore implements QuotaStore {
  async take(account: string, want: number, limit: number, nowMs: number): Promise<number> {
    const ref = this.db.collection(COLLECTIONS.publishQuotas).doc(account);
    const { result: granted } = await transactOne(this.db, ref, (data) => {
      const taken = takeFromBucket(data as QuotaBucket | undefined, want, limit, nowMs);
      return { result: taken.granted, write: taken.granted > 0 ? { set: taken.doc } : undefined };
    });
    this.ops.reads++;
    if (granted > 0) this.ops.writes++;
    return granted;
  }
}
