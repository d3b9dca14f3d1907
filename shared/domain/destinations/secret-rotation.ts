import { z } from 'zod';
import { Destination, SECRET, unexpiredSecrets } from './destination';

/**
 * Rotating a destination's signing secret without a gap (Standard Webhooks): the new secret
 * signs at once, and the one it replaces keeps signing beside it for a grace period, so a
 * receiver still holding the old secret verifies every delivery until it has switched.
 */

export const DEFAULT_GRACE_SECONDS = 24 * 3600;
export const MAX_GRACE_SECONDS = 30 * 24 * 3600;
/** Replaced secrets kept at once: rotating again within the grace period keeps the older ones too, up to this many. */
export const MAX_PREVIOUS_SECRETS = 4;

/** How long a replaced secret or credential stays valid, in seconds (every rotation's). */
export const graceSecondsSchema = z
  .number({ error: 'graceSeconds must be a number of seconds' })
  .int('graceSeconds must be a whole number of seconds')
  .min(0, `graceSeconds must be 0–${MAX_GRACE_SECONDS} (30 days)`)
  .max(MAX_GRACE_SECONDS, `graceSeconds must be 0–${MAX_GRACE_SECONDS} (30 days)`);

export const rotateSecretSchema = z.strictObject(
  {
    secret: z.string({ error: 'secret must be a string' }).regex(SECRET, 'secret must be whsec_ followed by base64 of 24 to 64 random bytes').optional(),
    graceSeconds: graceSecondsSchema.optional(),
  },
  { error: 'the body must be a JSON object {"secret"?: "whsec_…", "graceSeconds"?: N}' },
);
export type RotateSecretRequest = z.infer<typeof rotateSecretSchema>;

/** Every secret that signs a delivery made at `now`: the current one first, then replaced ones still in their grace period. */
export function signingSecrets(destination: Pick<Destination, 'secret' | 'previousSecrets'>, now: Date): string[] {
  return [destination.secret, ...unexpiredSecrets(destination.previousSecrets, now).map((p) => p.secret)];
}

export type Rotation = { ok: true; destination: Destination; previousExpiresAt?: string } | { ok: false; message: string };

/**
 * The destination signing with `newSecret` from `now`, its current secret kept for
 * `graceSeconds` (0: dropped at once). Expired replaced secrets are dropped here too.
 */
export function rotateSecret(destination: Destination, newSecret: string, graceSeconds: number, now: Date): Rotation {
  const live = unexpiredSecrets(destination.previousSecrets, now);
  if (newSecret === destination.secret || live.some((p) => p.secret === newSecret)) {
    return { ok: false, message: 'the new secret must differ from the current one and from those still in a grace period' };
  }
  const expiresAt = new Date(now.getTime() + graceSeconds * 1000).toISOString();
  const previous = graceSeconds > 0 ? [{ secret: destination.secret, expiresAt }, ...live].slice(0, MAX_PREVIOUS_SECRETS) : live;
  const { previousSecrets: _old, ...rest } = destination;
  const rotated: Destination = { ...rest, secret: newSecret, updatedAt: now.toISOString(), ...(previous.length ? { previousSecrets: previous } : {}) };
  return { ok: true, destination: rotated, ...(graceSeconds > 0 ? { previousExpiresAt: expiresAt } : {}) };
}
