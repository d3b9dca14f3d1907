/**
 * The Firestore indexes and TTL policies Herald needs, derived from the queries and expiry
 * fields the schema declares (shared/firestore-schema.ts: FIRESTORE_QUERIES, FIRESTORE_TTL_FIELDS),
 * never listed by hand.
 */

export interface QuerySpec {
  collection: string;
  /** An array field the query filters with array-contains (or -any): first in the index, as CONTAINS. */
  contains?: string;
  equality: readonly string[];
  orderBy: string;
  /** Absent: ascending. */
  direction?: 'asc' | 'desc';
}

export interface CompositeIndex {
  collection: string;
  /** An array field indexed for array-contains, before `fields`. */
  contains?: string;
  /** In index order: the equality fields, then the ordered one. */
  fields: string[];
  /** Of the ordered (last) field; the equality fields are ascending. */
  order: 'ASCENDING' | 'DESCENDING';
}

/**
 * Firestore serves a query over one field from its automatic single-field index; equality
 * on some fields with ordering on another needs a composite index with the equality fields
 * first. Queries that need the same index share it.
 */
export function compositeIndexes(queries: Record<string, QuerySpec>): CompositeIndex[] {
  const byKey = new Map<string, CompositeIndex>();
  for (const q of Object.values(queries)) {
    const fields = [...new Set([...q.equality, q.orderBy])];
    if (fields.length < 2 && q.contains === undefined) continue;
    const order = q.direction === 'desc' ? 'DESCENDING' : 'ASCENDING';
    byKey.set(`${q.collection}/${q.contains ?? ''}/${fields.join(',')}/${order}`, { collection: q.collection, ...(q.contains !== undefined ? { contains: q.contains } : {}), fields, order });
  }
  return [...byKey.values()];
}

/** A resource-name-safe label for an index: `deliveries-status-availableAt`. */
export function indexName(index: CompositeIndex): string {
  return [index.collection, ...(index.contains !== undefined ? [index.contains, 'contains'] : []), ...index.fields, ...(index.order === 'DESCENDING' ? ['desc'] : [])].join('-').replace(/[^A-Za-z0-9-]/g, '-');
}
