import { BatcherLeaseStore } from '../../ports/messaging';

/** The batcher's lease in memory (tests): what was kept alive until, and how many times it was read and written. */
export class MemoryBatcherLease implements BatcherLeaseStore {
  until?: Date;
  reads = 0;
  writes = 0;

  async aliveUntil(): Promise<Date | undefined> {
    this.reads++;
    return this.until;
  }

  async keepAlive(until: Date): Promise<void> {
    this.writes++;
    this.until = until;
  }
}
