import { DocumentData, DocumentReference, Firestore } from '@google-cloud/firestore';

/** Counts every document read and write, so the benchmark reports what Herald costs. */
export class OperationCounter {
  reads = 0;
  writes = 0;
  deletes = 0;
  reset(): void {
    this.reads = 0;
    this.writes = 0;
    this.deletes = 0;
  }
}

/** What every Firestore store holds: the client, and the counter each of its reads, writes and deletes is billed to. */
export abstract class FirestoreStore {
  constructor(
    protected readonly db: Firestore,
    protected readonly ops = new OperationCounter(),
  ) {}

  /** One document, billed as one read: its data, or undefined when it does not exist. */
  protected async readOne<T>(ref: DocumentReference, decode: (data: DocumentData) => T = (data) => data as T): Promise<T | undefined> {
    const snap = await ref.get();
    this.ops.reads++;
    return snap.exists ? decode(snap.data()!) : undefined;
  }
}

/** Firestore's `in` takes at most 30 values. */
export const IN_LIMIT = 30;
/** Documents asked for per getAll. */
export const GET_ALL_CHUNK = 300;

export function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
