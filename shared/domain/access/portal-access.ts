import type { Account, AccountKey } from './account';
import { DEFAULT_MAX_SESSIONS, MAX_TTL_SECONDS, PortalClaims, PortalScope } from './portal';

/**
 * What keeps a portal session alive (docs/console.md "Ending portal access"): a signature
 * proves a token was minted, these records say whether what granted it still stands. Pure:
 * the caller reads the records and passes the time.
 */

/** Who minted a link: the operator (the admin token), or the id of the account key that did. */
export const MINTED_BY_OPERATOR = 'admin';

/** A minted link as stored (never its token): `portal-links/{id}`. */
export interface PortalLinkRecord {
  id: string;
  account: string;
  /** `admin`, or the minting key's id: a session of a key's link ends when that key does. */
  mintedBy: string;
  readOnly: boolean;
  /** Its scopes; absent on records from before scopes: `read`, and `write` unless read-only. */
  scopes?: PortalScope[];
  destinations?: string[];
  /** How many sessions it may open; absent on records from before the limit: DEFAULT_MAX_SESSIONS. */
  maxSessions?: number;
  /** How many it has opened (absent: none). */
  sessionsOpened?: number;
  createdAt: string;
  expiresAt: string;
  revokedAt?: string;
}

/** A session opened from a link (never its token): `portal-sessions/{id}`. */
export interface PortalSessionRecord {
  id: string;
  linkId: string;
  account: string;
  createdAt: string;
  /** The link's: a session never outlives it. */
  expiresAt: string;
  revokedAt?: string;
}

/** Whether the link may open one more session: fewer opened than it allows. Checked and counted in one transaction (PortalStore.openSession). */
export function linkHasSessionsLeft(link: Pick<PortalLinkRecord, 'maxSessions' | 'sessionsOpened'>): boolean {
  return (link.sessionsOpened ?? 0) < (link.maxSessions ?? DEFAULT_MAX_SESSIONS);
}

/** Where live records are found: nothing live was made longer ago than the longest link lives. */
export function liveSince(now: Date): Date {
  return new Date(now.getTime() - MAX_TTL_SECONDS * 1000);
}

/** Not revoked, not expired at `now`, and made after the account's last "end every session" (`endedAt`). */
export function isLive(record: { createdAt: string; expiresAt: string; revokedAt?: string }, now: Date, endedAt: string | undefined): boolean {
  return record.revokedAt === undefined && record.expiresAt > now.toISOString() && (endedAt === undefined || record.createdAt > endedAt);
}

/**
 * What "end every session" at `at` revokes of the records given (the account's, made since
 * liveSince): the links live at `at` and made by then, and their sessions live and made by
 * then. A session of a revoked or expired link is already ended by its link: it is not counted again.
 */
export function liveUntil<L extends PortalLinkRecord, S extends PortalSessionRecord>(links: readonly L[], sessions: readonly S[], at: string, endedAt: string | undefined): { links: L[]; sessions: S[] } {
  const now = new Date(at);
  const liveLinks = links.filter((l) => l.createdAt <= at && isLive(l, now, endedAt));
  const ids = new Set(liveLinks.map((l) => l.id));
  return { links: liveLinks, sessions: sessions.filter((s) => ids.has(s.linkId) && s.createdAt <= at && isLive(s, now, endedAt)) };
}

/** Whether the key that minted a link (its record, undefined when gone) still lets the link's sessions act at `now`. */
export function mintingKeyStands(link: Pick<PortalLinkRecord, 'account' | 'mintedBy'>, key: Pick<AccountKey, 'account' | 'revokedAt' | 'expiresAt'> | undefined, now: Date): boolean {
  if (link.mintedBy === MINTED_BY_OPERATOR) return true;
  return key !== undefined && key.account === link.account && key.revokedAt === undefined && (key.expiresAt === undefined || key.expiresAt > now.toISOString());
}

/** What a session or a link exchange is checked against; undefined: no such record (or account). */
export interface PortalGrant {
  link: PortalLinkRecord | undefined;
  account: Pick<Account, 'createdAt'> | undefined;
  /** When the account's portal sessions were last all ended, if ever. */
  endedAt: string | undefined;
  /** The minting key's record, when a key minted the link. */
  key?: Pick<AccountKey, 'account' | 'revokedAt' | 'expiresAt'> | undefined;
}

export type PortalVerdictReason = 'expired' | 'revoked';
export type PortalAccess = { ok: true } | { ok: false; reason: PortalVerdictReason; why: string };

const refuse = (reason: PortalVerdictReason, why: string): PortalAccess => ({ ok: false, reason, why });

/**
 * Whether a link (its signed claims) may still open or keep a session at `now`: its record
 * is there, for its account, not revoked nor expired; the account still exists and is not a
 * newer one of the same id; no "end every session" came after it; and, minted by a key, that
 * key is still the account's, unrevoked and unexpired. Operator links outlive any key.
 */
export function linkAccess(claims: Pick<PortalClaims, 'id' | 'account'>, grant: PortalGrant, now: Date): PortalAccess {
  const { link, account } = grant;
  const at = now.toISOString();
  if (!account || (link !== undefined && account.createdAt > link.createdAt)) return refuse('revoked', 'its account no longer exists');
  if (!link || link.id !== claims.id || link.account !== claims.account) return refuse('revoked', 'its link is no longer on record');
  // The mark first: ending every session also marks each link, and says so.
  if (grant.endedAt !== undefined && grant.endedAt >= link.createdAt) return refuse('revoked', 'every portal session of the account was ended');
  if (link.revokedAt !== undefined) return refuse('revoked', 'its link was revoked');
  if (link.mintedBy !== MINTED_BY_OPERATOR) {
    const key = grant.key;
    if (!key || key.account !== link.account || key.revokedAt !== undefined) return refuse('revoked', 'the account key that made its link was revoked');
    if (key.expiresAt !== undefined && key.expiresAt <= at) return refuse('revoked', 'the account key that made its link has expired');
  }
  if (link.expiresAt <= at) return refuse('expired', 'its link has expired');
  return { ok: true };
}

/** Whether session `sid` of those claims may still act: its link's access, and its own record live. */
export function sessionAccess(claims: Pick<PortalClaims, 'id' | 'account'> & { sid: string }, session: PortalSessionRecord | undefined, grant: PortalGrant, now: Date): PortalAccess {
  const link = linkAccess(claims, grant, now);
  if (!link.ok) return link;
  if (!session || session.id !== claims.sid || session.linkId !== claims.id || session.account !== claims.account) return refuse('revoked', 'it is no longer on record');
  if (grant.endedAt !== undefined && grant.endedAt >= session.createdAt) return refuse('revoked', 'every portal session of the account was ended');
  if (session.revokedAt !== undefined) return refuse('revoked', 'it was revoked');
  if (session.expiresAt <= now.toISOString()) return refuse('expired', 'it has expired');
  return { ok: true };
}
