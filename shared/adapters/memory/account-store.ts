import { Account, AccountKey } from '../../domain/account';
import { AccountStore } from '../../ports';

/** Accounts and keys in Maps: unit tests, and the same contract as the Firestore store (a conformance test runs both). */
export class MemoryAccountStore implements AccountStore {
  private readonly accounts = new Map<string, Account>();
  private readonly keys = new Map<string, AccountKey>();

  async get(id: string): Promise<Account | undefined> {
    const a = this.accounts.get(id);
    return a && structuredClone(a);
  }

  async list(page: { limit: number; cursor?: string }): Promise<{ accounts: Account[]; nextCursor?: string }> {
    const ids = [...this.accounts.keys()].sort().filter((id) => page.cursor === undefined || id > page.cursor);
    const accounts = ids.slice(0, page.limit).map((id) => structuredClone(this.accounts.get(id)!));
    return ids.length > page.limit ? { accounts, nextCursor: accounts[accounts.length - 1]!.id } : { accounts };
  }

  async create(account: Account): Promise<boolean> {
    if (this.accounts.has(account.id)) return false;
    this.accounts.set(account.id, structuredClone(account));
    return true;
  }

  async update(id: string, decide: (current: Account | undefined) => Account | undefined): Promise<Account | undefined> {
    const next = decide(await this.get(id));
    if (next !== undefined) this.accounts.set(id, structuredClone(next));
    return next && structuredClone(next);
  }

  async delete(id: string): Promise<boolean> {
    return this.accounts.delete(id);
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
