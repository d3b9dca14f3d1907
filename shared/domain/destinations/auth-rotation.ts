import { z } from 'zod';
import type { Destination } from './destination';
import { authSchema, ReceiverAuth } from './receiver-spec';
import { DEFAULT_GRACE_SECONDS, graceSecondsSchema } from './secret-rotation';

/**
 * Rotating a receiver credential with a grace period, for receivers whose own switch-over is
 * not instant: the new auth is used at once, and while the grace period lasts an attempt the
 * receiver (or its token endpoint) refuses with a 401 is sent once more with the replaced one.
 * A receiver that takes the new credential from the start never sees the old one again.
 */

export const rotateAuthSchema = z.strictObject(
  {
    auth: authSchema,
    graceSeconds: graceSecondsSchema.optional(),
  },
  { error: 'the body must be a JSON object {"auth": {…}, "graceSeconds"?: N}' },
);

export type AuthRotation = { ok: true; destination: Destination; graceSeconds: number } | { ok: false; message: string };

export function rotateAuth(destination: Destination, auth: ReceiverAuth, graceSeconds: number | undefined, now: Date): AuthRotation {
  if (destination.url === undefined) return { ok: false, message: 'a Pub/Sub-topic destination has no receiver auth' };
  if (destination.auth === undefined) return { ok: false, message: 'the destination has no auth to rotate: set one with PUT' };
  const grace = graceSeconds ?? DEFAULT_GRACE_SECONDS;
  const { previousAuth: _old, ...rest } = destination;
  const rotated: Destination = { ...rest, auth, updatedAt: now.toISOString() };
  if (grace > 0) rotated.previousAuth = { auth: destination.auth, expiresAt: new Date(now.getTime() + grace * 1000).toISOString() };
  return { ok: true, destination: rotated, graceSeconds: grace };
}

/** The replaced auth an attempt at `now` may fall back to after a 401. */
export function fallbackAuth(destination: Pick<Destination, 'previousAuth'>, now: Date): ReceiverAuth | undefined {
  const previous = destination.previousAuth;
  return previous && previous.expiresAt > now.toISOString() ? previous.auth : undefined;
}
