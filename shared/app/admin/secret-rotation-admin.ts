import { INTERNAL_DESTINATION_ID } from '../../domain/ids';
import { DestinationView, generateSecret, viewOf } from '../../domain/destinations/destination';
import { issuesFromZod } from '../../domain/events/event';
import { DEFAULT_GRACE_SECONDS, rotateSecret, rotateSecretSchema } from '../../domain/destinations/secret-rotation';
import { AdminDeps, badId, notFound } from './destinations-admin';
import { Outcome } from '../support/outcome';

type Refusal = { kind: 'not-found' | 'conflict' | 'invalid'; message: string };

/**
 * POST /admin/destinations/{id}/rotate-secret: a new signing secret (Herald's, or the one in
 * the body) from now on, the replaced one still signing beside it for `graceSeconds` (24 h by
 * default). One transaction on the destination; the answer shows the new secret, once.
 */
export async function postRotateSecret(deps: Pick<AdminDeps, 'destinations' | 'directory' | 'clock' | 'log'>, id: string, body: unknown): Promise<Outcome<DestinationView & { secret: string }>> {
  if (!INTERNAL_DESTINATION_ID.test(id)) return badId(id);
  const parsed = rotateSecretSchema.safeParse(body ?? {});
  if (!parsed.success) return { kind: 'invalid', body: { error: 'invalid rotate-secret request', issues: issuesFromZod(parsed.error) } };
  const secret = parsed.data.secret ?? generateSecret();
  const graceSeconds = parsed.data.graceSeconds ?? DEFAULT_GRACE_SECONDS;
  const now = deps.clock.now();
  let refusal: Refusal | undefined;
  const rotated = await deps.destinations.update(id, (current) => {
    refusal = undefined;
    if (!current) {
      refusal = { kind: 'not-found', message: '' };
      return undefined;
    }
    if (current.url === undefined) {
      refusal = { kind: 'conflict', message: `destination ${id} publishes to a Pub/Sub topic, whose messages are not signed: it has no secret to rotate` };
      return undefined;
    }
    const result = rotateSecret(current, secret, graceSeconds, now);
    if (!result.ok) refusal = { kind: 'invalid', message: result.message };
    return result.ok ? result.destination : undefined;
  });
  if (!rotated || refusal) {
    if (!refusal || refusal.kind === 'not-found') return notFound(id);
    if (refusal.kind === 'invalid') return { kind: 'invalid', body: { error: 'invalid rotate-secret request', issues: [{ path: 'secret', message: refusal.message }] } };
    return { kind: 'conflict', body: { error: refusal.message } };
  }
  deps.directory.changed(id, rotated);
  const previous = rotated.previousSecrets?.[0];
  deps.log.info('destination signing secret rotated', {
    destinationId: id,
    graceSeconds,
    ...(graceSeconds > 0 && previous ? { oldKeyValidUntil: previous.expiresAt } : {}),
  });
  return { kind: 'ok', body: { ...viewOf(rotated, now), secret } };
}
