import { DocumentReference, FieldPath } from '@google-cloud/firestore';
import { Account, AccountKey, AccountTombstone } from '../../domain/access/account';
import { AccountStore } from '../../ports/accounts';
import { FirestoreStore } from './stores';
import { COLLECTIONS, FIRESTORE_QUERIES } from '../../firestore-schema';
import { ifPresent, readDecideWrite } from './write';

/** Keys deleted with their account in its one transaction (Firestore takes 500 writes in one); any beyond, the purge deletes. */
const KEYS_IN_DELETE = 400;

/**
 * Accounts (`accounts/{id}`), their keys (`account-keys/{keyId}`, each naming its account;
 * only a key's hash is stored) and deleted accounts' tombstones (`account-tombstones/{id}`):
 * `accounts` holds live accounts only, so get and list need no filter.
 */
export class FirestoreAccountStore extends FirestoreStore implements AccountStore {
  private readonly accounts = this.db.collection(COLLECTIONS.accounts);
  private readonly keys = this.db.collection(COLLECTIONS.accountKeys);
  private readonly tombstones = this.db.collection(COLLECTIONS.accountTombstones);

  get(id: string): Promise<Account | undefined> {
    return this.readOne<Account>(this.accounts.doc(id));
  }

  async list(page: { limit: number; cursor?: string }): Promise<{ accounts: Account[]; nextCursor?: string }> {
    let query = this.accounts.orderBy(FieldPath.documentId()).limit(page.limit + 1);
    if (page.cursor !== undefined) query = query.startAfter(page.cursor);
    const snap = await query.get();
    this.ops.reads += Math.max(1, snap.size);
    const accounts = snap.docs.slice(0, page.limit).map((d) => d.data() as Account);
    return snap.size > page.limit ? { accounts, nextCursor: accounts[accounts.length - 1]!.id } : { accounts };
  }

  async create(account: Account): Promise<'created' | 'taken' | 'deleted'> {
    const ref = this.accounts.doc(account.id);
    const tombstone = this.tombstones.doc(account.id);
    // One transaction with the tombstone's read: a delete racing this create cannot slip between.
    const made = await this.db.runTransaction(async (tx) => {
      const [live, gone] = await tx.getAll(ref, tombstone);
      if (gone!.exists) return 'deleted';
      if (live!.exists) return 'taken';
      tx.create(ref, account);
      return 'created';
    });
    this.ops.reads += 2;
    if (made === 'created') this.ops.writes++;
    return made;
  }

  update(id: string, decide: (current: Account | undefined) => Account | undefined): Promise<Account | undefined> {
    return this.readDecideWrite(this.accounts.doc(id), decide);
  }

  async delete(id: string, now: Date): Promise<{ keyIds: string[] } | undefined> {
    const ref = this.accounts.doc(id);
    const deleted = await this.db.runTransaction(async (tx) => {
      const snap = await tx.get(ref);
      if (!snap.exists) return undefined;
      // Its keys go in the same commit: no moment in which the account is gone and a key of it still works.
      const keys = await tx.get(this.keys.where('account', '==', id).select().limit(KEYS_IN_DELETE));
      tx.delete(ref);
      for (const key of keys.docs) tx.delete(key.ref);
      const tombstone: AccountTombstone = { id, deletedAt: now.toISOString(), purge: 'pending' };
      tx.set(this.tombstones.doc(id), tombstone);
      return { keyIds: keys.docs.map((k) => k.id) };
    });
    this.ops.reads += 1 + Math.max(1, deleted?.keyIds.length ?? 0);
    if (deleted) {
      this.ops.deletes += 1 + deleted.keyIds.length;
      this.ops.writes++;
    }
    return deleted;
  }

  async pendingPurges(limit: number): Promise<AccountTombstone[]> {
    const q = FIRESTORE_QUERIES.pendingPurges;
    const snap = await this.tombstones.where(q.equality[0], '==', 'pending').orderBy(q.orderBy).limit(limit).get();
    this.ops.reads += Math.max(1, snap.size);
    return snap.docs.map((d) => d.data() as AccountTombstone);
  }

  async purged(id: string, now: Date): Promise<void> {
    // No tombstone: nothing to mark (as the memory store).
    if (await ifPresent(() => this.tombstones.doc(id).update({ purge: 'done', purgedAt: now.toISOString() }))) this.ops.writes++;
  }

  async putKey(key: AccountKey): Promise<void> {
    await this.keys.doc(key.id).set(key);
    this.ops.writes++;
  }

  getKey(id: string): Promise<AccountKey | undefined> {
    return this.readOne<AccountKey>(this.keys.doc(id));
  }

  async listKeys(account: string): Promise<AccountKey[]> {
    const snap = await this.keys.where('account', '==', account).get();
    this.ops.reads += Math.max(1, snap.size);
    return snap.docs.map((d) => d.data() as AccountKey).sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
  }

  updateKey(id: string, decide: (current: AccountKey | undefined) => AccountKey | undefined): Promise<AccountKey | undefined> {
    return this.readDecideWrite(this.keys.doc(id), decide);
  }

  /** One document read, decided on and written optimistically (adapters/firestore/write.ts: no transaction's lock); what was written. */
  private async readDecideWrite<T extends object>(ref: DocumentReference, decide: (current: T | undefined) => T | undefined): Promise<T | undefined> {
    const { written, reads, writes } = await readDecideWrite<T>(this.db, ref, decide, { decode: (data) => data as T, encode: (value) => value });
    this.ops.reads += reads;
    this.ops.writes += writes;
    return written;
  }
}
