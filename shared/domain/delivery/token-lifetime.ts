/**
 * When a cached OAuth2 access token is fetched again: before it expires by a margin that
 * shrinks with short-lived tokens (a tenth of its life, at most a minute), so an hour's token is
 * refreshed a minute early and a 10 s one after 9 s, not on every delivery. A token without
 * `expires_in` (RFC 6749 only recommends it) is kept DEFAULT_LIFETIME_S, or until a 401.
 */
export const DEFAULT_LIFETIME_S = 300;
const MAX_MARGIN_MS = 60_000;

export function tokenRefreshAt(obtainedAtMs: number, expiresInS: number | undefined): number {
  const lifeMs = Math.max(0, (expiresInS ?? DEFAULT_LIFETIME_S) * 1000);
  return obtainedAtMs + lifeMs - Math.min(MAX_MARGIN_MS, lifeMs / 10);
}
