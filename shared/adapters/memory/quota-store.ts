import { QuotaBucket, takeFromBucket } from '../../domain/intake/quota';
import { QuotaStore } from '../../ports/accounts';

/** The publish buckets in a Map: unit tests. */
export class MemoryQuotaStore implements QuotaStore {
  readonly buckets = new Map<string, QuotaBucket>();
  /** Takes made, to show how few there are. */
  takes = 0;

  async take(account: string, want: number, limit: number, nowMs: number): Promise<number> {
    this.takes++;
    const taken = takeFromBucket(this.buckets.get(account), want, limit, nowMs);
    this.buckets.set(account, taken.doc);
    return taken.granted;
  }
}
