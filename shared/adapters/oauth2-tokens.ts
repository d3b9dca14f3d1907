import { createHash } from 'node:crypto';
import * as oauth from 'oauth4webapi';
import { Agent, fetch as undiciFetch } from 'undici';
import { AddressRules, checkTargetUrl } from '../domain/access/address-policy';
import type { AttemptResult } from '../domain/retry/delivery';
import { tokenRefreshAt } from '../domain/delivery/token-lifetime';
import type { HostResolver } from '../ports/http';
import type { OAuth2ClientCredentials, ReceiverTokens, TokenAnswer } from '../ports/receiver-tokens';
import { blockedCause, guardedConnector, systemResolver } from './guarded-lookup';

interface Cached {
  /** Digest of the settings it was fetched with: changed credentials fetch anew. */
  settings: string;
  token: string;
  refreshAt: number;
}

export interface OAuth2TokensOptions {
  rules: AddressRules;
  resolver?: HostResolver;
  now?: () => number;
}

/**
 * OAuth2 client-credentials tokens (RFC 6749 §4.4) for receivers, with oauth4webapi doing the
 * protocol (request, client authentication, response validation). Cached per destination until
 * shortly before expiry (domain/delivery/token-lifetime.ts); concurrent attempts share one
 * request. The token endpoint is reached through the same SSRF guard as webhooks, and its
 * failures come back as an attempt's would, for the retry policy to decide.
 */
export class OAuth2Tokens implements ReceiverTokens {
  private readonly cache = new Map<string, Cached>();
  private readonly pending = new Map<string, Promise<TokenAnswer>>();
  private readonly dispatcher: Agent;
  private readonly now: () => number;
  /** Token requests made (tests and the cost check count them). */
  requests = 0;

  constructor(private readonly options: OAuth2TokensOptions) {
    this.dispatcher = new Agent({ keepAliveTimeout: 10_000, connections: 16, connect: guardedConnector(options.resolver ?? systemResolver, options.rules) });
    this.now = options.now ?? Date.now;
  }

  async token(destinationId: string, auth: OAuth2ClientCredentials, options: { rejected?: string; timeoutMs: number }): Promise<TokenAnswer> {
    const settings = digest(auth);
    const cached = this.cache.get(destinationId);
    const fresh = cached && cached.settings === settings && cached.token !== options.rejected && (options.rejected !== undefined || this.now() < cached.refreshAt);
    if (fresh) return { ok: true, token: cached.token };
    const key = `${destinationId}\0${settings}`;
    let inFlight = this.pending.get(key);
    if (!inFlight) {
      inFlight = this.fetchToken(destinationId, auth, settings, options.timeoutMs).finally(() => this.pending.delete(key));
      this.pending.set(key, inFlight);
    }
    return inFlight;
  }

  private async fetchToken(destinationId: string, auth: OAuth2ClientCredentials, settings: string, timeoutMs: number): Promise<TokenAnswer> {
    const started = this.now();
    const failed = (result: DistributiveOmit<AttemptResult, 'durationMs'>): TokenAnswer => ({ ok: false, failure: { ...result, durationMs: this.now() - started } as AttemptResult });
    const verdict = checkTargetUrl(auth.tokenUrl, this.options.rules);
    if (!verdict.ok) {
      const b = verdict.blocked;
      return b ? failed({ kind: 'blocked', address: b.address, addressClass: b.addressClass, error: `token endpoint: ${verdict.message}` }) : failed({ kind: 'network', error: `EHERALD_OAUTH2: token endpoint: ${verdict.message}` });
    }
    const as: oauth.AuthorizationServer = { issuer: new URL(auth.tokenUrl).origin, token_endpoint: auth.tokenUrl };
    const client: oauth.Client = { client_id: auth.clientId };
    const parameters = new URLSearchParams();
    if (auth.scopes?.length) parameters.set('scope', auth.scopes.join(' '));
    if (auth.audience !== undefined) parameters.set('audience', auth.audience);
    const signal = AbortSignal.timeout(timeoutMs);
    this.requests++;
    try {
      const response = await oauth.clientCredentialsGrantRequest(as, client, oauth.ClientSecretBasic(auth.clientSecret), parameters, {
        signal,
        // The scheme was judged by checkTargetUrl (https, or loopback in local mode).
        [oauth.allowInsecureRequests]: true,
        [oauth.customFetch]: (url, init) => undiciFetch(url, { ...init, dispatcher: this.dispatcher } as Parameters<typeof undiciFetch>[1]) as unknown as Promise<Response>,
      });
      if (!response.ok) {
        // Classified as the receiver's answer would be: a 5xx or 429 retried, a 4xx as the policy says.
        const excerpt = (await response.text().catch(() => '')).slice(0, 200);
        return failed({ kind: 'response', status: response.status, bodyExcerpt: `token endpoint ${auth.tokenUrl} answered ${response.status}: ${excerpt}` });
      }
      const answer = await oauth.processClientCredentialsResponse(as, client, response);
      // Counted from the request: the server issued the token no earlier.
      this.cache.set(destinationId, { settings, token: answer.access_token, refreshAt: tokenRefreshAt(started, answer.expires_in) });
      return { ok: true, token: answer.access_token };
    } catch (e) {
      const blocked = blockedCause(e);
      if (blocked) return failed({ kind: 'blocked', address: blocked.blocked.address, addressClass: blocked.blocked.addressClass, error: `token endpoint: ${blocked.message}` });
      if (signal.aborted) return failed({ kind: 'timeout', timeoutMs });
      const err = e as Error;
      const code = errorCode(e);
      // Never the destination's credentials: oauth4webapi's messages name the response, not the request.
      return failed({ kind: 'network', error: `EHERALD_OAUTH2: token endpoint ${auth.tokenUrl}: ${code ? `${code}: ` : ''}${err.message}` });
    }
  }

  /** Forget a destination's token (it was deleted or changed). */
  forget(destinationId: string): void {
    this.cache.delete(destinationId);
  }

  close(): Promise<void> {
    return this.dispatcher.close();
  }
}

/** The first `code` along the error's causes (undici's fetch wraps ECONNREFUSED in "fetch failed"). */
function errorCode(e: unknown): string | undefined {
  // Duck-typed: undici's errors may come from another realm (Jest's), where instanceof Error fails.
  for (let cause = e as { code?: unknown; cause?: unknown } | undefined, depth = 0; typeof cause === 'object' && cause !== null && depth < 5; cause = cause.cause as typeof cause, depth++) {
    if (typeof cause.code === 'string') return cause.code;
  }
  return undefined;
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

function digest(auth: OAuth2ClientCredentials): string {
  return createHash('sha256').update(JSON.stringify([auth.tokenUrl, auth.clientId, auth.clientSecret, auth.scopes ?? [], auth.audience ?? ''])).digest('hex');
}
