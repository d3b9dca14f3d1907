import type { ReceiverAuth } from '../domain/destinations/receiver-spec';
import type { AttemptResult } from '../domain/retry/delivery';

export type OAuth2ClientCredentials = Extract<ReceiverAuth, { type: 'oauth2ClientCredentials' }>;

/** An access token, or why none could be had: the token endpoint's failure, classified as an attempt's. */
export type TokenAnswer = { ok: true; token: string } | { ok: false; failure: AttemptResult };

/** OAuth2 client-credentials tokens for receivers, cached per destination (adapters/oauth2-tokens.ts). */
export interface ReceiverTokens {
  /** `refresh`: the cached token was refused (a 401): fetch a new one, whatever its expiry says. */
  token(destinationId: string, auth: OAuth2ClientCredentials, options: { refresh: boolean; timeoutMs: number }): Promise<TokenAnswer>;
}
