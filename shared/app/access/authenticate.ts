import { AccountKey, Caller } from '../../domain/access/account';
import { portalScopes, SESSION_PREFIX, verifyPortalToken } from '../../domain/access/portal';
import { Clock } from '../../ports/clock';
import { KeyVerifier } from './key-verifier';
import { PortalVerifier } from './portal-verifier';
import { bearerOf, matchesDigest } from './push-auth';

/** Who a bearer token stands for: the door's own token, an account key, or a portal session (the admin API only). */
export type Bearer = { kind: 'token' } | { kind: 'key'; key: AccountKey } | { kind: 'portal'; caller: Caller };

/** A refusal is always a 401 (with WWW-Authenticate: Bearer); its body says what to send instead. */
export type Authentication<B extends Bearer = Bearer> = { ok: true; bearer: B } | { ok: false; body: { error: string; reason?: 'expired' | 'revoked' | 'invalid' } };

/** A door to Herald's public API (admin or ingest): the token it takes and how its refusals say so. */
export interface Door {
  /** SHA-256 digest of the door's own token (the admin or the ingest token). */
  token: Buffer;
  /** What a refused caller is told to send: `send Authorization: Bearer <expects>`. */
  expects: string;
  /** The key portal sessions (`hps_…`) are signed with: given, the door also takes portal sessions. */
  portalKey?: Buffer;
}

export interface AuthenticateDeps {
  keys: Pick<KeyVerifier, 'verify'>;
  portalAccess: Pick<PortalVerifier, 'session'>;
  clock: Clock;
}

/**
 * The bearer token of a request to the admin API or to ingest, in the order each door has
 * always checked it: the door's own token (compared in constant time), then a portal session
 * where the door takes them, then an account key. What a key may do there (its scopes) is the
 * door's to judge. Neither the presented nor the expected token is ever logged.
 */
export async function authenticate(deps: AuthenticateDeps, door: Door & { portalKey: Buffer }, authorization: string | undefined): Promise<Authentication>;
export async function authenticate(deps: AuthenticateDeps, door: Omit<Door, 'portalKey'>, authorization: string | undefined): Promise<Authentication<Exclude<Bearer, { kind: 'portal' }>>>;
export async function authenticate(deps: AuthenticateDeps, door: Door, authorization: string | undefined): Promise<Authentication> {
  const token = bearerOf(authorization);
  if (matchesDigest(token, door.token)) return { ok: true, bearer: { kind: 'token' } };
  if (door.portalKey !== undefined && token?.startsWith(SESSION_PREFIX)) return portalSession(deps, door.portalKey, token);
  const verdict = token !== undefined ? await deps.keys.verify(token) : undefined;
  if (verdict?.ok) return { ok: true, bearer: { kind: 'key', key: verdict.key } };
  const why =
    verdict?.reason === 'busy'
      ? 'this instance was just sent too many unknown account keys to look this one up; if it is valid, send the request again in a second'
      : verdict && verdict.reason !== 'unknown'
        ? `the account key is ${verdict.reason}; ask for a new one`
        : `send Authorization: Bearer <${door.expects}>`;
  return { ok: false, body: { error: `missing or invalid bearer token: ${why}` } };
}

/** A portal session: its signature proves Herald minted it; its records (read at most every few seconds) say whether what granted it still stands. */
async function portalSession(deps: AuthenticateDeps, portalKey: Buffer, token: string): Promise<Authentication> {
  const session = verifyPortalToken(portalKey, SESSION_PREFIX, token, deps.clock.now());
  const sid = session.ok ? session.claims.sid : undefined;
  const access = session.ok && sid !== undefined ? await deps.portalAccess.session({ ...session.claims, sid }) : undefined;
  if (session.ok && sid !== undefined && access?.ok) {
    const { account, destinations } = session.claims;
    return { ok: true, bearer: { kind: 'portal', caller: { kind: 'portal', account, sessionId: sid, scopes: portalScopes(session.claims), ...(destinations !== undefined ? { destinations } : {}) } } };
  }
  const expired = (!session.ok && session.reason === 'expired') || (access !== undefined && !access.ok && access.reason === 'expired');
  const ended = access !== undefined && !access.ok && access.reason === 'revoked' ? access.why : undefined;
  return {
    ok: false,
    body: {
      error: expired ? 'the portal session has expired: open a new portal link' : ended !== undefined ? `the portal session has ended (${ended}): open the portal again from where you got the link` : 'the portal session is not valid: open the portal link again',
      reason: expired ? 'expired' : ended !== undefined ? 'revoked' : 'invalid',
    },
  };
}
