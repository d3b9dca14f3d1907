import type { OrderedKeyState } from '../domain/modes/ordering';
import { DeliveryRecord } from '../domain/retry/delivery';

/** Ordered destinations' keys: which delivery each key waits on. Only shared/adapters/ implements these with SDKs and sockets. */

/**
 * Ordered delivery's keys (domain/modes/ordering.ts): each (destination, partition key)'s sequence,
 * read and written together with the delivery records it orders, atomically.
 */
export interface OrderedKeyStore {
  /**
   * Reads the key's state (undefined: never used), lets `plan` read records through `records`
   * and decide, and writes what it returns, atomically, only if nothing it read changed
   * meanwhile. `plan` may run more than once under contention: it must not act outside it.
   */
  transact<T>(destinationId: string, key: string, plan: (state: OrderedKeyState | undefined, records: OrderedKeyRecords) => Promise<OrderedKeyWrite<T>>): Promise<T>;
  get(destinationId: string, key: string): Promise<OrderedKeyState | undefined>;
  /** The destination's keys held by their head (blocked or suspended), oldest first. */
  blocked(destinationId: string, limit: number): Promise<OrderedKeyState[]>;
  /** Keys with places still to settle, not held, unchanged since `before` (app/ordering/ordered-delivery.ts repairStalledKeys). */
  stalled(before: Date, limit: number): Promise<OrderedKeyState[]>;
  /** Ids of the key's records waiting for a place again (`order.again`), outside any transaction. */
  again(destinationId: string, key: string): Promise<string[]>;
}

/**
 * Records as an ordered key's transaction reads them, by id only (what was read is what the
 * commit checks; a query in a Firestore transaction locks a range of the collection): their own documents (an ordered delivery is never grouped).
 */
export interface OrderedKeyRecords {
  byIds(ids: readonly string[]): Promise<(DeliveryRecord | undefined)[]>;
}

export interface OrderedKeyWrite<T> {
  /** The key's new state; absent: unchanged. */
  state?: OrderedKeyState;
  /** Records to write (created or replaced). */
  records?: DeliveryRecord[];
  /** Records to create, unread: if one of them exists, nothing is written and transact throws RecordExistsError. */
  create?: DeliveryRecord[];
  result: T;
}
