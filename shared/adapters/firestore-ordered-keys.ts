import { Firestore, Timestamp } from '@google-cloud/firestore';
import { orderedKeyId, OrderedKeyState } from '../domain/ordering';
import { DAY_MS, DEFAULT_RETENTION_DAYS } from '../domain/delivery-retention';
import { OrderedKeyRecords, OrderedKeyStore, OrderedKeyWrite, RecordExistsError } from '../ports';
import { GRPC } from '../domain/grpc-status';
import { COLLECTIONS, FIRESTORE_QUERIES, FIRESTORE_TTL_FIELDS } from '../firestore-schema';
import { FirestoreDeliveryStore } from './firestore-deliveries';
import { OperationCounter } from './firestore-stores';

/**
 * `blockedIn`: the destination, only while the key is held (the console's list of blocked keys);
 * `workSince`: the last change, only while places wait and the key is not held (stalled keys).
 */
type StoredKey = OrderedKeyState & { blockedIn?: string; workSince?: string; expireAt?: Date };

/**
 * Ordered keys in Firestore: `ordered-keys/{destination}~{hash of key}`, read and written in one
 * transaction with the delivery records the key orders. An idle key (every place settled, not
 * held) expires with the deliveries' retention; a key with work never does.
 */
export class FirestoreOrderedKeys implements OrderedKeyStore {
  constructor(
    private readonly db: Firestore,
    private readonly deliveries: FirestoreDeliveryStore,
    private readonly ops = new OperationCounter(),
    private readonly retentionMs = DEFAULT_RETENTION_DAYS * DAY_MS,
  ) {}

  private get col() {
    return this.db.collection(COLLECTIONS.orderedKeys);
  }

  async transact<T>(destinationId: string, key: string, plan: (state: OrderedKeyState | undefined, records: OrderedKeyRecords) => Promise<OrderedKeyWrite<T>>): Promise<T> {
    try {
      return await this.run(destinationId, key, plan);
    } catch (e) {
      if ((e as { code?: unknown }).code === GRPC.ALREADY_EXISTS) throw new RecordExistsError();
      throw e;
    }
  }

  private run<T>(destinationId: string, key: string, plan: (state: OrderedKeyState | undefined, records: OrderedKeyRecords) => Promise<OrderedKeyWrite<T>>): Promise<T> {
    const id = orderedKeyId(destinationId, key);
    const ref = this.col.doc(id);
    return this.db.runTransaction(async (tx) => {
      const snap = await tx.get(ref);
      this.ops.reads++;
      const io = this.deliveries.inTransaction(tx);
      const records: OrderedKeyRecords = { byIds: (ids) => io.get(ids) };
      const write = await plan(snap.exists ? fromStored(snap.data() as StoredKey) : undefined, records);
      for (const record of write.records ?? []) io.set(record);
      for (const record of write.create ?? []) io.create(record);
      if (write.state) {
        tx.set(ref, this.stored(write.state));
        this.ops.writes++;
      }
      return write.result;
    });
  }

  async get(destinationId: string, key: string): Promise<OrderedKeyState | undefined> {
    const snap = await this.col.doc(orderedKeyId(destinationId, key)).get();
    this.ops.reads++;
    return snap.exists ? fromStored(snap.data() as StoredKey) : undefined;
  }

  async blocked(destinationId: string, limit: number): Promise<OrderedKeyState[]> {
    const snap = await this.col.where(FIRESTORE_QUERIES.blockedKeys.equality[0], '==', destinationId).limit(limit).get();
    this.ops.reads += Math.max(1, snap.size);
    return snap.docs.map((d) => fromStored(d.data() as StoredKey)).sort((a, b) => (a.blocked?.at ?? '').localeCompare(b.blocked?.at ?? ''));
  }

  async again(destinationId: string, key: string): Promise<string[]> {
    return this.deliveries.whereOrder('orderAgain', orderedKeyId(destinationId, key));
  }

  async stalled(before: Date, limit: number): Promise<OrderedKeyState[]> {
    const field = FIRESTORE_QUERIES.stalledKeys.orderBy;
    const snap = await this.col.where(field, '<', before.toISOString()).orderBy(field).limit(limit).get();
    this.ops.reads += Math.max(1, snap.size);
    return snap.docs.map((d) => fromStored(d.data() as StoredKey));
  }

  private stored(state: OrderedKeyState): StoredKey {
    const idle = state.done === state.last && !state.blocked;
    return {
      ...state,
      ...(state.blocked ? { blockedIn: state.destinationId } : {}),
      ...(!idle && !state.blocked ? { workSince: state.updatedAt } : {}),
      ...(idle ? { [FIRESTORE_TTL_FIELDS.orderedKeys.field]: new Date(Date.parse(state.updatedAt) + this.retentionMs) } : {}),
    };
  }
}

function fromStored(doc: StoredKey): OrderedKeyState {
  const { blockedIn: _in, workSince: _since, expireAt: _expire, ...state } = doc as StoredKey & { expireAt?: Timestamp };
  return state;
}
