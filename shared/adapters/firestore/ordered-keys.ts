import { Firestore, Timestamp } from '@google-cloud/firestore';
import { orderedKeyId, OrderedKeyState } from '../../domain/modes/ordering';
import { DAY_MS, DEFAULT_RETENTION_DAYS } from '../../domain/delivery/delivery-retention';
import { OrderedKeyRecords, OrderedKeyStore, OrderedKeyWrite } from '../../ports/ordered-keys';
import { RecordExistsError } from '../../ports/deliveries';
import { NewDocumentExists, readManyDecideWrite, RetryOptions } from './write';
import { COLLECTIONS, FIRESTORE_QUERIES, FIRESTORE_TTL_FIELDS } from '../../firestore-schema';
import { FirestoreDeliveryStore } from './deliveries/delivery-store';
import { OperationCounter } from './stores';

/**
 * `blockedIn`: the destination, only while the key is held (the console's list of blocked keys);
 * `workSince`: the last change, only while places wait and the key is not held (stalled keys).
 */
type StoredKey = OrderedKeyState & { blockedIn?: string; workSince?: string; expireAt?: Date };

/** A key contended by several instances: lost races retried for up to 20 s (intake answers 503 after that; deliver, a redelivery). */
const KEY_RETRY: RetryOptions = { budgetMs: 20_000, firstPauseMs: 10, maxPauseMs: 200 };

/**
 * Ordered keys in Firestore: `ordered-keys/{destination}~{hash of key}`, read and written
 * atomically with the delivery records the key orders. An idle key (every place settled, not
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

  /**
   * Optimistic, not a Firestore transaction (adapters/firestore/write.ts readManyDecideWrite): the key's
   * document and the records the plan reads are written only if still as read. Instances
   * settling and admitting one key at once then cost a lost race a read, where transactions
   * locked each other out (on the emulator: ABORTED "Transaction lock timeout" after seconds).
   */
  async transact<T>(destinationId: string, key: string, plan: (state: OrderedKeyState | undefined, records: OrderedKeyRecords) => Promise<OrderedKeyWrite<T>>): Promise<T> {
    const ref = this.col.doc(orderedKeyId(destinationId, key));
    try {
      const done = await readManyDecideWrite(
        this.db,
        ref.path,
        async (io) => {
          const [stored] = await io.getAll([ref]);
          const records = this.deliveries.optimistic(io);
          const write = await plan(stored ? fromStored(stored as StoredKey) : undefined, { byIds: (ids) => records.get(ids) });
          for (const record of [...(write.records ?? []), ...(write.create ?? [])]) records.put(record);
          if (write.state) io.put(ref, this.stored(write.state));
          return write.result;
        },
        KEY_RETRY,
      );
      this.ops.reads += done.reads;
      this.ops.writes += done.writes;
      return done.result;
    } catch (e) {
      if (e instanceof NewDocumentExists) throw new RecordExistsError();
      throw e;
    }
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
    return this.deliveries.waitingAgain(orderedKeyId(destinationId, key));
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
