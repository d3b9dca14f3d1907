/**
 * When a cached OAuth2 access token is fetched again. Its life counts from when it was asked
 * for (the server issued it no earlier), and it is refreshed a tenth of its life before it
 * expires, at most a minute, but never so early that it serves less than MIN_USE_MS: at
 * 10 events/s a token used 10 s costs one request per 100 deliveries, the ≤ 0.01 the cost
 * target allows, where a 10 % margin on a 10 s token would cost one per 90. A short token is
 * thus used up to its expiry; one the receiver finds expired on the way is answered by the
 * 401 refresh (webhook-send.ts). A token without `expires_in` (RFC 6749 only recommends it)
 * is kept DEFAULT_LIFETIME_S, or until a 401.
 */
export const DEFAULT_LIFETIME_S = 300;
const MAX_MARGIN_MS = 60_000;
/** At 10 events/s, 100 deliveries: the least a token must serve for ≤ 0.01 token requests a delivery. */
export const MIN_USE_MS = 10_000;

export function tokenRefreshAt(requestedAtMs: number, expiresInS: number | undefined): number {
  const lifeMs = Math.max(0, (expiresInS ?? DEFAULT_LIFETIME_S) * 1000);
  const marginMs = Math.min(MAX_MARGIN_MS, lifeMs / 10, Math.max(0, lifeMs - MIN_USE_MS));
  return requestedAtMs + lifeMs - marginMs;
}
