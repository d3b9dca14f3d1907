import type { SentRequest } from '../../domain/retry/attempt-detail';
import type { AttemptResult } from '../../domain/retry/delivery';
import type { Destination } from '../../domain/destinations/destination';
import { fallbackAuth } from '../../domain/destinations/auth-rotation';
import type { HttpRequest, HttpSender } from '../../ports/http';
import type { ReceiverTokens } from '../../ports/receiver-tokens';

export interface WebhookSendDeps {
  http: HttpSender;
  /** OAuth2 client-credentials tokens; absent: such destinations fail as a network error would, saying why. */
  tokens?: ReceiverTokens;
}

type Sent = { result: AttemptResult; sent: SentRequest };
type Build = (destination: Destination, bearer?: string) => SentRequest;

/**
 * One webhook attempt as the destination's receiver wants it (SPEC "Reaching receivers as they
 * are"): its client certificate on a connection of its own, and for OAuth2 a bearer token from
 * the per-destination cache; a 401 answered to a cached token fetches a new one and sends once
 * more. A token endpoint that fails makes the attempt fail the same way (the retry policy
 * decides), and nothing is sent to the receiver without a token. Within a rotate-auth grace
 * period a 401 to the new auth is answered by sending once with the replaced one.
 */
export async function sendWebhook(deps: WebhookSendDeps, destination: Destination, build: Build, timeoutMs: number, now: Date): Promise<Sent> {
  const started = Date.now();
  const first = await sendAs(deps, destination, destination.id, build, timeoutMs);
  const previous = fallbackAuth(destination, now);
  if (!previous || !refused(first.result)) return first;
  const remaining = Math.max(1, timeoutMs - (Date.now() - started));
  return sendAs(deps, { ...destination, auth: previous }, `${destination.id}#previous`, build, remaining);
}

const refused = (result: AttemptResult) => result.kind === 'response' && result.status === 401;

async function sendAs(deps: WebhookSendDeps, destination: Destination, tokenKey: string, build: Build, timeoutMs: number): Promise<Sent> {
  const auth = destination.auth;
  if (auth?.type !== 'oauth2ClientCredentials') {
    const sent = build(destination);
    return { result: await deps.http.send(httpRequestOf(sent, destination, timeoutMs)), sent };
  }
  const started = Date.now();
  const attempt = async (rejected?: string): Promise<Sent & { token?: string }> => {
    if (!deps.tokens) return { result: { kind: 'network', durationMs: 0, error: 'EHERALD_OAUTH2: this deployment has no OAuth2 token client' }, sent: build(destination) };
    const answer = await deps.tokens.token(tokenKey, auth, { ...(rejected !== undefined ? { rejected } : {}), timeoutMs });
    if (!answer.ok) return { result: answer.failure, sent: build(destination) };
    const sent = build(destination, answer.token);
    return { result: await deps.http.send(httpRequestOf(sent, destination, Math.max(1, timeoutMs - (Date.now() - started)))), sent, token: answer.token };
  };
  const first = await attempt();
  if (!refused(first.result) || first.token === undefined) return first;
  return attempt(first.token);
}

function httpRequestOf(sent: SentRequest, destination: Destination, timeoutMs: number): HttpRequest {
  return { url: sent.target, headers: { ...sent.headers }, body: sent.body, timeoutMs, ...(destination.tls ? { tls: destination.tls } : {}) };
}
