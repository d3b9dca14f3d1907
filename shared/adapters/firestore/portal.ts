import { CollectionReference, DocumentData, DocumentReference, QuerySnapshot, WriteBatch } from '@google-cloud/firestore';
import { MAX_TTL_SECONDS } from '../../domain/access/portal';
import { linkHasSessionsLeft, liveSince, liveUntil, PortalLinkRecord, PortalSessionRecord } from '../../domain/access/portal-access';
import { PortalStore } from '../../ports/accounts';
import { FirestoreStore } from './stores';
import { COLLECTIONS, FIRESTORE_QUERIES, FIRESTORE_TTL_FIELDS } from '../../firestore-schema';
import { ifPresent, transactOne } from './write';

/** Writes per batch: Firestore takes at most 500. */
const BATCH = 400;

/**
 * Portal links (`portal-links/{id}`), sessions (`portal-sessions/{id}`) and each account's
 * "every session ended" mark (`portal-marks/{account}`). Each document carries `expireAt`, so
 * Firestore's TTL policy (FIRESTORE_TTL_FIELDS) deletes it once nothing can need it.
 */
export class FirestorePortalStore extends FirestoreStore implements PortalStore {
  private readonly linksCol = this.db.collection(COLLECTIONS.portalLinks);
  private readonly sessionsCol = this.db.collection(COLLECTIONS.portalSessions);
  private readonly marksCol = this.db.collection(COLLECTIONS.portalMarks);

  async createLink(link: PortalLinkRecord): Promise<void> {
    await this.linksCol.doc(link.id).create({ ...link, [FIRESTORE_TTL_FIELDS.portalLinks.field]: new Date(link.expiresAt) });
    this.ops.writes++;
  }

  getLink(id: string): Promise<PortalLinkRecord | undefined> {
    return this.readOne(this.linksCol.doc(id), recordOf<PortalLinkRecord>);
  }

  async createSession(session: PortalSessionRecord): Promise<void> {
    await this.sessionsCol.doc(session.id).create({ ...session, [FIRESTORE_TTL_FIELDS.portalSessions.field]: new Date(session.expiresAt) });
    this.ops.writes++;
  }

  async openSession(session: PortalSessionRecord): Promise<'opened' | 'used-up' | 'no-link'> {
    const linkRef = this.linksCol.doc(session.linkId);
    const outcome = await this.db.runTransaction(async (tx) => {
      const snap = await tx.get(linkRef);
      const link = snap.exists ? recordOf<PortalLinkRecord>(snap.data()!) : undefined;
      if (!link || link.account !== session.account) return 'no-link' as const;
      if (!linkHasSessionsLeft(link)) return 'used-up' as const;
      tx.update(linkRef, { sessionsOpened: (link.sessionsOpened ?? 0) + 1 });
      tx.create(this.sessionsCol.doc(session.id), { ...session, [FIRESTORE_TTL_FIELDS.portalSessions.field]: new Date(session.expiresAt) });
      return 'opened' as const;
    });
    this.ops.reads++;
    if (outcome === 'opened') this.ops.writes += 2;
    return outcome;
  }

  getSession(id: string): Promise<PortalSessionRecord | undefined> {
    return this.readOne(this.sessionsCol.doc(id), recordOf<PortalSessionRecord>);
  }

  async links(account: string, since: Date, limit: number): Promise<PortalLinkRecord[]> {
    const q = FIRESTORE_QUERIES.accountPortalLinks;
    return this.recordsOf<PortalLinkRecord>(await this.linksCol.where(q.equality[0], '==', account).where(q.orderBy, '>=', since.toISOString()).orderBy(q.orderBy, q.direction).limit(limit).get());
  }

  async sessions(account: string, since: Date, limit: number): Promise<PortalSessionRecord[]> {
    const q = FIRESTORE_QUERIES.accountPortalSessions;
    return this.recordsOf<PortalSessionRecord>(await this.sessionsCol.where(q.equality[0], '==', account).where(q.orderBy, '>=', since.toISOString()).orderBy(q.orderBy, q.direction).limit(limit).get());
  }

  revokeLink(account: string, id: string, at: string): Promise<PortalLinkRecord | undefined> {
    return this.revoke<PortalLinkRecord>(this.linksCol.doc(id), account, at);
  }

  revokeSession(account: string, id: string, at: string): Promise<PortalSessionRecord | undefined> {
    return this.revoke<PortalSessionRecord>(this.sessionsCol.doc(id), account, at);
  }

  async endAll(account: string, at: string): Promise<{ links: number; sessions: number }> {
    // The mark first: from here on, nothing made up to `at` is accepted, whatever the rest does.
    const ref = this.marksCol.doc(account);
    const { result: before } = await transactOne(this.db, ref, (data) => {
      const previous = data?.endedAt as string | undefined;
      const mark = { account, endedAt: at, [FIRESTORE_TTL_FIELDS.portalMarks.field]: new Date(Date.parse(at) + MAX_TTL_SECONDS * 1000) };
      return { result: previous, write: previous === undefined || previous < at ? { set: mark } : undefined };
    });
    this.ops.reads++;
    this.ops.writes++;
    const now = new Date(at);
    const end = async (records: { id: string; createdAt: string; expiresAt: string; revokedAt?: string }[], col: CollectionReference) => {
      await this.inBatches(records, (batch, r) => batch.update(col.doc(r.id), { revokedAt: at }));
      return records.length;
    };
    const [links, sessions] = await Promise.all([this.links(account, liveSince(now), 10_000), this.sessions(account, liveSince(now), 10_000)]);
    const live = liveUntil(links, sessions, at, before);
    return { links: await end(live.links, this.linksCol), sessions: await end(live.sessions, this.sessionsCol) };
  }

  async endedAt(account: string): Promise<string | undefined> {
    const snap = await this.marksCol.doc(account).get();
    this.ops.reads++;
    return snap.exists ? (snap.get('endedAt') as string) : undefined;
  }

  async deleteAccount(account: string): Promise<number> {
    const snaps = await Promise.all([this.linksCol, this.sessionsCol].map((col) => col.where('account', '==', account).select().get()));
    const refs = snaps.flatMap((s) => s.docs.map((d) => d.ref));
    this.ops.reads += snaps.reduce((n, s) => n + Math.max(1, s.size), 0);
    await this.inBatches(refs, (batch, ref) => batch.delete(ref));
    // The mark on the condition that it exists: the answer counts only documents that were there.
    const marked = await ifPresent(() => this.marksCol.doc(account).delete({ exists: true }));
    // Billed as before, the mark's delete with the rest whether or not there was one.
    this.ops.writes++;
    this.ops.deletes += refs.length + 1;
    return refs.length + (marked ? 1 : 0);
  }

  private recordsOf<T>(snap: QuerySnapshot): T[] {
    this.ops.reads += Math.max(1, snap.size);
    return snap.docs.map((d) => recordOf<T>(d.data()));
  }

  /** Sets `revokedAt` on the account's record (unless set): the record as it now stands, undefined when the account has none of that id. */
  private async revoke<T extends { account: string; revokedAt?: string }>(ref: DocumentReference, account: string, at: string): Promise<T | undefined> {
    const { result: written } = await transactOne<T | undefined>(this.db, ref, (data) => {
      const record = data === undefined ? undefined : recordOf<T>(data);
      if (record === undefined || record.account !== account) return { result: undefined };
      if (record.revokedAt !== undefined) return { result: record };
      return { result: { ...record, revokedAt: at }, write: { update: { revokedAt: at } } };
    });
    this.ops.reads++;
    if (written) this.ops.writes++;
    return written;
  }

  private async inBatches<T>(items: readonly T[], add: (batch: WriteBatch, item: T) => void): Promise<void> {
    for (let i = 0; i < items.length; i += BATCH) {
      const batch = this.db.batch();
      for (const item of items.slice(i, i + BATCH)) add(batch, item);
      await batch.commit();
      this.ops.writes += Math.min(BATCH, items.length - i);
    }
  }
}

/** A record from its document: without the TTL field, which is storage's, not the record's. */
function recordOf<T>(data: DocumentData): T {
  const { expireAt: _expireAt, ...record } = data;
  return record as T;
}
