import { DeliveryRecord } from '../retry/delivery';

/**
 * How long a delivery record is kept: the rule behind the `expireAt` field Firestore's TTL
 * policy deletes records by (FIRESTORE_TTL_FIELDS.deliveries).
 *
 * A record that still holds work never expires: PENDING and IN_FLIGHT (a retry is owed),
 * QUEUED (its destination is suspended or in queue mode, for as long as that lasts) and DEAD
 * while its dead letter is owed (`deadLetterDueAt`: the record holds the only copy of the
 * event the reconciler publishes). A settled one (DELIVERED, or DEAD with its letter out) is
 * kept `retentionMs` from when it settled: for a first attempt that is its publish time plus
 * the attempt, and a delivery that settles late (queued for weeks, then sent) still gets its
 * whole window. A DEAD one is kept at least as long as the dead-letter topic keeps its letter
 * (DEAD_RECORD_MIN_KEEP_MS), so a replay of any letter still there finds its record. Once set, the expiry is kept by later writes of the same settled record (a
 * duplicate counted on a DELIVERED one), and cleared when the record holds work again (a
 * replayed DEAD one is PENDING): it settles anew.
 */

export const DAY_MS = 86_400_000;
/** HERALD_DELIVERY_RETENTION_DAYS when unset. */
export const DEFAULT_RETENTION_DAYS = 30;
/** The dead-letter topic's message retention (topology.ts: 31 days): a DEAD record is kept at least this long. */
export const DEAD_RECORD_MIN_KEEP_MS = 31 * DAY_MS;

/** Whether the record holds work that a TTL deletion would lose. */
export function holdsWork(record: Pick<DeliveryRecord, 'status' | 'deadLetterDueAt'>): boolean {
  return record.status !== 'DELIVERED' && !(record.status === 'DEAD' && record.deadLetterDueAt === undefined);
}

/**
 * When the record, written at `now`, may be deleted; undefined: never (it holds work).
 * `kept`: the expiry already on the stored record, if any.
 */
export function deliveryExpiry(record: Pick<DeliveryRecord, 'status' | 'deadLetterDueAt' | 'publishedAt'>, retentionMs: number, now: Date, kept?: Date): Date | undefined {
  if (holdsWork(record)) return undefined;
  if (kept !== undefined) return kept;
  const published = record.publishedAt === undefined ? Number.NaN : Date.parse(record.publishedAt);
  // A publish time ahead of the writer's clock (another instance's skew) counts, never a shorter window.
  const settledAt = Number.isNaN(published) ? now.getTime() : Math.max(published, now.getTime());
  return new Date(settledAt + (record.status === 'DEAD' ? Math.max(retentionMs, DEAD_RECORD_MIN_KEEP_MS) : retentionMs));
}
