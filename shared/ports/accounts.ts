import type { Account, AccountKey, AccountTombstone } from '../domain/access/account';
import type { PortalLinkRecord, PortalSessionRecord } from '../domain/access/portal-access';

/** Accounts, their portal credentials, their quotas, and erasing an account's data. Only shared/adapters/ implements these with SDKs and sockets. */

/** Accounts and their keys (domain/access/account.ts). */
export interface AccountStore {
  get(id: string): Promise<Account | undefined>;
  /** By id, a page at a time: `cursor` is the last id of the page before. */
  list(page: { limit: number; cursor?: string }): Promise<{ accounts: Account[]; nextCursor?: string }>;
  /**
   * Creates the account unless its id is taken (`taken`) or was an account's that was
   * deleted (`deleted`: ids are never reused). `get` and `list` never show a deleted account.
   */
  create(account: Account): Promise<'created' | 'taken' | 'deleted'>;
  /** Reads, decides and writes atomically (as DestinationStore.update); what was written. */
  update(id: string, decide: (current: Account | undefined) => Account | undefined): Promise<Account | undefined>;
  /**
   * Deletes the account and its keys and leaves its tombstone (purge `pending`), atomically:
   * the ids of the keys deleted, or undefined when there was no such account.
   */
  delete(id: string, now: Date): Promise<{ keyIds: string[] } | undefined>;
  /** Tombstones whose data may not all be deleted yet, oldest first. */
  pendingPurges(limit: number): Promise<AccountTombstone[]>;
  /** Marks the tombstone's purge done: nothing of the account is left. */
  purged(id: string, now: Date): Promise<void>;
  putKey(key: AccountKey): Promise<void>;
  getKey(id: string): Promise<AccountKey | undefined>;
  listKeys(account: string): Promise<AccountKey[]>;
  /** Reads, decides and writes one key atomically; what was written. */
  updateKey(id: string, decide: (current: AccountKey | undefined) => AccountKey | undefined): Promise<AccountKey | undefined>;
}

/**
 * The customer portal's links and the sessions opened from them (domain/access/portal-access.ts),
 * and each account's "every session ended" mark: what a signed portal token must still find.
 */
export interface PortalStore {
  createLink(link: PortalLinkRecord): Promise<void>;
  getLink(id: string): Promise<PortalLinkRecord | undefined>;
  createSession(session: PortalSessionRecord): Promise<void>;
  /**
   * Opens `session` from its link in one transaction: counts it on the link (`sessionsOpened`)
   * and writes it, unless the link has opened all it may (domain/access/portal-access.ts
   * linkHasSessionsLeft: `used-up`) or is not the account's (`no-link`).
   */
  openSession(session: PortalSessionRecord): Promise<'opened' | 'used-up' | 'no-link'>;
  getSession(id: string): Promise<PortalSessionRecord | undefined>;
  /** The account's links made at or after `since`, newest first, at most `limit`. */
  links(account: string, since: Date, limit: number): Promise<PortalLinkRecord[]>;
  /** The account's sessions made at or after `since`, newest first, at most `limit`. */
  sessions(account: string, since: Date, limit: number): Promise<PortalSessionRecord[]>;
  /**
   * Revokes the account's link `id` at `at` (unless it already was): the link as it now stands;
   * undefined when the account has no such link. Its sessions are not read nor written: each
   * checks its link's record (domain/access/portal-access.ts sessionAccess), so the link's mark ends them.
   */
  revokeLink(account: string, id: string, at: string): Promise<PortalLinkRecord | undefined>;
  /** Revokes the account's session `id` at `at` (unless it already was); undefined when the account has no such session. */
  revokeSession(account: string, id: string, at: string): Promise<PortalSessionRecord | undefined>;
  /** Marks every link and session of the account made up to `at` as ended (the mark first, then each live record): how many records it revoked. */
  endAll(account: string, at: string): Promise<{ links: number; sessions: number }>;
  /** The account's mark: when every one of its sessions was last ended, if ever. */
  endedAt(account: string): Promise<string | undefined>;
  /** Deletes every link, session and mark of the account: how many documents. */
  deleteAccount(account: string): Promise<number>;
}

/**
 * What a deleted account left in the stores besides its account document: keys, replay
 * reports scoped to it, event-type samples, its publish bucket, its destinations' rate
 * controllers, counters and log heads, and delivery records (app/access/account-purge.ts).
 */
export interface AccountDataEraser {
  /**
   * Deletes up to `limit` of the account's documents, going on from `cursor` (from the
   * start without one): how many it deleted, and where to go on from (absent: it has been
   * through every store). Bounded and idempotent, so the work may stop and resume anywhere.
   */
  eraseSome(account: string, limit: number, cursor?: string): Promise<{ deleted: number; cursor?: string }>;
}

/** Each account's publish bucket, shared by every ingest instance (domain/intake/quota.ts). */
export interface QuotaStore {
  /** Atomically hands out up to `want` tokens of `account`'s bucket, refilling at `limit`/s: how many it did. */
  take(account: string, want: number, limit: number, nowMs: number): Promise<number>;
}
