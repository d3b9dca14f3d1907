import type { SentRequest } from '../../domain/retry/attempt-detail';
import type { AttemptResult } from '../../domain/retry/delivery';
import type { Destination } from '../../domain/destinations/destination';
import { credentialsRefused, fallbackCredentials } from '../../domain/destinations/credential-rotation';
import { profilesAt } from '../../domain/delivery/receiver-headers';
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
 * One webhook attempt as the destination's receiver wants it (docs/what-a-destination-receives.md):
 * its client certificate on a connection of its own, and for OAuth2 a bearer token from the
 * per-destination cache; a 401 answered to a cached token fetches a new one and sends once
 * more. A token endpoint that fails makes the attempt fail the same way (the retry policy
 * decides), and nothing is sent to the receiver without a token. Within a rotate-auth grace
 * period an attempt the receiver refuses (401, 403, a rejected client certificate) is sent once
 * more with the replaced credentials, and its detail says so.
 */
export async function sendWebhook(deps: WebhookSendDeps, destination: Destination, build: Build, timeoutMs: number, now: Date): Promise<Sent> {
  const started = Date.now();
  const first = await sendAs(deps, destination, destination.id, build, timeoutMs);
  const previous = fallbackCredentials(destination, now);
  if (!previous || !credentialsRefused(first.result, previous)) return first;
  const remaining = Math.max(1, timeoutMs - (Date.now() - started));
  // The replaced auth's token is cached apart: each is the token of its own client.
  const again = await sendAs(deps, { ...destination, ...previous }, previous.auth ? `${destination.id}#previous` : destination.id, build, remaining);
  const receiver = again.sent.receiver ?? { signature: profilesAt(destination.signature, now) };
  return { ...again, sent: { ...again.sent, receiver: { ...receiver, replaced: Object.keys(previous) as (keyof typeof previous)[] } } };
}

/** A 401 to a cached bearer token: fetched anew once (the token expired on the way, or was revoked). */
const tokenRefused = (result: AttemptResult) => result.kind === 'response' && result.status === 401;

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
  if (!tokenRefused(first.result) || first.token === undefined) return first;
  return attempt(first.token);
}

function httpRequestOf(sent: SentRequest, destination: Destination, timeoutMs: number): HttpRequest {
  return { url: sent.target, headers: { ...sent.headers }, body: sent.body, timeoutMs, ...(destination.tls ? { tls: destination.tls } : {}) };
}
