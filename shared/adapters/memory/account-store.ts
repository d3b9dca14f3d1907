import { Account, AccountKey, AccountTombstone } from '../../domain/access/account';
import { AccountStore } from '../../ports/accounts';

/** Accounts and keys in Maps: unit tests, and the same contract as the Firestore store (a conformance test runs both). */
export class MemoryAccountStore implements AccountStore {
  private readonly accounts = new Map<string, Account>();
  private readonly keys = new Map<string, AccountKey>();
  private readonly tombstones = new Map<string, AccountTombstone>();

  async get(id: string): Promise<Account | undefined> {
    const a = this.accounts.get(id);
    return a && structuredClone(a);
  }

  async list(page: { limit: number; cursor?: string }): Promise<{ accounts: Account[]; nextCursor?: string }> {
    const ids = [...this.accounts.keys()].sort().filter((id) => page.cursor === undefined || id > page.cursor);
    const accounts = ids.slice(0, page.limit).map((id) => structuredClone(this.accounts.get(id)!));
    return ids.length > page.limit ? { accounts, nextCursor: accounts[accounts.length - 1]!.id } : { accounts };
  }

  async create(account: Account): Promise<'created' | 'taken' | 'deleted'> {
    if (this.tombstones.has(account.id)) return 'deleted';
    if (this.accounts.has(account.id)) return 'taken';
    this.accounts.set(account.id, structuredClone(account));
    return 'created';
  }

  async update(id: string, decide: (current: Account | undefined) => Account | undefined): Promise<Account | undefined> {
    const next = decide(await this.get(id));
    if (next !== undefined) this.accounts.set(id, structuredClone(next));
    return next && structuredClone(next);
  }

  async delete(id: string, now: Date): Promise<{ keyIds: string[] } | undefined> {
    if (!this.accounts.delete(id)) return undefined;
    this.tombstones.set(id, { id, deletedAt: now.toISOString(), purge: 'pending' });
    const keyIds = [...this.keys.values()].filter((k) => k.account === id).map((k) => k.id);
    for (const keyId of keyIds) this.keys.delete(keyId);
    return { keyIds };
  }

  async pendingPurges(limit: number): Promise<AccountTombstone[]> {
    return [...this.tombstones.values()]
      .filter((t) => t.purge === 'pending')
      .sort((a, b) => a.deletedAt.localeCompare(b.deletedAt))
      .slice(0, limit)
      .map((t) => structuredClone(t));
  }

  async purged(id: string, now: Date): Promise<void> {
    const t = this.tombstones.get(id);
    if (t) this.tombstones.set(id, { ...t, purge: 'done', purgedAt: now.toISOString() });
  }

  async putKey(key: AccountKey): Promise<void> {
    this.keys.set(key.id, structuredClone(key));
  }

  async getKey(id: string): Promise<AccountKey | undefined> {
    const k = this.keys.get(id);
    return k && structuredClone(k);
  }

  async listKeys(account: string): Promise<AccountKey[]> {
    return [...this.keys.values()]
      .filter((k) => k.account === account)
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id))
      .map((k) => structuredClone(k));
  }

  async updateKey(id: string, decide: (current: AccountKey | undefined) => AccountKey | undefined): Promise<AccountKey | undefined> {
    const next = decide(await this.getKey(id));
    if (next !== undefined) this.keys.set(id, structuredClone(next));
    return next && structuredClone(next);
  }
}
