import { DocumentReference, FieldPath, Firestore } from '@google-cloud/firestore';
import { Account, AccountKey } from '../domain/account';
import { AccountStore } from '../ports';
import { COLLECTIONS, OperationCounter } from './firestore-stores';

const GRPC_ALREADY_EXISTS = 6;

/** Accounts (`accounts/{id}`) and their keys (`account-keys/{keyId}`, each naming its account; only a key's hash is stored). */
export class FirestoreAccountStore implements AccountStore {
  constructor(
    private readonly db: Firestore,
    private readonly ops: OperationCounter = new OperationCounter(),
  ) {}

  private get accounts() {
    return this.db.collection(COLLECTIONS.accounts);
  }

  private get keys() {
    return this.db.collection(COLLECTIONS.accountKeys);
  }

  async get(id: string): Promise<Account | undefined> {
    const snap = await this.accounts.doc(id).get();
    this.ops.reads++;
    return snap.exists ? (snap.data() as Account) : undefined;
  }

  async list(page: { limit: number; cursor?: string }): Promise<{ accounts: Account[]; nextCursor?: string }> {
    let query = this.accounts.orderBy(FieldPath.documentId()).limit(page.limit + 1);
    if (page.cursor !== undefined) query = query.startAfter(page.cursor);
    const snap = await query.get();
    this.ops.reads += Math.max(1, snap.size);
    const accounts = snap.docs.slice(0, page.limit).map((d) => d.data() as Account);
    return snap.size > page.limit ? { accounts, nextCursor: accounts[accounts.length - 1]!.id } : { accounts };
  }

  async create(account: Account): Promise<boolean> {
    try {
      await this.accounts.doc(account.id).create(account);
      this.ops.writes++;
      return true;
    } catch (e) {
      if ((e as { code?: number }).code === GRPC_ALREADY_EXISTS) return false;
      throw e;
    }
  }

  update(id: string, decide: (current: Account | undefined) => Account | undefined): Promise<Account | undefined> {
    return this.readDecideWrite(this.accounts.doc(id), decide);
  }

  async delete(id: string): Promise<boolean> {
    const ref = this.accounts.doc(id);
    const existed = await this.db.runTransaction(async (tx) => {
      const snap = await tx.get(ref);
      if (snap.exists) tx.delete(ref);
      return snap.exists;
    });
    this.ops.reads++;
    if (existed) this.ops.deletes++;
    return existed;
  }

  async putKey(key: AccountKey): Promise<void> {
    await this.keys.doc(key.id).set(key);
    this.ops.writes++;
  }

  async getKey(id: string): Promise<AccountKey | undefined> {
    const snap = await this.keys.doc(id).get();
    this.ops.reads++;
    return snap.exists ? (snap.data() as AccountKey) : undefined;
  }

  async listKeys(account: string): Promise<AccountKey[]> {
    const snap = await this.keys.where('account', '==', account).get();
    this.ops.reads += Math.max(1, snap.size);
    return snap.docs.map((d) => d.data() as AccountKey).sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
  }

  updateKey(id: string, decide: (current: AccountKey | undefined) => AccountKey | undefined): Promise<AccountKey | undefined> {
    return this.readDecideWrite(this.keys.doc(id), decide);
  }

  /** One document read, decided on and written in a transaction; what was written. */
  private async readDecideWrite<T extends object>(ref: DocumentReference, decide: (current: T | undefined) => T | undefined): Promise<T | undefined> {
    const written = await this.db.runTransaction(async (tx) => {
      const snap = await tx.get(ref);
      const next = decide(snap.exists ? (snap.data() as T) : undefined);
      if (next !== undefined) tx.set(ref, next);
      return next;
    });
    this.ops.reads++;
    if (written !== undefined) this.ops.writes++;
    return written;
  }
}
