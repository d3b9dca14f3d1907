import { Account, DEFAULT_ACCOUNT } from '../../domain/access/account';
import { PortalClaims } from '../../domain/access/portal';
import { linkAccess, MINTED_BY_OPERATOR, PortalAccess, PortalGrant, PortalLinkRecord, PortalSessionRecord, sessionAccess } from '../../domain/access/portal-access';
import { AccountStore, PortalStore } from '../../ports/accounts';
import { Clock } from '../../ports/clock';
import { KEY_CACHE_MS, KeyVerifier } from './key-verifier';

/** `default` exists whether or not it was ever stored (accounts-admin.ts findAccount), since before any link. */
const DEFAULT_ACCOUNT_BORN = { createdAt: '1970-01-01T00:00:00.000Z' };

/** Entries kept per cache: the oldest goes first past this. */
const MAX_ENTRIES = 10_000;

/**
 * Reads of one kind, each kept for `ms` on this instance and shared by the requests that
 * arrive meanwhile (a console page asks for several things at once: one read serves them).
 */
class ReadCache<T> {
  private readonly entries = new Map<string, { value: Promise<T>; readAt: number }>();

  constructor(
    private readonly clock: Clock,
    private readonly ms: number,
  ) {}

  get(id: string, read: (id: string) => Promise<T>): Promise<T> {
    const now = this.clock.now().getTime();
    const entry = this.entries.get(id);
    if (entry && now - entry.readAt < this.ms) return entry.value;
    const value = read(id);
    this.entries.delete(id);
    this.entries.set(id, { value, readAt: now });
    if (this.entries.size > MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
    // A failed read is not kept: the next request reads again.
    value.catch(() => {
      if (this.entries.get(id)?.value === value) this.entries.delete(id);
    });
    return value;
  }

  forget(id: string): void {
    this.entries.delete(id);
  }
}

export interface PortalVerifierDeps {
  portals: Pick<PortalStore, 'getLink' | 'getSession' | 'endedAt' | 'deleteAccount'>;
  accounts: Pick<AccountStore, 'get'>;
  /** The minting key's record, through the key verifier's own cache (revoking a key forgets it there at once). */
  keys: Pick<KeyVerifier, 'record'>;
  clock: Clock;
}

/**
 * Whether a portal link or session, its signature already checked, still stands
 * (domain/access/portal-access.ts): its records, its account, the account's "every session ended"
 * mark and the minting key, each read at most once per `cacheMs` per instance, so every
 * instance refuses a revoked session within that (and the read), and a busy console costs a
 * handful of reads every few seconds, not one per request. The instance that revokes forgets
 * at once. Nothing it holds decides alone: every entry is a copy of Firestore, soon re-read.
 */
export class PortalVerifier {
  private readonly links: ReadCache<PortalLinkRecord | undefined>;
  private readonly sessions: ReadCache<PortalSessionRecord | undefined>;
  private readonly accounts: ReadCache<Pick<Account, 'createdAt'> | undefined>;
  private readonly marks: ReadCache<string | undefined>;

  constructor(
    private readonly deps: PortalVerifierDeps,
    cacheMs = KEY_CACHE_MS,
  ) {
    this.links = new ReadCache(deps.clock, cacheMs);
    this.sessions = new ReadCache(deps.clock, cacheMs);
    this.accounts = new ReadCache(deps.clock, cacheMs);
    this.marks = new ReadCache(deps.clock, cacheMs);
  }

  /** Whether the link may open a session now. */
  async link(claims: Pick<PortalClaims, 'id' | 'account'>): Promise<PortalAccess> {
    const grant = await this.grant(claims, this.links.get(claims.id, (id) => this.deps.portals.getLink(id)));
    return linkAccess(claims, grant, this.deps.clock.now());
  }

  /** Whether session `sid` may act now. */
  async session(claims: Pick<PortalClaims, 'id' | 'account'> & { sid: string }): Promise<PortalAccess> {
    const session = this.sessions.get(claims.sid, (id) => this.deps.portals.getSession(id));
    const grant = await this.grant(claims, this.links.get(claims.id, (id) => this.deps.portals.getLink(id)));
    return sessionAccess(claims, await session, grant, this.deps.clock.now());
  }

  /** The link, account and mark read side by side; then the minting key, when a key minted it. */
  private async grant(claims: Pick<PortalClaims, 'account'>, linkRead: Promise<PortalLinkRecord | undefined>): Promise<PortalGrant> {
    const [link, account, endedAt] = await Promise.all([
      linkRead,
      this.accounts.get(claims.account, async (id) => (await this.deps.accounts.get(id)) ?? (id === DEFAULT_ACCOUNT ? DEFAULT_ACCOUNT_BORN : undefined)),
      this.marks.get(claims.account, (id) => this.deps.portals.endedAt(id)),
    ]);
    const byKey = link !== undefined && link.mintedBy !== MINTED_BY_OPERATOR;
    return { link, account, endedAt, ...(byKey ? { key: await this.deps.keys.record(link.mintedBy) } : {}) };
  }

  /** This instance revoked a link: forgotten here at once (every session of it reads the link, so each ends with it). */
  forgetLink(id: string): void {
    this.links.forget(id);
  }

  forgetSession(id: string): void {
    this.sessions.forget(id);
  }

  /** The account's mark or existence changed here: read both afresh. */
  forgetAccount(account: string): void {
    this.accounts.forget(account);
    this.marks.forget(account);
  }

  /** An account deleted: its links, sessions and mark go, and this instance forgets it at once. */
  async endAccount(account: string): Promise<void> {
    await this.deps.portals.deleteAccount(account);
    this.forgetAccount(account);
  }
}
