import { Timestamp } from '@google-cloud/firestore';
import { COLLECTIONS } from '../../firestore-schema';
import { BatcherLeaseStore } from '../../ports/messaging';
import { FirestoreStore } from './stores';

/** The batcher's lease (app/lanes/batcher-wake.ts): `locks/batcher`, `{until}`. A read to look, a write to renew; nothing else touches it. */
export class FirestoreBatcherLease extends FirestoreStore implements BatcherLeaseStore {
  private get doc() {
    return this.db.collection(COLLECTIONS.locks).doc('batcher');
  }

  async aliveUntil(): Promise<Date | undefined> {
    const snap = await this.doc.get();
    this.ops.reads++;
    const until: unknown = snap.get('until');
    return until instanceof Timestamp ? until.toDate() : undefined;
  }

  async keepAlive(until: Date): Promise<void> {
    await this.doc.set({ until: Timestamp.fromDate(until) });
    this.ops.writes++;
  }
}
