/**
 * What Herald's delivery records take in Firestore storage, measured from the documents a run
 * wrote (the cost model bills them per GiB-month over the retention).
 */
import { unpackGroup } from '../../shared/adapters/firestore/deliveries/stored-group';
import type { Firestore } from '@google-cloud/firestore';
import { COLLECTIONS, isIndexExempt } from '../../shared/firestore-schema';

/**
 * What a document holds in Firestore storage, its index entries included
 * (https://cloud.google.com/firestore/docs/storage-size): the document (its name, each field's
 * name and value, 32 bytes) and, for every field the automatic single-field indexes cover, an
 * entry per value with collection scope (the document's name, its parent document's name — a
 * top-level collection's parent is the database: no ids, the name's 16 additional bytes — the
 * field's name, the value, 32 bytes): two for a scalar (ascending and descending), one per
 * element of an array (array-contains). Fields
 * Herald deploys exempt from indexing (firestore-schema.ts isIndexExempt: the unindexed, the
 * ever-increasing and the TTL fields) have none.
 */
/** The document name size of a top-level collection's parent (the database): no collection or document ids, 16 bytes. */
const ROOT_PARENT_NAME = 16;

export function firestoreStoredBytes(collection: string, id: string, data: Record<string, unknown>): number {
  const name = collection.length + 1 + id.length + 1 + 16;
  const size = (v: unknown): number => {
    if (v === null || v === undefined) return 1;
    if (typeof v === 'string') return Buffer.byteLength(v) + 1;
    if (Buffer.isBuffer(v)) return v.byteLength;
    if (typeof v === 'boolean') return 1;
    if (typeof v === 'number') return 8;
    if (v instanceof Date || (typeof v === 'object' && v !== null && 'toDate' in v)) return 8;
    if (Array.isArray(v)) return v.reduce((n: number, x) => n + size(x), 0);
    return Object.entries(v as Record<string, unknown>).reduce((n, [k, x]) => n + k.length + 1 + size(x), 0);
  };
  let bytes = name + 32;
  for (const [field, value] of Object.entries(data)) {
    bytes += field.length + 1 + size(value);
    if (isIndexExempt(collection, field)) continue;
    const entry = (v: unknown) => name + ROOT_PARENT_NAME + field.length + 1 + size(v) + 32;
    bytes += Array.isArray(value) ? value.reduce((n: number, v) => n + entry(v), 0) : 2 * entry(value);
  }
  return bytes;
}

/** A grouped record's stored bytes, on average over the destination's group documents (firestoreStoredBytes). */
export async function groupMemberStoredBytes(firestore: Firestore, destinationId: string): Promise<number> {
  const groups = await firestore.collection(COLLECTIONS.deliveryGroups).where('destinations', 'array-contains', destinationId).get();
  // Members are `packed` (gzip JSON) since 2026-11-27, maps before.
  const membersIn = (g: { get(field: string): unknown }) => (g.get('packed') instanceof Buffer ? unpackGroup(g.get('packed') as Buffer) : (g.get('members') as unknown[])).length;
  const grouped = groups.docs.reduce((n, g) => ({ bytes: n.bytes + firestoreStoredBytes(COLLECTIONS.deliveryGroups, g.id, g.data()), members: n.members + membersIn(g) }), { bytes: 0, members: 0 });
  return grouped.bytes / Math.max(1, grouped.members);
}

/** A record of its own, as stored (its document and index entries), on average over a sample of the destination's. */
export async function ownRecordBytes(firestore: Firestore, destinationId: string): Promise<number> {
  const docs = await firestore.collection(COLLECTIONS.deliveries).where('destinationId', '==', destinationId).limit(200).get();
  return docs.docs.reduce((n, d) => n + firestoreStoredBytes(COLLECTIONS.deliveries, d.id, d.data()), 0) / Math.max(1, docs.size);
}

/**
 * A record's stored bytes among a destination's, records of their own and group members weighed
 * by how many of each the run wrote (`own`, `grouped`).
 */
export async function recordStoredBytes(firestore: Firestore, destinationId: string, own: number, grouped: number): Promise<number> {
  const [ownBytes, groupedBytes] = await Promise.all([own > 0 ? ownRecordBytes(firestore, destinationId) : 0, grouped > 0 ? groupMemberStoredBytes(firestore, destinationId) : 0]);
  return own + grouped === 0 ? 0 : (own * ownBytes + grouped * groupedBytes) / (own + grouped);
}
