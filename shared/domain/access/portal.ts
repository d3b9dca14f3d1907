import { createHash, createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import { z } from 'zod';
import { ACCOUNT_ID, DESTINATION_ID } from '../ids';

/**
 * The customer portal's credentials (docs/console.md): a portal link an operator's backend
 * mints for one account, and the session the console exchanges it for. Both are signed with
 * HMAC-SHA256 under a key every instance derives alike (portalKeyOf), so a forged token is
 * refused without a read; a genuine one must still find its records live (portal-access.ts).
 * Pure: the caller passes the time and the key.
 *
 * Format: `<prefix><base64url JSON claims>.<base64url HMAC>`, the HMAC over the prefix and the
 * claims, so a link is never taken for a session nor a session for a link.
 */

export const LINK_PREFIX = 'hpl_';
export const SESSION_PREFIX = 'hps_';
export const MIN_TTL_SECONDS = 60;
export const MAX_TTL_SECONDS = 86_400;
export const MAX_PORTAL_DESTINATIONS = 100;
/**
 * Sessions a link opens unless its request says otherwise: enough for a user who opens the
 * portal in a few tabs or browsers (a reload reuses the tab's session, docs/console.md), few
 * enough that a leaked link is not a day of unlimited access.
 */
export const DEFAULT_MAX_SESSIONS = 10;
export const MAX_MAX_SESSIONS = 100;

/** What a portal session may do: look (`read`), change (`write`); never `publish`. */
export const PORTAL_SCOPES = ['read', 'write'] as const;
export type PortalScope = (typeof PORTAL_SCOPES)[number];
/** A link's scopes when its request names none (for a key: those of them it holds). */
const DEFAULT_LINK_SCOPES: readonly PortalScope[] = PORTAL_SCOPES;
/** A token longer than this is refused unread (100 destinations and a long return URL fit well within it). */
const MAX_TOKEN_CHARS = 16_384;

/** What a link and the session made from it carry. `exp` is epoch seconds. */
export interface PortalClaims {
  /** A random id: the link's, which its session keeps (the audit log's `portal:<id>`). */
  id: string;
  account: string;
  /** Whether it lacks `write` (kept beside `scopes` for tokens minted before scopes existed, which carry only this). */
  readOnly: boolean;
  /** What it may do; absent (older tokens): `read`, and `write` unless read-only. */
  scopes?: PortalScope[];
  /** Only these destinations of the account (their own ids); absent: all of them. */
  destinations?: string[];
  /** Where the console sends the user back to (links only). */
  returnUrl?: string;
  /** The session's own id (sessions only): its record, which revocation marks (domain/access/portal-access.ts). */
  sid?: string;
  exp: number;
}

/** A link's or a session's random id (newPortalId: 22 base64url characters). */
export const PORTAL_ID = /^[A-Za-z0-9_-]{16,64}$/;

const claimsSchema = z.strictObject({
  id: z.string().regex(PORTAL_ID),
  account: z.string().regex(ACCOUNT_ID),
  readOnly: z.boolean(),
  scopes: z.array(z.enum(PORTAL_SCOPES)).min(1).max(PORTAL_SCOPES.length).optional(),
  destinations: z.array(z.string().regex(DESTINATION_ID)).min(1).max(MAX_PORTAL_DESTINATIONS).optional(),
  returnUrl: z.string().max(2048).optional(),
  sid: z.string().regex(PORTAL_ID).optional(),
  exp: z.number().int().positive(),
});

/** The key portal tokens are signed with: HKDF-SHA256 of the deployment's secret, so it is never the secret itself. */
export function portalKeyOf(secret: Buffer): Buffer {
  return Buffer.from(hkdfSync('sha256', secret, Buffer.from('herald portal', 'utf8'), Buffer.from('portal-tokens v1', 'utf8'), 32));
}

/** The secret to derive from: HERALD_SECRETS_KEY's first key when set (base64), else the admin token's SHA-256. */
export function portalSecretOf(secretsKey: string | undefined, adminDigest: Buffer): Buffer {
  const first = secretsKey?.split(',')[0]?.trim();
  return first ? Buffer.from(first, 'base64') : createHash('sha256').update('herald portal fallback:').update(adminDigest).digest();
}

function mac(key: Buffer, prefix: string, body: string): Buffer {
  return createHmac('sha256', key).update(prefix).update(body).digest();
}

function sign(key: Buffer, prefix: string, claims: PortalClaims): string {
  const body = Buffer.from(JSON.stringify(claims), 'utf8').toString('base64url');
  return `${prefix}${body}.${mac(key, prefix, body).toString('base64url')}`;
}

export function newPortalId(random: (bytes: number) => Buffer = randomBytes): string {
  return random(16).toString('base64url');
}

export function signLink(key: Buffer, claims: PortalClaims): string {
  return sign(key, LINK_PREFIX, claims);
}

/** Session `sid` for the link's claims: the same account, rights and destinations; never longer than the link. */
export function signSession(key: Buffer, link: PortalClaims, sid: string): string {
  const { returnUrl: _returnUrl, sid: _sid, ...claims } = link;
  return sign(key, SESSION_PREFIX, { ...claims, sid });
}

export type PortalVerdict = { ok: true; claims: PortalClaims } | { ok: false; reason: 'invalid' } | { ok: false; reason: 'expired'; claims: PortalClaims };

/** A token's claims if its signature holds and it has not expired at `now`; `expired` carries them (they are authentic). */
export function verifyPortalToken(key: Buffer, prefix: typeof LINK_PREFIX | typeof SESSION_PREFIX, token: unknown, now: Date): PortalVerdict {
  if (typeof token !== 'string' || token.length > MAX_TOKEN_CHARS || !token.startsWith(prefix)) return { ok: false, reason: 'invalid' };
  const [body, signature, extra] = token.slice(prefix.length).split('.');
  if (!body || !signature || extra !== undefined) return { ok: false, reason: 'invalid' };
  const expected = mac(key, prefix, body);
  const given = Buffer.from(signature, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false, reason: 'invalid' };
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
  } catch {
    return { ok: false, reason: 'invalid' };
  }
  const claims = claimsSchema.safeParse(parsed);
  if (!claims.success) return { ok: false, reason: 'invalid' };
  if (claims.data.exp * 1000 <= now.getTime()) return { ok: false, reason: 'expired', claims: claims.data };
  return { ok: true, claims: claims.data };
}

/** A portal session's scopes: its token's, or (older tokens) reading, and changing unless read-only. Never `publish`. */
export function portalScopes(claims: Pick<PortalClaims, 'readOnly' | 'scopes'>): PortalScope[] {
  return claims.scopes !== undefined ? orderScopes(claims.scopes) : claims.readOnly ? ['read'] : ['read', 'write'];
}

function orderScopes(scopes: readonly PortalScope[]): PortalScope[] {
  return PORTAL_SCOPES.filter((s) => scopes.includes(s));
}

// ---------------------------------------------------------------- schemas

/**
 * A URL host that is this machine for certain, whatever DNS says: `localhost`, `[::1]`, or an
 * IPv4 address in 127.0.0.0/8 (as the URL parser normalised it: `127.1` is `127.0.0.1`).
 * A name that merely starts with "127." (`127.evil.com`) is not.
 */
export function isLoopbackUrlHost(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || (isIP(hostname) === 4 && hostname.startsWith('127.'));
}

/** Whether `url` is https, or http to a loopback host (local mode). */
export function isSecureOrLoopback(url: URL): boolean {
  return url.protocol === 'https:' || (url.protocol === 'http:' && isLoopbackUrlHost(url.hostname));
}

/** An absolute https URL; http only to a loopback host (local mode). */
export const returnUrlSchema = z
  .string({ error: 'returnUrl must be a string' })
  .max(2048, 'returnUrl must be at most 2048 characters')
  .refine((value) => {
    try {
      return isSecureOrLoopback(new URL(value));
    } catch {
      return false;
    }
  }, 'returnUrl must be an absolute https URL (http only for localhost, 127.0.0.0/8 or [::1])');

export const portalLinkSchema = z.strictObject(
  {
    ttlSeconds: z
      .number({ error: `ttlSeconds must be a number of seconds from ${MIN_TTL_SECONDS} to ${MAX_TTL_SECONDS}` })
      .int('ttlSeconds must be a whole number of seconds')
      .min(MIN_TTL_SECONDS, `ttlSeconds must be at least ${MIN_TTL_SECONDS}`)
      .max(MAX_TTL_SECONDS, `ttlSeconds must be at most ${MAX_TTL_SECONDS} (a day)`),
    readOnly: z.boolean({ error: 'readOnly must be true or false' }).optional(),
    scopes: z
      .array(z.enum(PORTAL_SCOPES, { error: 'a portal scope is "read" or "write"' }), { error: 'scopes must be an array of "read" and "write"' })
      .min(1, 'scopes must name at least one of "read" and "write", or be left out')
      .max(PORTAL_SCOPES.length, 'scopes may name "read" and "write" once each')
      .optional(),
    maxSessions: z
      .number({ error: `maxSessions must be a number from 1 to ${MAX_MAX_SESSIONS}` })
      .int('maxSessions must be a whole number')
      .min(1, 'maxSessions must be at least 1')
      .max(MAX_MAX_SESSIONS, `maxSessions must be at most ${MAX_MAX_SESSIONS}`)
      .optional(),
    destinations: z
      .array(z.string({ error: 'a destination must be a destination id' }).regex(DESTINATION_ID, 'a destination must be a destination id: 1-63 lowercase letters, digits and hyphens'), {
        error: 'destinations must be an array of destination ids',
      })
      .min(1, 'destinations must name at least one destination, or be left out for all of them')
      .max(MAX_PORTAL_DESTINATIONS, `destinations may name at most ${MAX_PORTAL_DESTINATIONS}`)
      .optional(),
    returnUrl: returnUrlSchema.optional(),
  },
  { error: 'the portal link must be a JSON object {"ttlSeconds", "scopes"? or "readOnly"?, "destinations"?, "returnUrl"?, "maxSessions"?}' },
).refine((r) => r.readOnly === undefined || r.scopes === undefined, { message: 'give scopes or readOnly, not both: readOnly true is scopes ["read"]', path: ['readOnly'] });
export type PortalLinkRequest = z.infer<typeof portalLinkSchema>;

/** The scopes a link request asks for; undefined when it names none. */
function requestedScopes(request: Pick<PortalLinkRequest, 'readOnly' | 'scopes'>): PortalScope[] | undefined {
  if (request.scopes !== undefined) return orderScopes(request.scopes);
  if (request.readOnly !== undefined) return request.readOnly ? ['read'] : ['read', 'write'];
  return undefined;
}

/** Who mints a link, as domain/access/account.ts Caller has it (named here by shape: account.ts imports this module). */
export type LinkMinter = { kind: 'operator' } | { kind: 'key'; scopes: readonly string[] } | { kind: 'portal' };

export type LinkGrant = { ok: true; scopes: PortalScope[] } | { ok: false; error: string; issues: { path: string; message: string }[] };

/**
 * The scopes `minter` may put in a link (as keyGrant does for keys, domain/access/account.ts): the
 * operator any; a key only scopes it holds, and naming none gives the link the default
 * (`read`, `write`) narrowed to the key's own. Otherwise a `write`-only key would mint a link
 * that reads the whole account. A portal session mints nothing (the caller refuses it first).
 */
export function linkGrant(minter: LinkMinter, request: Pick<PortalLinkRequest, 'readOnly' | 'scopes'>): LinkGrant {
  const asked = requestedScopes(request);
  if (minter.kind === 'operator') return { ok: true, scopes: asked ?? [...DEFAULT_LINK_SCOPES] };
  if (minter.kind === 'portal') return { ok: false, error: 'a portal session cannot mint portal links', issues: [{ path: 'scopes', message: 'a portal session grants nothing' }] };
  const held = orderScopes(DEFAULT_LINK_SCOPES.filter((s) => minter.scopes.includes(s)));
  const missing = (asked ?? held).filter((s) => !held.includes(s));
  const path = request.scopes !== undefined ? 'scopes' : 'readOnly';
  if (missing.length > 0) {
    const names = missing.map((s) => JSON.stringify(s)).join(', ');
    return {
      ok: false,
      error: `this key cannot grant ${names} to a portal link: a key may grant only the scopes it holds (${minter.scopes.join(', ')}); leave scopes and readOnly out to grant ${held.length > 0 ? held.join(', ') : 'those'}, or mint the link with the admin token or a key that holds ${names}`,
      issues: [{ path, message: `${names} ${missing.length > 1 ? 'are not scopes' : 'is not a scope'} of the key minting the link (it holds ${minter.scopes.join(', ')})` }],
    };
  }
  if (held.length === 0) return { ok: false, error: 'this key holds neither "read" nor "write": it has nothing to grant to a portal link', issues: [{ path: 'scopes', message: 'the key minting the link holds neither "read" nor "write"' }] };
  return { ok: true, scopes: asked ?? held };
}

export const portalSessionSchema = z.strictObject({ token: z.string({ error: 'token must be the portal link token (after #portal= in the link)' }).min(1, 'token must not be empty') }, { error: 'the body must be {"token": "<portal link token>"}' });

/**
 * The claims of a new link: the request's, expiring `ttlSeconds` from `now`; destinations
 * deduplicated and sorted. Its scopes: `scopes` (as linkGrant decided them), else `readOnly`'s,
 * else reading and writing.
 */
export function linkClaims(account: string, request: Pick<PortalLinkRequest, 'ttlSeconds' | 'readOnly' | 'scopes' | 'destinations' | 'returnUrl'>, now: Date, id: string = newPortalId()): PortalClaims {
  const scopes = requestedScopes(request) ?? [...DEFAULT_LINK_SCOPES];
  return {
    id,
    account,
    readOnly: !scopes.includes('write'),
    scopes,
    ...(request.destinations !== undefined ? { destinations: [...new Set(request.destinations)].sort() } : {}),
    ...(request.returnUrl !== undefined ? { returnUrl: request.returnUrl } : {}),
    exp: Math.floor(now.getTime() / 1000) + request.ttlSeconds,
  };
}

// ---------------------------------------------------------------- theme

/** How the portal looks for an account (PATCH /admin/accounts/{id} "portal"). */
export interface PortalTheme {
  brandColor?: string;
  logoUrl?: string;
  displayName?: string;
}

export const MAX_LOGO_BYTES = 64 * 1024;
const DATA_LOGO = /^data:image\/(png|svg\+xml);base64,([A-Za-z0-9+/]+={0,2})$/;

const logoUrlSchema = z
  .string({ error: 'portal.logoUrl must be a string' })
  .superRefine((value, ctx) => {
    const data = DATA_LOGO.exec(value);
    if (value.startsWith('data:')) {
      if (!data) ctx.addIssue({ code: 'custom', message: 'portal.logoUrl as a data URL must be data:image/png;base64,… or data:image/svg+xml;base64,…' });
      else if (Buffer.byteLength(data[2]!, 'base64') > MAX_LOGO_BYTES) ctx.addIssue({ code: 'custom', message: `portal.logoUrl: the image must be at most ${MAX_LOGO_BYTES / 1024} KB` });
      return;
    }
    if (value.length > 2048) {
      ctx.addIssue({ code: 'custom', message: 'portal.logoUrl must be at most 2048 characters (or a data URL)' });
      return;
    }
    let url: URL | undefined;
    try {
      url = new URL(value);
    } catch {
      url = undefined;
    }
    if (url?.protocol !== 'https:') ctx.addIssue({ code: 'custom', message: 'portal.logoUrl must be an https URL, or a data:image/png or data:image/svg+xml base64 URL' });
  });

export const portalThemeSchema = z.strictObject(
  {
    brandColor: z.string({ error: 'portal.brandColor must be a string' }).regex(/^#[0-9a-fA-F]{6}$/, 'portal.brandColor must be a colour #RRGGBB, e.g. #0a66c2').nullable().optional(),
    logoUrl: logoUrlSchema.nullable().optional(),
    displayName: z.string({ error: 'portal.displayName must be a string' }).trim().min(1, 'portal.displayName must not be empty').max(100, 'portal.displayName must be at most 100 characters').nullable().optional(),
  },
  { error: 'portal must be a JSON object {"brandColor"?, "logoUrl"?, "displayName"?}, or null to remove it' },
);
export type PortalThemePatch = z.infer<typeof portalThemeSchema>;

/** The theme with the patch applied (null removes a field); undefined when nothing is left. */
export function patchTheme(current: PortalTheme | undefined, patch: PortalThemePatch | null): PortalTheme | undefined {
  if (patch === null) return undefined;
  const next: PortalTheme = { ...current };
  for (const field of ['brandColor', 'logoUrl', 'displayName'] as const) {
    const value = patch[field];
    if (value === null) delete next[field];
    else if (value !== undefined) next[field] = field === 'brandColor' ? value.toLowerCase() : value;
  }
  return Object.keys(next).length > 0 ? next : undefined;
}
