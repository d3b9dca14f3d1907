import type { SentRequest } from '../../domain/retry/attempt-detail';
import type { AttemptResult } from '../../domain/retry/delivery';
import type { Destination } from '../../domain/destinations/destination';
import type { HttpRequest, HttpSender } from '../../ports/http';
import type { ReceiverTokens } from '../../ports/receiver-tokens';

export interface WebhookSendDeps {
  http: HttpSender;
  /** OAuth2 client-credentials tokens; absent: such destinations fail as a network error would, saying why. */
  tokens?: ReceiverTokens;
}

/**
 * One webhook attempt as the destination's receiver wants it (SPEC "Reaching receivers as they
 * are"): its client certificate on a connection of its own, and for OAuth2 a bearer token from
 * the per-destination cache; a 401 answered to a cached token fetches a new one and sends once
 * more. A token endpoint that fails makes the attempt fail the same way (the retry policy
 * decides), and nothing is sent to the receiver without a token.
 */
export async function sendWebhook(deps: WebhookSendDeps, destination: Destination, build: (bearer?: string) => SentRequest, timeoutMs: number): Promise<{ result: AttemptResult; sent: SentRequest }> {
  const auth = destination.auth;
  if (auth?.type !== 'oauth2ClientCredentials') {
    const sent = build();
    return { result: await deps.http.send(httpRequestOf(sent, destination, timeoutMs)), sent };
  }
  const started = Date.now();
  const attempt = async (rejected?: string) => {
    if (!deps.tokens) return { result: { kind: 'network', durationMs: 0, error: 'EHERALD_OAUTH2: this deployment has no OAuth2 token client' } as AttemptResult, sent: build() };
    const answer = await deps.tokens.token(destination.id, auth, { ...(rejected !== undefined ? { rejected } : {}), timeoutMs });
    if (!answer.ok) return { result: answer.failure, sent: build() };
    const sent = build(answer.token);
    return { result: await deps.http.send(httpRequestOf(sent, destination, Math.max(1, timeoutMs - (Date.now() - started)))), sent, token: answer.token };
  };
  const first = await attempt();
  if (first.result.kind !== 'response' || first.result.status !== 401 || first.token === undefined) return first;
  return attempt(first.token);
}

function httpRequestOf(sent: SentRequest, destination: Destination, timeoutMs: number): HttpRequest {
  return { url: sent.target, headers: { ...sent.headers }, body: sent.body, timeoutMs, ...(destination.tls ? { tls: destination.tls } : {}) };
}
