import { FieldPath, Query } from '@google-cloud/firestore';
import { AccountDataEraser } from '../../ports/accounts';
import { FirestoreStore } from './stores';
import { COLLECTIONS, FIRESTORE_QUERIES } from '../../firestore-schema';

/** Firestore takes at most 500 writes in one batch. */
const BATCH = 500;

/** One kind of document an account leaves behind, and how to find it. */
type Part =
  /** Documents whose ids start with `prefix`: a range of document ids, served without any index, taken in id order. */
  | { kind: 'prefix'; collection: string; prefix: (account: string) => string }
  /** Documents whose `field` names the account (few per account: no cursor). */
  | { kind: 'field'; collection: string; field: string }
  /** The one document named by the account's id. */
  | { kind: 'doc'; collection: string };

/**
 * Where an account's data is. Inside Herald its destinations are `<account>_<id>` (domain/ids.ts),
 * and `_` and `~` are in no id's alphabet: `acme_` is acme's alone, never `acme-2`'s. What the API
 * could still show goes first (replays an operator lists across accounts); the bulk last.
 */
const PARTS: readonly Part[] = [
  // Keys go with the account in one transaction (FirestoreAccountStore.delete); any beyond its limit, or made in a race, here.
  { kind: 'field', collection: COLLECTIONS.accountKeys, field: 'account' },
  { kind: 'field', collection: COLLECTIONS.replays, field: FIRESTORE_QUERIES.accountReplays.equality[0] },
  { kind: 'prefix', collection: COLLECTIONS.eventTypes, prefix: (a) => `${a}~` },
  { kind: 'doc', collection: COLLECTIONS.publishQuotas },
  // Its destinations' count (they were all deleted before the account could be).
  { kind: 'doc', collection: COLLECTIONS.destinationCounts },
  { kind: 'prefix', collection: COLLECTIONS.rateControl, prefix: (a) => `${a}_` },
  // `<account>_<day>~<writer>`: its usage per day (export what is billed before deleting an account).
  { kind: 'prefix', collection: COLLECTIONS.usage, prefix: (a) => `${a}_` },
  // `<destination>~<bucket>~<shard>`: counters and log heads (they would expire in 25 h; not left that long).
  { kind: 'prefix', collection: COLLECTIONS.rates, prefix: (a) => `${a}_` },
  // `<account>_~<writer>~<part>~<bucket>`: its sparse destinations' counters, shared with none of another account's.
  { kind: 'prefix', collection: COLLECTIONS.sharedRates, prefix: (a) => `${a}_` },
  // `<destination>`: its counters folded (the suspension check's cursor, `~check`, is no account's).
  { kind: 'prefix', collection: COLLECTIONS.rateRollups, prefix: (a) => `${a}_` },
  // `<destination>~<key hash>`: its ordered destinations' keys (idle ones would expire with the retention).
  { kind: 'prefix', collection: COLLECTIONS.orderedKeys, prefix: (a) => `${a}_` },
  // `<destination>.<event key>`: every record of every destination the account ever had.
  { kind: 'prefix', collection: COLLECTIONS.deliveries, prefix: (a) => `${a}_` },
  // `<account>_<writer><n>`: groups of its DELIVERED first attempts (a group holds one account's only).
  { kind: 'prefix', collection: COLLECTIONS.deliveryGroups, prefix: (a) => `${a}_` },
];

/**
 * Deletes a deleted account's documents a bounded step at a time: one query for up to
 * `limit` document ids (no fields read) and their deletion in batches of 500, in parallel.
 * The cursor is `<part>` or `<part>:<last id deleted>`: ranges go on after the last id, so a
 * step never skips again over the index entries the step before deleted.
 */
export class FirestoreAccountDataEraser extends FirestoreStore implements AccountDataEraser {
  async eraseSome(account: string, limit: number, cursor?: string): Promise<{ deleted: number; cursor?: string }> {
    const { part: first, after } = parseCursor(cursor);
    for (let i = first; i < PARTS.length; i++) {
      const part = PARTS[i]!;
      const snap = await this.query(part, account, limit, i === first ? after : undefined).get();
      this.ops.reads += Math.max(1, snap.size);
      if (snap.empty) continue;
      const refs = snap.docs.map((d) => d.ref);
      await Promise.all(
        Array.from({ length: Math.ceil(refs.length / BATCH) }, (_, b) => {
          const batch = this.db.batch();
          for (const ref of refs.slice(b * BATCH, (b + 1) * BATCH)) batch.delete(ref);
          return batch.commit();
        }),
      );
      this.ops.deletes += refs.length;
      const full = refs.length >= limit && part.kind !== 'doc';
      // A full page may have more after it: the same part again (a range after its last id; a field query from its start, now without these).
      const next = full ? (part.kind === 'prefix' ? `${i}:${refs[refs.length - 1]!.id}` : `${i}`) : i + 1 < PARTS.length ? `${i + 1}` : undefined;
      return { deleted: refs.length, ...(next !== undefined ? { cursor: next } : {}) };
    }
    return { deleted: 0 };
  }

  private query(part: Part, account: string, limit: number, after: string | undefined): Query {
    const col = this.db.collection(part.collection);
    switch (part.kind) {
      case 'doc':
        return col.where(FieldPath.documentId(), '==', account).select();
      case 'field':
        return col.where(part.field, '==', account).select().limit(limit);
      case 'prefix': {
        const prefix = part.prefix(account);
        const range = col.where(FieldPath.documentId(), '>=', prefix).where(FieldPath.documentId(), '<', `${prefix}\uf8ff`).orderBy(FieldPath.documentId());
        return (after !== undefined ? range.startAfter(after) : range).select().limit(limit);
      }
    }
  }
}

/** A cursor this class gave, or the start; anything else is the start too (the erasure is idempotent). */
function parseCursor(cursor: string | undefined): { part: number; after?: string } {
  const m = cursor === undefined ? null : /^(\d+)(?::(.+))?$/.exec(cursor);
  const part = m ? Number(m[1]) : 0;
  if (!m || part >= PARTS.length) return { part: 0 };
  return { part, ...(m[2] !== undefined ? { after: m[2] } : {}) };
}
