import { Account, actorOf, Caller, OPERATOR } from '../domain/account';
import { issuesFromZod } from '../domain/event';
import { internalDestinationId } from '../domain/ids';
import { linkClaims, LINK_PREFIX, PortalTheme, portalLinkSchema, portalSessionSchema, signLink, signSession, verifyPortalToken } from '../domain/portal';
import { AccountStore, Clock, DestinationStore, Logger } from '../ports';
import { findAccount, noAccount, notInPortal } from './accounts-admin';
import { AdminResult } from './destinations-admin';

/** The customer portal's links and sessions (docs/console.md). */
export interface PortalAdminDeps {
  accounts: AccountStore;
  destinations: Pick<DestinationStore, 'get'>;
  clock: Clock;
  log: Logger;
  /** The HMAC key portal tokens are signed with (domain/portal.ts portalKeyOf). */
  portalKey: Buffer;
}

export interface PortalLink {
  url: string;
  expiresAt: string;
}

/**
 * A portal link for `account`: `<consoleBase>/#portal=<token>`, the token in the fragment so
 * it never reaches a server's logs. Every destination named must be the account's own.
 */
export async function mintPortalLink(deps: PortalAdminDeps, caller: Caller, account: string, body: unknown, consoleBase: string): Promise<AdminResult<PortalLink>> {
  if (!(await findAccount(deps, caller, account))) return noAccount(account);
  if (caller.kind === 'portal') return notInPortal('minting a portal link');
  const parsed = portalLinkSchema.safeParse(body);
  if (!parsed.success) return { status: 400, body: { error: 'invalid portal link', issues: issuesFromZod(parsed.error) } };
  const missing: string[] = [];
  for (const id of new Set(parsed.data.destinations ?? [])) if (!(await deps.destinations.get(internalDestinationId(account, id)))) missing.push(id);
  if (missing.length > 0) {
    const issues = missing.map((id) => ({ path: 'destinations', message: `account ${account} has no destination ${JSON.stringify(id)}` }));
    return { status: 400, body: { error: `invalid portal link: no destination ${missing.map((m) => JSON.stringify(m)).join(', ')} in account ${account} (GET /admin/accounts/${account}/destinations)`, issues } };
  }
  const claims = linkClaims(account, parsed.data, deps.clock.now());
  const expiresAt = new Date(claims.exp * 1000).toISOString();
  deps.log.info('portal link minted', { account, link: claims.id, readOnly: claims.readOnly, destinations: claims.destinations, expiresAt, actor: actorOf(caller) });
  return { status: 201, body: { url: `${consoleBase}/#portal=${signLink(deps.portalKey, claims)}`, expiresAt } };
}

export interface PortalSession {
  sessionToken: string;
  account: { id: string; name: string };
  readOnly: boolean;
  destinations?: string[];
  expiresAt: string;
  returnUrl?: string;
  theme?: PortalTheme;
}

/** A link refused at the exchange: 401, saying whether it expired (with where to go back) or is not valid. */
export type PortalRefusal = { status: 401; body: { error: string; reason: 'expired' | 'invalid'; returnUrl?: string } };

const EXPIRED = 'this portal link has expired: ask for a new one where you opened it';
const INVALID = 'this portal link is not valid: it was changed or cut short; open it again from where you got it';

/**
 * A link exchanged for a session token (`hps_…`), which expires with the link. An expired
 * link says so with its returnUrl (its signature holds, so the URL is the operator's); a
 * tampered one never names a URL, since none of it can be trusted.
 */
export async function exchangePortalLink(deps: PortalAdminDeps, body: unknown): Promise<AdminResult<PortalSession> | PortalRefusal> {
  const parsed = portalSessionSchema.safeParse(body);
  if (!parsed.success) return { status: 400, body: { error: 'invalid portal session request', issues: issuesFromZod(parsed.error) } };
  const verdict = verifyPortalToken(deps.portalKey, LINK_PREFIX, parsed.data.token, deps.clock.now());
  if (!verdict.ok) {
    deps.log.info('portal link refused', { reason: verdict.reason, ...(verdict.reason === 'expired' ? { account: verdict.claims.account, link: verdict.claims.id } : {}) });
    if (verdict.reason === 'expired') return { status: 401, body: { error: EXPIRED, reason: 'expired', ...(verdict.claims.returnUrl !== undefined ? { returnUrl: verdict.claims.returnUrl } : {}) } };
    return { status: 401, body: { error: INVALID, reason: 'invalid' } };
  }
  const claims = verdict.claims;
  const account: Account | undefined = await findAccount(deps, OPERATOR, claims.account);
  if (!account) return { status: 401, body: { error: INVALID, reason: 'invalid' } };
  deps.log.info('portal session opened', { account: claims.account, link: claims.id, readOnly: claims.readOnly, destinations: claims.destinations });
  return {
    status: 200,
    body: {
      sessionToken: signSession(deps.portalKey, claims),
      account: { id: account.id, name: account.name },
      readOnly: claims.readOnly,
      ...(claims.destinations !== undefined ? { destinations: claims.destinations } : {}),
      expiresAt: new Date(claims.exp * 1000).toISOString(),
      ...(claims.returnUrl !== undefined ? { returnUrl: claims.returnUrl } : {}),
      ...(account.portal !== undefined ? { theme: account.portal } : {}),
    },
  };
}
