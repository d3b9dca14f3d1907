import { DocumentReference, FieldValue, Firestore } from '@google-cloud/firestore';
import { COLLECTIONS, FIRESTORE_QUERIES, FIRESTORE_TTL_FIELDS } from '../../../firestore-schema';
import { addUsage, emptyUsage, UsageCounts } from '../../../domain/usage/usage';
import type { UsageDelta } from '../../../ports/counters';

/** How long a usage document is kept (Firestore's TTL policy on `expireAt`): 400 days, a year of bills and their month before. */
const KEEP_MS = 400 * 24 * 60 * 60 * 1000;

/**
 * `usage/<account>_<day>~<writer>`: one writer's counts of one account in one UTC day, added to
 * with increments in the counter flushes (adapters/firestore/counters.ts), its flush mark beside
 * them. The account's prefix lets erasing an account delete them by document-id range, as its
 * other documents.
 */
export function usageWrite(db: Firestore, d: UsageDelta, writer: string, marked: Record<string, unknown>): { ref: DocumentReference; doc: Record<string, unknown> } {
  const c = d.counts;
  const inc = (n: number) => FieldValue.increment(n);
  const attempts = Object.entries(c.attempts).filter(([, n]) => (n ?? 0) > 0);
  const doc: Record<string, unknown> = {
    account: d.account,
    day: d.day,
    eventsAccepted: inc(c.eventsAccepted),
    eventsRefused: inc(c.eventsRefused),
    operationalEvents: inc(c.operationalEvents),
    deliveries: inc(c.deliveries),
    delivered: inc(c.delivered),
    bytesSent: inc(c.bytesSent),
    ...(attempts.length ? { attempts: Object.fromEntries(attempts.map(([o, n]) => [o, inc(n!)])) } : {}),
    ...marked,
    [FIRESTORE_TTL_FIELDS.usage.field]: new Date(Date.parse(`${d.day}T00:00:00Z`) + KEEP_MS),
  };
  return { ref: db.collection(COLLECTIONS.usage).doc(`${d.account}_${d.day}~${writer}`), doc };
}

/** Every writer's documents of the days from `from` to `to`, one account's (or all), summed per account and day: one query, a read per document. */
export async function readUsage(db: Firestore, account: string | undefined, from: string, to: string): Promise<{ usage: Map<string, Map<string, UsageCounts>>; reads: number }> {
  const q = account === undefined ? FIRESTORE_QUERIES.usageDays : FIRESTORE_QUERIES.accountUsageDays;
  const base = account === undefined ? db.collection(q.collection) : db.collection(q.collection).where('account', '==', account);
  const snap = await base.where(q.orderBy, '>=', from).where(q.orderBy, '<=', to).orderBy(q.orderBy).get();
  const usage = new Map<string, Map<string, UsageCounts>>();
  for (const doc of snap.docs) {
    const stored = doc.data() as Partial<UsageCounts> & { account: string; day: string };
    const days = usage.get(stored.account) ?? new Map<string, UsageCounts>();
    days.set(stored.day, addUsage(days.get(stored.day) ?? emptyUsage(), stored));
    usage.set(stored.account, days);
  }
  return { usage, reads: Math.max(1, snap.size) };
}
