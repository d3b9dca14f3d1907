import { createHmac } from 'node:crypto';
import type { Destination } from '../destinations/destination';
import type { SignatureProfileName, SignatureSpec } from '../destinations/receiver-spec';
import { signatureHeaders } from './signing';
import type { AttemptDetail } from '../retry/delivery';

/**
 * The headers a webhook attempt carries for its receiver (docs/what-a-destination-receives.md),
 * pure: the destination's static headers, its auth, then the signature of each profile in force.
 * Herald's own headers are written after the custom ones, so none can be overridden (the spec
 * refuses their names too).
 */

/** What the attempt detail shows of how the receiver was reached; never a credential. */
export type ReceiverUse = NonNullable<AttemptDetail['receiver']>;

export interface ReceiverHeaders {
  /** Static headers and auth: to be sent before Herald's own. */
  before: Record<string, string>;
  /** The signatures of the profiles in force. */
  signatures: Record<string, string>;
  /** Lower-case names whose values are credentials: the attempt detail masks them. */
  secretNames: string[];
  /** Absent for a destination reached the default way (no auth, Standard Webhooks): its records stay as they were. */
  use?: ReceiverUse;
}

/** The profiles whose signatures an attempt made at `at` carries: both of a migration until its cut-over. */
export function profilesAt(signature: SignatureSpec | undefined, at: Date): SignatureProfileName[] {
  if (signature === undefined) return ['standard-webhooks'];
  if (typeof signature === 'string') return [signature];
  return at.getTime() < Date.parse(signature.cutoverAt) ? [signature.from, signature.to] : [signature.to];
}

/**
 * GitHub's `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>`, keyed with the secret
 * as text (as GitHub's receivers configure it). During a rotation each live secret's signature
 * is listed, comma-separated, current first: a receiver holding one of them finds its own.
 */
export function githubSignature(secrets: readonly string[], body: Buffer): string {
  return secrets.map((secret) => `sha256=${createHmac('sha256', Buffer.from(secret, 'utf8')).update(body).digest('hex')}`).join(', ');
}

export function basicCredentials(username: string, password: string): string {
  return `Basic ${Buffer.from(`${username}:${password}`, 'utf8').toString('base64')}`;
}

/**
 * `bearer`: the OAuth2 access token for an `oauth2ClientCredentials` destination, fetched by
 * the caller (the domain does no I/O); without one no Authorization is sent.
 */
export function receiverHeaders(
  destination: Pick<Destination, 'headers' | 'auth' | 'tls' | 'signature'>,
  sign: { secrets: readonly string[]; webhookId: string; at: Date; body: Buffer },
  bearer?: string,
): ReceiverHeaders {
  const before: Record<string, string> = {};
  const secretNames: string[] = [];
  for (const [name, value] of Object.entries(destination.headers ?? {})) {
    const lower = name.toLowerCase();
    if (typeof value === 'string') before[lower] = value;
    else {
      before[lower] = value.secret;
      secretNames.push(lower);
    }
  }
  const auth = destination.auth;
  if (auth?.type === 'apiKey') {
    before[auth.header.toLowerCase()] = auth.value;
    secretNames.push(auth.header.toLowerCase());
  } else if (auth?.type === 'basic') {
    before.authorization = basicCredentials(auth.username, auth.password);
  } else if (auth?.type === 'oauth2ClientCredentials' && bearer !== undefined) {
    before.authorization = `Bearer ${bearer}`;
  }
  const profiles = profilesAt(destination.signature, sign.at);
  let signatures: Record<string, string> = {};
  for (const profile of profiles) {
    if (profile === 'standard-webhooks') signatures = { ...signatures, ...signatureHeaders(sign.secrets, sign.webhookId, sign.at, sign.body) };
    else signatures['x-hub-signature-256'] = githubSignature(sign.secrets, sign.body);
  }
  if (!auth && !destination.tls && destination.signature === undefined) return { before, signatures, secretNames };
  const use: ReceiverUse = { signature: profiles };
  if (auth) use.auth = auth.type;
  else if (destination.tls) use.auth = 'mtls';
  return { before, signatures, secretNames, use };
}
