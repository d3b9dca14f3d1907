import { DocumentData, Firestore } from '@google-cloud/firestore';
import { DeliveryRecord } from '../domain/delivery';
import { Destination } from '../domain/destination';
import { HeraldEvent } from '../domain/event';
import { DeliveryStore, DestinationStore } from '../ports';

/** Counts every document read and write, so the benchmark reports what Herald costs. */
export class OperationCounter {
  reads = 0;
  writes = 0;
  reset(): void {
    this.reads = 0;
    this.writes = 0;
  }
}

export const COLLECTIONS = { destinations: 'destinations', deliveries: 'deliveries' } as const;

const GRPC_ALREADY_EXISTS = 6;

export class FirestoreDestinationStore implements DestinationStore {
  constructor(
    private readonly db: Firestore,
    private readonly ops = new OperationCounter(),
  ) {}

  private get col() {
    return this.db.collection(COLLECTIONS.destinations);
  }

  async get(id: string): Promise<Destination | undefined> {
    const snap = await this.col.doc(id).get();
    this.ops.reads++;
    return snap.exists ? (snap.data() as Destination) : undefined;
  }

  async list(): Promise<Destination[]> {
    const snap = await this.col.orderBy('id').get();
    this.ops.reads += Math.max(1, snap.size);
    return snap.docs.map((d) => d.data() as Destination);
  }

  async put(destination: Destination): Promise<{ created: boolean }> {
    const ref = this.col.doc(destination.id);
    try {
      await ref.create(destination);
      this.ops.writes++;
      return { created: true };
    } catch (e) {
      if ((e as { code?: number }).code !== GRPC_ALREADY_EXISTS) throw e;
    }
    await ref.set(destination);
    this.ops.writes++;
    return { created: false };
  }

  async delete(id: string): Promise<boolean> {
    const ref = this.col.doc(id);
    const existed = await this.db.runTransaction(async (tx) => {
      const snap = await tx.get(ref);
      if (snap.exists) tx.delete(ref);
      return snap.exists;
    });
    this.ops.reads++;
    if (existed) this.ops.writes++;
    return existed;
  }
}

type StoredDelivery = Omit<DeliveryRecord, 'event'> & { event?: { attributes: Record<string, string>; data: Buffer } };

export class FirestoreDeliveryStore implements DeliveryStore {
  constructor(
    private readonly db: Firestore,
    private readonly ops = new OperationCounter(),
  ) {}

  private get col() {
    return this.db.collection(COLLECTIONS.deliveries);
  }

  async get(id: string): Promise<DeliveryRecord | undefined> {
    const snap = await this.col.doc(id).get();
    this.ops.reads++;
    return snap.exists ? fromDoc(snap.data() as DocumentData) : undefined;
  }

  async put(record: DeliveryRecord): Promise<void> {
    await this.col.doc(record.id).set(toDoc(record));
    this.ops.writes++;
  }
}

function toDoc(record: DeliveryRecord): StoredDelivery {
  const { event, ...rest } = record;
  return event ? { ...rest, event: { attributes: { ...event.attributes }, data: event.data } } : rest;
}

function fromDoc(doc: DocumentData): DeliveryRecord {
  const { event, ...rest } = doc as StoredDelivery;
  if (!event) return rest;
  return { ...rest, event: { attributes: event.attributes, data: Buffer.from(event.data) } as HeraldEvent };
}
