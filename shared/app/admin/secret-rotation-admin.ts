import { INTERNAL_DESTINATION_ID } from '../../domain/ids';
import { DestinationView, generateSecret, viewOf } from '../../domain/destinations/destination';
import { issuesFromZod } from '../../domain/events/event';
import { DEFAULT_GRACE_SECONDS, rotateSecret, rotateSecretSchema } from '../../domain/destinations/secret-rotation';
import { AdminDeps, badId, notFound } from './destinations-admin';
import { Outcome } from '../support/outcome';
import { rotateAuth, rotateAuthSchema } from '../../domain/destinations/auth-rotation';
import { checkWebhookTarget } from '../destinations/target-guard';

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

/**
 * POST /admin/destinations/{id}/rotate-auth: new receiver auth from now on; for `graceSeconds`
 * (24 h by default) an attempt refused with a 401 is sent once more with the replaced auth
 * (domain/destinations/auth-rotation.ts). The answer names neither credential.
 */
export async function postRotateAuth(deps: Pick<AdminDeps, 'destinations' | 'directory' | 'clock' | 'log' | 'addressRules' | 'resolver'>, id: string, body: unknown): Promise<Outcome<DestinationView>> {
  if (!INTERNAL_DESTINATION_ID.test(id)) return badId(id);
  const parsed = rotateAuthSchema.safeParse(body ?? {});
  if (!parsed.success) return { kind: 'invalid', body: { error: 'invalid rotate-auth request', issues: issuesFromZod(parsed.error) } };
  const { auth, graceSeconds } = parsed.data;
  if (auth.type === 'oauth2ClientCredentials') {
    const problem = await checkWebhookTarget(auth.tokenUrl, deps.addressRules, deps.resolver);
    if (problem) return { kind: problem.kind, body: { error: 'invalid rotate-auth request', issues: [{ path: 'auth.tokenUrl', message: problem.message }] } };
  }
  const now = deps.clock.now();
  let refusal: string | undefined;
  let found = false;
  const rotated = await deps.destinations.update(id, (current) => {
    found = current !== undefined;
    if (!current) return undefined;
    const result = rotateAuth(current, auth, graceSeconds, now);
    refusal = result.ok ? undefined : result.message;
    return result.ok ? result.destination : undefined;
  });
  if (!found) return notFound(id);
  if (!rotated || refusal) return { kind: 'conflict', body: { error: refusal ?? `destination ${id} changed; try again` } };
  deps.directory.changed(id, rotated);
  deps.log.info('destination receiver auth rotated', { destinationId: id, authType: auth.type, ...(rotated.previousAuth ? { previousValidUntil: rotated.previousAuth.expiresAt } : {}) });
  return { kind: 'ok', body: viewOf(rotated, now) };
}
