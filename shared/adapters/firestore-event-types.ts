import { createHash } from 'node:crypto';
import { Firestore } from '@google-cloud/firestore';
import { EventTypeSample, EventTypeStore } from '../ports';
import { COLLECTIONS, FIRESTORE_QUERIES, OperationCounter } from './firestore-stores';

/**
 * `event-types/{account}~{hash of the type}`: one small document per (account, event type), its
 * latest sample kept as JSON text (Firestore refuses some JSON, arrays in arrays for one).
 */
export class FirestoreEventTypeStore implements EventTypeStore {
  constructor(
    private readonly db: Firestore,
    private readonly ops = new OperationCounter(),
  ) {}

  async put(sample: EventTypeSample): Promise<void> {
    // A type may hold `/` and be long: its hash names the document.
    const typeHash = createHash('sha256').update(sample.type).digest('hex').slice(0, 32);
    await this.db.collection(COLLECTIONS.eventTypes).doc(`${sample.account}~${typeHash}`).set({ ...sample, sample: JSON.stringify(sample.sample) });
    this.ops.writes++;
  }

  async list(account: string): Promise<EventTypeSample[]> {
    const q = FIRESTORE_QUERIES.accountEventTypes;
    const snap = await this.db.collection(q.collection).where(q.equality[0], '==', account).orderBy(q.orderBy).get();
    this.ops.reads += Math.max(1, snap.size);
    return snap.docs.map((d) => {
      const doc = d.data() as Omit<EventTypeSample, 'sample'> & { sample: string };
      return { account: doc.account, type: doc.type, lastSeenAt: doc.lastSeenAt, sample: JSON.parse(doc.sample) as Record<string, unknown> };
    });
  }
}
