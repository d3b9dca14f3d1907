import type { Account, AccountCreate, AccountKeyView, AccountPatch, AccountSettings, KeyCreate } from '../../shared/domain/access/account';
import { objectOf, unexpected } from './answers';
import { HeraldClient } from './client';

/** Herald's accounts API (`/admin/accounts…`): accounts, their settings (docs/accounts.md) and their keys. */

/** POST /admin/accounts/{id}/keys: the key's record and, this once, the key itself. */
export type CreatedKey = AccountKeyView & { key: string };

export type AccountPage = { accounts: Account[]; nextCursor?: string };

const path = (...parts: string[]) => `/admin/accounts${parts.map((p) => `/${encodeURIComponent(p)}`).join('')}`;

export class AccountsApi {
  constructor(private readonly client: HeraldClient) {}

  private async send(method: string, to: string, body?: unknown): Promise<unknown> {
    const init = body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
    return (await this.client.request('admin', method, to, init)).body;
  }

  /** One object answer, its `check`ed field there, or an "unexpected body" error naming the call. */
  private async object<T>(call: string, method: string, to: string, body: unknown, check: (o: Record<string, unknown>) => boolean): Promise<T> {
    const answer = await this.send(method, to, body);
    const o = objectOf(call, answer);
    if (!check(o)) throw unexpected(call, answer);
    return o as T;
  }

  /** GET /admin/accounts: one page (a key sees its own account alone). */
  async page(cursor?: string): Promise<AccountPage> {
    const call = 'GET /admin/accounts';
    const page = await this.object<{ accounts: unknown; nextCursor?: unknown }>(call, 'GET', `${path()}?limit=500${cursor !== undefined ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, undefined, (o) => Array.isArray(o.accounts));
    return { accounts: page.accounts as Account[], ...(typeof page.nextCursor === 'string' ? { nextCursor: page.nextCursor } : {}) };
  }

  /** Every account, page after page; a cursor that does not move is Herald's fault, not a loop. */
  async list(): Promise<Account[]> {
    const accounts: Account[] = [];
    let cursor: string | undefined;
    for (;;) {
      const page = await this.page(cursor);
      accounts.push(...page.accounts);
      if (page.nextCursor === undefined) return accounts;
      if (page.nextCursor === cursor) throw unexpected('GET /admin/accounts (the same cursor twice)', page);
      cursor = page.nextCursor;
    }
  }

  get(id: string): Promise<Account> {
    return this.object('GET /admin/accounts/{id}', 'GET', path(id), undefined, isAccount);
  }

  create(spec: AccountCreate): Promise<Account> {
    return this.object('POST /admin/accounts', 'POST', path(), spec, isAccount);
  }

  update(id: string, patch: AccountPatch): Promise<Account> {
    return this.object('PATCH /admin/accounts/{id}', 'PATCH', path(id), patch, isAccount);
  }

  async delete(id: string): Promise<void> {
    await this.send('DELETE', path(id));
  }

  settings(id: string): Promise<AccountSettings> {
    return this.object('GET /admin/accounts/{id}/settings', 'GET', path(id, 'settings'), undefined, () => true);
  }

  /** PATCH: changes only the settings named, the others stay as they are. */
  changeSettings(id: string, settings: AccountSettings): Promise<AccountSettings> {
    return this.object('PATCH /admin/accounts/{id}/settings', 'PATCH', path(id, 'settings'), settings, () => true);
  }

  async keys(account: string): Promise<AccountKeyView[]> {
    const call = 'GET /admin/accounts/{id}/keys';
    return (await this.object<{ keys: AccountKeyView[] }>(call, 'GET', path(account, 'keys'), undefined, (o) => Array.isArray(o.keys))).keys;
  }

  createKey(account: string, spec: KeyCreate): Promise<CreatedKey> {
    return this.object('POST /admin/accounts/{id}/keys', 'POST', path(account, 'keys'), spec, (o) => typeof o.key === 'string' && typeof o.id === 'string');
  }

  async revokeKey(account: string, keyId: string): Promise<void> {
    await this.send('DELETE', path(account, 'keys', keyId));
  }
}

const isAccount = (o: Record<string, unknown>) => typeof o.id === 'string' && typeof o.name === 'string';
