import { z } from 'zod';
import type { AttemptResult } from '../retry/delivery';
import type { Destination } from './destination';
import { authSchema, headersSchema, ReceiverSettings, REPLACED, ROTATABLE, RotatableCredential, tlsSchema } from './receiver-spec';
import { DEFAULT_GRACE_SECONDS, graceSecondsSchema } from './secret-rotation';

/**
 * Rotating receiver credentials (auth, the static headers, the client certificate) with a grace
 * period, for receivers whose own switch-over is not instant. A receiver takes one credential
 * per request, so it cannot be given both: the new one is used at once, and while the grace
 * period lasts an attempt the receiver refuses (401 or 403, its token endpoint's 401, or a TLS
 * handshake that rejects the client certificate) is sent once more with the replaced ones. A
 * receiver that takes the new credential from the start never sees the old one again.
 */

export type Credentials = Partial<Pick<ReceiverSettings, RotatableCredential>>;

export const rotateCredentialsSchema = z
  .strictObject(
    {
      auth: authSchema.optional(),
      headers: headersSchema.optional(),
      tls: tlsSchema.optional(),
      graceSeconds: graceSecondsSchema.optional(),
    },
    { error: 'the body must be a JSON object {"auth"?, "headers"?, "tls"?, "graceSeconds"?: N}' },
  )
  .refine((b) => ROTATABLE.some((k) => b[k] !== undefined), { message: 'give the new "auth", "headers" or "tls" (or several)' });

export type CredentialRotation = { ok: true; destination: Destination; graceSeconds: number; rotated: RotatableCredential[] } | { ok: false; message: string };

export function rotateCredentials(destination: Destination, given: Credentials, graceSeconds: number | undefined, now: Date): CredentialRotation {
  if (destination.url === undefined) return { ok: false, message: 'a Pub/Sub-topic destination has no receiver credentials' };
  const keys = ROTATABLE.filter((k) => given[k] !== undefined);
  const missing = keys.find((k) => destination[k] === undefined);
  if (missing) return { ok: false, message: `the destination has no ${missing} to rotate: set ${missing === 'auth' ? 'one' : 'them'} with PUT` };
  const grace = graceSeconds ?? DEFAULT_GRACE_SECONDS;
  const expiresAt = new Date(now.getTime() + grace * 1000).toISOString();
  const rotated: Record<string, unknown> = { ...destination, updatedAt: now.toISOString() };
  for (const key of keys) {
    // A second rotation within the grace period replaces the kept credential: the receiver took the one in between, or never will.
    delete rotated[REPLACED[key]];
    rotated[key] = given[key];
    if (grace > 0) rotated[REPLACED[key]] = { [key]: destination[key], expiresAt };
  }
  return { ok: true, destination: rotated as unknown as Destination, graceSeconds: grace, rotated: keys };
}

/** The replaced credentials an attempt at `now` may fall back to after a refusal, or undefined when none is in its grace period. */
export function fallbackCredentials(destination: ReceiverSettings, now: Date): Credentials | undefined {
  const at = now.toISOString();
  const found: Record<string, unknown> = {};
  for (const key of ROTATABLE) {
    const kept = destination[REPLACED[key]] as ({ expiresAt: string } & Record<string, unknown>) | undefined;
    if (kept && kept.expiresAt > at) found[key] = kept[key];
  }
  return Object.keys(found).length ? (found as Credentials) : undefined;
}

/**
 * How a receiver refuses a client certificate in the handshake: a TLS alert (OpenSSL's names,
 * as Node reports them), or, with TLS 1.3, where the client has finished its side before the
 * server checks the certificate, a connection closed before any answer (Node's servers send
 * no alert). Only counted when a replaced certificate is there to try.
 */
const CERTIFICATE_REFUSED =
  /^(ERR_SSL_(SSLV3|TLSV1|TLSV13)_ALERT_(BAD_CERTIFICATE|CERTIFICATE_REQUIRED|CERTIFICATE_UNKNOWN|CERTIFICATE_REVOKED|CERTIFICATE_EXPIRED|UNSUPPORTED_CERTIFICATE|UNKNOWN_CA|ACCESS_DENIED|DECRYPT_ERROR)|UND_ERR_SOCKET: other side closed|ECONNRESET)\b/;

/** Whether the receiver refused the credentials an attempt carried, so that the `replaced` ones are tried once more. */
export function credentialsRefused(result: AttemptResult, replaced: Credentials): boolean {
  if (result.kind === 'response') return result.status === 401 || result.status === 403;
  return result.kind === 'network' && replaced.tls !== undefined && CERTIFICATE_REFUSED.test(result.error);
}
