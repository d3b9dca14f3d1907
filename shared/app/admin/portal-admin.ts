import { Account, actorOf, Caller, OPERATOR } from '../../domain/access/account';
import { issuesFromZod } from '../../domain/events/event';
import { internalDestinationId } from '../../domain/ids';
import {
  DEFAULT_MAX_SESSIONS,
  linkClaims,
  linkGrant,
  LINK_PREFIX,
  newPortalId,
  PORTAL_ID,
  PortalScope,
  portalScopes,
  PortalTheme,
  portalLinkSchema,
  portalSessionSchema,
  signLink,
  signSession,
  verifyPortalToken,
} from '../../domain/access/portal';
import { isLive, liveSince, mintingKeyStands, MINTED_BY_OPERATOR, PortalLinkRecord, PortalSessionRecord } from '../../domain/access/portal-access';
import { ExchangeLimiter } from '../../domain/access/portal-exchange-limit';
import { AccountStore, PortalStore } from '../../ports/accounts';
import { Clock, Logger } from '../../ports/clock';
import { DestinationStore } from '../../ports/destinations';
import { findAccount, noAccount, notInPortal } from './accounts-admin';
import { Outcome, TooMany } from '../support/outcome';
import { PortalVerifier } from '../access/portal-verifier';

/** The customer portal's links and sessions (docs/console.md). */
export interface PortalAdminDeps {
  accounts: AccountStore;
  destinations: Pick<DestinationStore, 'get'>;
  clock: Clock;
  log: Logger;
  /** The HMAC key portal tokens are signed with (domain/access/portal.ts portalKeyOf). */
  portalKey: Buffer;
  /** Every link minted and session opened, so that each can end before it expires. */
  portals: PortalStore;
  /** Whether a link or session still stands; told at once of what this instance revokes. */
  portalAccess: Pick<PortalVerifier, 'link' | 'forgetLink' | 'forgetSession' | 'forgetAccount'>;
  /** This instance's buckets for the public link exchange (domain/access/portal-exchange-limit.ts). */
  portalExchanges: ExchangeLimiter;
}

export interface PortalLink {
  /** The link's id: what GET …/portal-links lists and DELETE …/portal-links/{linkId} revokes. */
  id: string;
  url: string;
  expiresAt: string;
  scopes: PortalScope[];
  maxSessions: number;
}

/**
 * A portal link for `account`: `<console URL>/portal#portal=<token>`, the token in the fragment
 * so it never reaches a server's logs; the console URL is the deployment's setting, never a
 * request header. A key grants only scopes it holds (linkGrant); every destination named must
 * be the account's own.
 */
export async function mintPortalLink(deps: PortalAdminDeps, caller: Caller, account: string, body: unknown, consoleUrl: string | undefined): Promise<Outcome<PortalLink>> {
  if (!(await findAccount(deps, caller, account))) return noAccount(account);
  if (caller.kind === 'portal') return notInPortal('minting a portal link');
  const parsed = portalLinkSchema.safeParse(body);
  if (!parsed.success) return { kind: 'invalid', body: { error: 'invalid portal link', issues: issuesFromZod(parsed.error) } };
  const grant = linkGrant(caller, parsed.data);
  if (!grant.ok) return { kind: 'forbidden', body: { error: grant.error, issues: grant.issues } };
  if (consoleUrl === undefined) return { kind: 'unavailable', body: { error: 'Herald does not know where its console is served: set HERALD_CONSOLE_URL (e.g. https://herald.example.com/admin/console) or HERALD_PUSH_BASE_URL' } };
  const missing: string[] = [];
  for (const id of new Set(parsed.data.destinations ?? [])) if (!(await deps.destinations.get(internalDestinationId(account, id)))) missing.push(id);
  if (missing.length > 0) {
    const issues = missing.map((id) => ({ path: 'destinations', message: `account ${account} has no destination ${JSON.stringify(id)}` }));
    return { kind: 'invalid', body: { error: `invalid portal link: no destination ${missing.map((m) => JSON.stringify(m)).join(', ')} in account ${account} (GET /admin/accounts/${account}/destinations)`, issues } };
  }
  const now = deps.clock.now();
  const { readOnly: _readOnly, ...request } = parsed.data;
  const claims = linkClaims(account, { ...request, scopes: grant.scopes }, now);
  const expiresAt = new Date(claims.exp * 1000).toISOString();
  const maxSessions = parsed.data.maxSessions ?? DEFAULT_MAX_SESSIONS;
  await deps.portals.createLink({
    id: claims.id,
    account,
    mintedBy: caller.kind === 'key' ? caller.keyId : MINTED_BY_OPERATOR,
    readOnly: claims.readOnly,
    scopes: grant.scopes,
    ...(claims.destinations !== undefined ? { destinations: claims.destinations } : {}),
    maxSessions,
    createdAt: now.toISOString(),
    expiresAt,
  });
  deps.log.info('portal link minted', { account, link: claims.id, scopes: grant.scopes, destinations: claims.destinations, maxSessions, expiresAt, actor: actorOf(caller) });
  return { kind: 'created', body: { id: claims.id, url: `${consoleUrl}/portal#portal=${signLink(deps.portalKey, claims)}`, expiresAt, scopes: grant.scopes, maxSessions } };
}

export interface PortalSession {
  sessionToken: string;
  /** The session's id, as GET /admin/accounts/{id}/portal-sessions lists it. */
  sessionId: string;
  account: { id: string; name: string };
  readOnly: boolean;
  scopes: PortalScope[];
  destinations?: string[];
  expiresAt: string;
  returnUrl?: string;
  theme?: PortalTheme;
}

/**
 * A link refused at the exchange: unauthenticated, saying whether it expired, was revoked or
 * has opened every session it may (with where to go back), or is not valid; too many when this
 * instance takes no more exchanges of it, or of any link, for `retryAfterSeconds` (the Retry-After header).
 */
export type PortalRefusal =
  | { kind: 'unauthenticated'; body: { error: string; reason: 'expired' | 'invalid' | 'revoked' | 'used-up'; returnUrl?: string } }
  | TooMany<{ error: string; retryAfterSeconds: number }>;

const EXPIRED = 'this portal link has expired: ask for a new one where you opened it';
const INVALID = 'this portal link is not valid: it was changed or cut short; open it again from where you got it';
const USED_UP = 'this portal link has opened every session it may: ask for a new one where you opened it';

/**
 * A link exchanged for a session token (`hps_…`), which expires with the link, and its record.
 * An expired or revoked link says so with its returnUrl (its signature holds, so the URL is
 * the operator's); a tampered one never names a URL, since none of it can be trusted.
 */
export async function exchangePortalLink(deps: PortalAdminDeps, body: unknown): Promise<Outcome<PortalSession> | PortalRefusal> {
  const parsed = portalSessionSchema.safeParse(body);
  if (!parsed.success) return { kind: 'invalid', body: { error: 'invalid portal session request', issues: issuesFromZod(parsed.error) } };
  const verdict = verifyPortalToken(deps.portalKey, LINK_PREFIX, parsed.data.token, deps.clock.now());
  if (!verdict.ok) {
    deps.log.info('portal link refused', { reason: verdict.reason, ...(verdict.reason === 'expired' ? { account: verdict.claims.account, link: verdict.claims.id } : {}) });
    if (verdict.reason === 'expired') return { kind: 'unauthenticated', body: { error: EXPIRED, reason: 'expired', ...(verdict.claims.returnUrl !== undefined ? { returnUrl: verdict.claims.returnUrl } : {}) } };
    return { kind: 'unauthenticated', body: { error: INVALID, reason: 'invalid' } };
  }
  const claims = verdict.claims;
  const back = claims.returnUrl !== undefined ? { returnUrl: claims.returnUrl } : {};
  // Counted once the signature holds (a forged token costs an HMAC, never a read), before any read or write.
  const admission = deps.portalExchanges.admit(claims.id, deps.clock.now().getTime());
  if (!admission.ok) {
    deps.log.warn('portal link exchange limited', { limit: admission.limit, account: claims.account, link: claims.id, retryAfterSeconds: admission.retryAfterSeconds });
    const which = admission.limit === 'link' ? 'this portal link was opened too often just now' : 'Herald is opening too many portal sessions just now';
    return { kind: 'too-many', retryAfterSeconds: admission.retryAfterSeconds, body: { error: `${which}: try again in ${admission.retryAfterSeconds} s`, retryAfterSeconds: admission.retryAfterSeconds } };
  }
  const access = await deps.portalAccess.link(claims);
  if (!access.ok) {
    deps.log.info('portal link refused', { reason: access.reason, why: access.why, account: claims.account, link: claims.id });
    const error = access.reason === 'expired' ? EXPIRED : `this portal link no longer works: ${access.why}; ask for a new one where you opened it`;
    return { kind: 'unauthenticated', body: { error, reason: access.reason, ...back } };
  }
  const account: Account | undefined = await findAccount(deps, OPERATOR, claims.account);
  if (!account) return { kind: 'unauthenticated', body: { error: INVALID, reason: 'invalid' } };
  const now = deps.clock.now();
  const session: PortalSessionRecord = { id: newPortalId(), linkId: claims.id, account: claims.account, createdAt: now.toISOString(), expiresAt: new Date(claims.exp * 1000).toISOString() };
  const opened = await deps.portals.openSession(session);
  if (opened !== 'opened') {
    deps.log.info('portal link refused', { reason: opened, account: claims.account, link: claims.id });
    return opened === 'used-up' ? { kind: 'unauthenticated', body: { error: USED_UP, reason: 'used-up', ...back } } : { kind: 'unauthenticated', body: { error: INVALID, reason: 'invalid' } };
  }
  const scopes = portalScopes(claims);
  deps.log.info('portal session opened', { account: claims.account, link: claims.id, session: session.id, scopes, destinations: claims.destinations });
  return {
    kind: 'ok',
    body: {
      sessionToken: signSession(deps.portalKey, claims, session.id),
      sessionId: session.id,
      account: { id: account.id, name: account.name },
      readOnly: claims.readOnly,
      scopes,
      ...(claims.destinations !== undefined ? { destinations: claims.destinations } : {}),
      expiresAt: session.expiresAt,
      ...back,
      ...(account.portal !== undefined ? { theme: account.portal } : {}),
    },
  };
}

// ---------------------------------------------------------------- ending portal access

/** Records read per listing: far more than an account has live at once (each lives a day at most). */
const LIST_LIMIT = 1000;

export interface PortalSessionView {
  id: string;
  linkId: string;
  /** The link's: `admin`, or the id of the key that minted it. */
  mintedBy: string;
  readOnly: boolean;
  scopes: PortalScope[];
  destinations?: string[];
  createdAt: string;
  expiresAt: string;
}

export type PortalLinkView = Omit<PortalLinkRecord, 'revokedAt' | 'scopes' | 'maxSessions' | 'sessionsOpened'> & {
  scopes: PortalScope[];
  maxSessions: number;
  sessionsOpened: number;
  sessions: Omit<PortalSessionView, 'linkId' | 'mintedBy' | 'readOnly' | 'scopes' | 'destinations'>[];
};

/** Who may see and end an account's portal access: the operator, or a key of the account (its scopes checked by the route); never a portal session. */
async function portalManager(deps: PortalAdminDeps, caller: Caller, account: string, what: string): Promise<Outcome<never> | undefined> {
  if (!(await findAccount(deps, caller, account))) return noAccount(account);
  if (caller.kind === 'portal') return notInPortal(what);
  return undefined;
}

/**
 * The account's live links and sessions, newest first: not revoked, not expired, made after its
 * last "end every session", and (minted by a key) that key still standing.
 */
async function live(deps: PortalAdminDeps, account: string): Promise<{ links: PortalLinkRecord[]; sessions: PortalSessionRecord[] }> {
  const now = deps.clock.now();
  const since = liveSince(now);
  const [links, sessions, endedAt, keys] = await Promise.all([
    deps.portals.links(account, since, LIST_LIMIT),
    deps.portals.sessions(account, since, LIST_LIMIT),
    deps.portals.endedAt(account),
    deps.accounts.listKeys(account),
  ]);
  const keyOf = new Map(keys.map((k) => [k.id, k]));
  const liveLinks = links.filter((l) => isLive(l, now, endedAt) && mintingKeyStands(l, keyOf.get(l.mintedBy), now));
  const byId = new Set(liveLinks.map((l) => l.id));
  return { links: liveLinks, sessions: sessions.filter((s) => byId.has(s.linkId) && isLive(s, now, endedAt)) };
}

/** `GET /admin/accounts/{id}/portal-links`: the live links, newest first, each with its live sessions. */
export async function listPortalLinks(deps: PortalAdminDeps, caller: Caller, account: string): Promise<Outcome<{ links: PortalLinkView[] }>> {
  const refused = await portalManager(deps, caller, account, "listing the account's portal links");
  if (refused) return refused;
  const { links, sessions } = await live(deps, account);
  const view = links.map(({ revokedAt: _r, ...link }) => ({
    ...link,
    scopes: portalScopes(link),
    maxSessions: link.maxSessions ?? DEFAULT_MAX_SESSIONS,
    sessionsOpened: link.sessionsOpened ?? 0,
    sessions: sessions.filter((s) => s.linkId === link.id).map((s) => ({ id: s.id, createdAt: s.createdAt, expiresAt: s.expiresAt })),
  }));
  return { kind: 'ok', body: { links: view } };
}

/** `GET /admin/accounts/{id}/portal-sessions`: the live sessions, newest first, each with its link's rights. */
export async function listPortalSessions(deps: PortalAdminDeps, caller: Caller, account: string): Promise<Outcome<{ sessions: PortalSessionView[] }>> {
  const refused = await portalManager(deps, caller, account, "listing the account's portal sessions");
  if (refused) return refused;
  const { links, sessions } = await live(deps, account);
  const linkOf = new Map(links.map((l) => [l.id, l]));
  const view = sessions.map((s) => {
    const link = linkOf.get(s.linkId)!;
    return { id: s.id, linkId: s.linkId, mintedBy: link.mintedBy, readOnly: link.readOnly, scopes: portalScopes(link), ...(link.destinations !== undefined ? { destinations: link.destinations } : {}), createdAt: s.createdAt, expiresAt: s.expiresAt };
  });
  return { kind: 'ok', body: { sessions: view } };
}

/** `DELETE /admin/accounts/{id}/portal-links/{linkId}`: the link opens nothing more, and every session opened from it ends. */
export async function revokePortalLink(deps: PortalAdminDeps, caller: Caller, account: string, linkId: string): Promise<Outcome<never>> {
  const refused = await portalManager(deps, caller, account, 'revoking a portal link');
  if (refused) return refused;
  const revoked = PORTAL_ID.test(linkId) ? await deps.portals.revokeLink(account, linkId, deps.clock.now().toISOString()) : undefined;
  if (!revoked) return { kind: 'not-found', body: { error: `no portal link ${JSON.stringify(linkId)} in account ${JSON.stringify(account)}; list them with GET /admin/accounts/${account}/portal-links` } };
  deps.portalAccess.forgetLink(linkId);
  deps.log.info('portal link revoked', { account, link: linkId, actor: actorOf(caller) });
  return { kind: 'done' };
}

/** `DELETE /admin/accounts/{id}/portal-sessions/{sessionId}`: that session ends; its link may open another. */
export async function revokePortalSession(deps: PortalAdminDeps, caller: Caller, account: string, sessionId: string): Promise<Outcome<never>> {
  const refused = await portalManager(deps, caller, account, 'revoking a portal session');
  if (refused) return refused;
  const revoked = PORTAL_ID.test(sessionId) ? await deps.portals.revokeSession(account, sessionId, deps.clock.now().toISOString()) : undefined;
  if (!revoked) return { kind: 'not-found', body: { error: `no portal session ${JSON.stringify(sessionId)} in account ${JSON.stringify(account)}; list them with GET /admin/accounts/${account}/portal-sessions` } };
  deps.portalAccess.forgetSession(sessionId);
  deps.log.info('portal session revoked', { account, session: sessionId, link: revoked.linkId, actor: actorOf(caller) });
  return { kind: 'done' };
}

/**
 * `POST /admin/accounts/{id}/portal-sessions/revoke`: every session of the account ends, and
 * every link minted so far opens nothing more (a link left open would open a new session at
 * once). Links minted afterwards work.
 */
export async function endPortalSessions(deps: PortalAdminDeps, caller: Caller, account: string): Promise<Outcome<{ endedAt: string; links: number; sessions: number }>> {
  const refused = await portalManager(deps, caller, account, "ending the account's portal sessions");
  if (refused) return refused;
  const endedAt = deps.clock.now().toISOString();
  const ended = await deps.portals.endAll(account, endedAt);
  deps.portalAccess.forgetAccount(account);
  deps.log.info('portal sessions ended', { account, ...ended, actor: actorOf(caller) });
  return { kind: 'ok', body: { endedAt, ...ended } };
}
