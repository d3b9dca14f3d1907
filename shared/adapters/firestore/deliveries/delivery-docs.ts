import { gunzipSync, gzipSync } from 'node:zlib';
import { DocumentData } from '@google-cloud/firestore';
import { DeliveryRecord } from '../../../domain/retry/delivery';
import { HeraldEvent } from '../../../domain/events/event';
import { FIRESTORE_QUERIES } from '../../../firestore-schema';
import { orderedKeyId } from '../../../domain/modes/ordering';

/** `intakeTally`: the id's hash (domain/intake/intake-tally.ts) on a record from an intake batch, summed by the reconciler's aggregation. */
export type StoredDelivery = Omit<DeliveryRecord, 'event' | 'attemptLog'> & { event?: { attributes: Record<string, string>; data: Buffer }; attemptLog?: DeliveryRecord['attemptLog'] | Buffer; expireAt?: Date; groupCopies?: number; intakeTally?: number } & OrderFields;
/** `orderAgain`: an ordered delivery's key while it waits for a place again, one field an equality query finds (no composite index). */
type OrderFields = { orderAgain?: string };
/** A record as its own document holds it: with the group copies it folded in (domain/delivery/grouped-outcomes.ts). */
export type Own = DeliveryRecord & { groupCopies?: number };

/** What tells a record's attempt from another's: a second copy's send has its own times. */
export const SAME_ATTEMPT_FIELDS = ['status', 'attempts', 'firstAttemptAt', 'lastAttemptAt', 'availableAt'] as const satisfies readonly (keyof DeliveryRecord)[];

/** The field the reconciler sums (its index: firestore-schema.ts intakeTally). */
export const TALLY_FIELD = FIRESTORE_QUERIES.intakeTally.orderBy;

/**
 * A record as its document holds it. The attempt log (what was sent, headers and the body's
 * first 2 KB, and what came back) is most of a delivered record and is read only whole, with
 * the record: it is stored as one gzip of its JSON (`packLog`: a realistic JSON body ~1.6×),
 * since every record is kept, and billed by the byte, for the whole retention.
 */
export function toDoc(record: Own, packLog = true): StoredDelivery {
  const { event, attemptLog, ...rest } = record;
  const stored: StoredDelivery = {
    ...rest,
    ...(event ? { event: { attributes: { ...event.attributes }, data: event.data } } : {}),
    ...(attemptLog !== undefined ? { attemptLog: packLog ? gzipSync(JSON.stringify(attemptLog)) : attemptLog } : {}),
  };
  return record.order?.again ? { ...stored, orderAgain: orderedKeyId(record.destinationId, record.order.key) } : stored;
}

/** A delivery record's fields as the log shows them: all but `event` and `attemptLog`. */
export const LOG_FIELDS = [
  'id', 'destinationId', 'eventId', 'eventSource', 'eventType', 'status', 'attempts', 'throttled', 'reason', 'publishedAt', 'lastError', 'availableAt',
  'rateDeferred', 'claimedAt', 'firstAttemptAt', 'lastAttemptAt', 'deliveredAt', 'replays', 'intake', 'deadLetterDueAt', 'recoveredAt',
  'duplicates', 'batch', 'order',
] as const satisfies readonly Exclude<keyof DeliveryRecord, 'event' | 'attemptLog'>[];
type UnlistedField = Exclude<Exclude<keyof DeliveryRecord, 'event' | 'attemptLog'>, (typeof LOG_FIELDS)[number]>;
// A field added to DeliveryRecord but not to LOG_FIELDS stops the build here: the log would drop it silently.
const LOG_FIELDS_COMPLETE: UnlistedField extends never ? true : never = true;
void LOG_FIELDS_COMPLETE;

/** A record as the log shows it. */
export function withoutDetail(record: DeliveryRecord): DeliveryRecord {
  const { event: _event, attemptLog: _log, ...row } = record;
  return row;
}

/** An own document, with the group copies it folded in. */
export function fromOwn(doc: DocumentData): Own {
  return fromDoc(doc, true);
}

/** A record from its document: without the TTL field, which is storage's, not the record's. */
export function fromDoc(doc: DocumentData, keepGroupCopies = false): Own {
  const { event, attemptLog, expireAt: _expireAt, groupCopies, intakeTally: _tally, orderAgain: _again, ...rest } = doc as StoredDelivery;
  // Records written before the log was packed hold it as an array.
  const log = Buffer.isBuffer(attemptLog) ? (JSON.parse(gunzipSync(attemptLog).toString('utf8')) as DeliveryRecord['attemptLog']) : attemptLog;
  const own: Own = { ...rest, ...(log !== undefined ? { attemptLog: log } : {}), ...(keepGroupCopies && groupCopies ? { groupCopies } : {}) };
  if (!event) return own;
  return { ...own, event: { attributes: event.attributes, data: Buffer.from(event.data) } as HeraldEvent };
}
