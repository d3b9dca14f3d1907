/**
 * The claims of a Google-issued OIDC ID token, as Pub/Sub push and Cloud Scheduler send
 * them: who the caller is (email, verified) and whom the token is for (the audience).
 * Pure: the caller passes the time.
 */

export const GOOGLE_ISSUERS = ['accounts.google.com', 'https://accounts.google.com'] as const;
/** What Cloud Run puts in place of a token's signature once its own IAM check has verified it. */
export const SIGNATURE_REMOVED = 'SIGNATURE_REMOVED_BY_GOOGLE';
/** As google-auth-library allows between clocks. */
export const CLOCK_SKEW_SECONDS = 300;

export interface ExpectedCaller {
  audience: string;
  /** Any of these service accounts. */
  emails: readonly string[];
}

export type ClaimsVerdict = { ok: true; email: string } | { ok: false; reason: string };

/**
 * Checks the caller's identity claims; with `checkValidity` also issuer, audience and time
 * (what signature verification checks too, needed when the signature was not Herald's to check).
 */
export function checkCallerClaims(claims: Record<string, unknown>, expected: ExpectedCaller, now: Date, checkValidity: boolean): ClaimsVerdict {
  if (checkValidity) {
    if (!GOOGLE_ISSUERS.includes(claims.iss as (typeof GOOGLE_ISSUERS)[number])) return { ok: false, reason: 'the token was not issued by Google' };
    const audiences = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
    if (!audiences.includes(expected.audience)) return { ok: false, reason: `the token's audience is not ${expected.audience}` };
    const seconds = now.getTime() / 1000;
    if (typeof claims.exp !== 'number' || seconds > claims.exp + CLOCK_SKEW_SECONDS) return { ok: false, reason: 'the token has expired' };
    if (typeof claims.iat === 'number' && seconds < claims.iat - CLOCK_SKEW_SECONDS) return { ok: false, reason: 'the token is not valid yet' };
  }
  const email = claims.email;
  if (typeof email !== 'string' || !expected.emails.includes(email)) return { ok: false, reason: `the token is not for ${expected.emails.join(' or ')}` };
  if (claims.email_verified !== true) return { ok: false, reason: "the token's email is not verified" };
  return { ok: true, email };
}

/** The claims of a compact JWS without checking its signature; undefined if it is not one. */
export function unverifiedClaims(jwt: string): Record<string, unknown> | undefined {
  const parts = jwt.split('.');
  if (parts.length !== 3 || !parts[1]) return undefined;
  try {
    const claims: unknown = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8'));
    return typeof claims === 'object' && claims !== null && !Array.isArray(claims) ? (claims as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The verification library's error, as a reason safe to log and answer: its messages quote the whole token. */
export function verificationFailure(message: string): string {
  const known: [RegExp, string][] = [
    [/^Wrong number of segments|^Can't parse token/, 'the bearer token is not a JWT'],
    [/^No pem found/, 'the token is signed with a key Google does not publish'],
    [/^Invalid token signature/, "the token's signature does not verify"],
    [/^No issue time|^No expiration time|field using invalid format/, 'the token lacks valid iat/exp claims'],
    [/^Expiration time too far/, 'the token expires too far in the future'],
    [/^Token used too early/, 'the token is not valid yet'],
    [/^Token used too late/, 'the token has expired'],
    [/^Invalid issuer/, 'the token was not issued by Google'],
    [/^Wrong recipient|audience/i, "the token's audience is not this function"],
  ];
  return known.find(([pattern]) => pattern.test(message))?.[1] ?? 'the token could not be verified';
}
