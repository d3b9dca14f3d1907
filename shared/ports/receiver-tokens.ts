import type { ReceiverAuth } from '../domain/destinations/receiver-spec';
import type { AttemptResult } from '../domain/retry/delivery';

export type OAuth2ClientCredentials = Extract<ReceiverAuth, { type: 'oauth2ClientCredentials' }>;

/** An access token, or why none could be had: the token endpoint's failure, classified as an attempt's. */
export type TokenAnswer = { ok: true; token: string } | { ok: false; failure: AttemptResult };

/** OAuth2 client-credentials tokens for receivers, cached per destination (adapters/oauth2-tokens.ts). */
export interface ReceiverTokens {
  /**
   * `rejected`: a token the receiver refused (a 401): a new one is fetched unless the cache
   * already holds another (a concurrent attempt refreshed it), so a burst of 401s costs one request.
   */
  token(destinationId: string, auth: OAuth2ClientCredentials, options: { rejected?: string; timeoutMs: number }): Promise<TokenAnswer>;
}
