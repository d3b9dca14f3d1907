import type { DeliveryRecord, DeliveryStatus } from '../retry/delivery';

/**
 * The delivery log (the console's, and GET …/destinations/{id}/deliveries): one destination's
 * deliveries, newest published first, filtered by status, event type, event id and a time
 * range. The stores serve it from an index; this module holds what both stores must agree
 * on — the order, the filter, the cursor — so the memory store is the reference.
 */
export interface DeliveryLogQuery {
  status?: DeliveryStatus;
  eventType?: string;
  eventId?: string;
  /** ISO 8601, inclusive: published at or after. */
  from?: string;
  /** ISO 8601, exclusive: published before. */
  to?: string;
  limit: number;
  cursor?: LogCursor;
}

/** Where a page ended: the last row's publish time and id. */
export interface LogCursor {
  publishedAt: string;
  id: string;
}

/** Newest published first, then by id (descending) among records published in the same millisecond. */
export function logOrder(a: Pick<DeliveryRecord, 'publishedAt' | 'id'>, b: Pick<DeliveryRecord, 'publishedAt' | 'id'>): number {
  const pa = a.publishedAt ?? '';
  const pb = b.publishedAt ?? '';
  if (pa !== pb) return pa < pb ? 1 : -1;
  return a.id === b.id ? 0 : a.id < b.id ? 1 : -1;
}

/** Whether a record is in the query's log (the cursor included: only rows after it). */
export function inLog(record: DeliveryRecord, q: Omit<DeliveryLogQuery, 'limit'>): boolean {
  // A record without a publish time has no place in a log ordered by it (every record Herald writes has one).
  if (record.publishedAt === undefined) return false;
  if (q.status !== undefined && record.status !== q.status) return false;
  if (q.eventType !== undefined && record.eventType !== q.eventType) return false;
  if (q.eventId !== undefined && record.eventId !== q.eventId) return false;
  if (q.from !== undefined && record.publishedAt < q.from) return false;
  if (q.to !== undefined && record.publishedAt >= q.to) return false;
  return q.cursor === undefined || logOrder(record, q.cursor) > 0;
}

/** Opaque to callers: base64url JSON, so it survives a query string untouched. */
export function encodeLogCursor(c: LogCursor): string {
  return Buffer.from(JSON.stringify([c.publishedAt, c.id]), 'utf8').toString('base64url');
}

export function decodeLogCursor(text: string): LogCursor | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
    if (!Array.isArray(value) || value.length !== 2) return undefined;
    const [publishedAt, id] = value as unknown[];
    if (typeof publishedAt !== 'string' || typeof id !== 'string' || Number.isNaN(Date.parse(publishedAt)) || id.length === 0) return undefined;
    return { publishedAt, id };
  } catch {
    return undefined;
  }
}

/** A page of `limit` from rows already in log order (one more than `limit` says another page exists). */
export function logPage(rows: readonly DeliveryRecord[], limit: number): { deliveries: DeliveryRecord[]; nextCursor?: string } {
  const deliveries = rows.slice(0, limit);
  const last = deliveries[deliveries.length - 1];
  return rows.length > limit && last?.publishedAt !== undefined ? { deliveries, nextCursor: encodeLogCursor({ publishedAt: last.publishedAt, id: last.id }) } : { deliveries };
}
