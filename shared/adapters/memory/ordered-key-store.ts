import { orderedKeyId, OrderedKeyState } from '../../domain/modes/ordering';
import { DeliveryRecord } from '../../domain/retry/delivery';
import { OrderedKeyRecords, OrderedKeyStore, OrderedKeyWrite } from '../../ports/ordered-keys';
import { RecordExistsError } from '../../ports/deliveries';
import { MemoryDeliveryStore } from './delivery-store';

/** Ordered keys in memory, over a MemoryDeliveryStore: one transaction at a time. */
export class MemoryOrderedKeyStore implements OrderedKeyStore {
  private readonly keys = new Map<string, OrderedKeyState>();
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly deliveries: MemoryDeliveryStore) {}

  transact<T>(destinationId: string, key: string, plan: (state: OrderedKeyState | undefined, records: OrderedKeyRecords) => Promise<OrderedKeyWrite<T>>): Promise<T> {
    const run = async (): Promise<T> => {
      const id = orderedKeyId(destinationId, key);
      const records: OrderedKeyRecords = { byIds: (ids) => Promise.all(ids.map((i) => this.deliveries.get(i))) };
      const current = this.keys.get(id);
      const write = await plan(current ? structuredClone(current) : undefined, records);
      for (const r of write.create ?? []) if (await this.deliveries.get(r.id)) throw new RecordExistsError();
      for (const r of [...(write.records ?? []), ...(write.create ?? [])]) await this.deliveries.put(r);
      if (write.state) this.keys.set(id, structuredClone(write.state));
      return write.result;
    };
    const result = this.queue.then(run, run);
    this.queue = result.catch(() => undefined);
    return result;
  }

  async get(destinationId: string, key: string): Promise<OrderedKeyState | undefined> {
    const state = this.keys.get(orderedKeyId(destinationId, key));
    return state ? structuredClone(state) : undefined;
  }

  async again(destinationId: string, key: string): Promise<string[]> {
    return this.deliveries
      .all()
      .filter((r: DeliveryRecord) => r.destinationId === destinationId && r.order?.key === key && r.order.again === true)
      .map((r) => r.id);
  }

  async stalled(before: Date, limit: number): Promise<OrderedKeyState[]> {
    return [...this.keys.values()]
      .filter((k) => k.done < k.last && !k.blocked && k.updatedAt < before.toISOString())
      .sort((a, b) => a.updatedAt.localeCompare(b.updatedAt))
      .slice(0, limit)
      .map((k) => structuredClone(k));
  }

  async blocked(destinationId: string, limit: number): Promise<OrderedKeyState[]> {
    return [...this.keys.values()]
      .filter((k) => k.destinationId === destinationId && k.blocked)
      .sort((a, b) => a.blocked!.at.localeCompare(b.blocked!.at))
      .slice(0, limit)
      .map((k) => structuredClone(k));
  }
}
