import { INTERNAL_DESTINATION_ID } from '../../domain/ids';
import { DestinationView, generateSecret, viewOf } from '../../domain/destinations/destination';
import { issuesFromZod } from '../../domain/events/event';
import { DEFAULT_GRACE_SECONDS, rotateSecret, rotateSecretSchema } from '../../domain/destinations/secret-rotation';
import { AdminDeps, badId, notFound } from './destinations-admin';
import { Outcome } from '../support/outcome';
import { rotateCredentials, rotateCredentialsSchema } from '../../domain/destinations/credential-rotation';
import { replacedUntil, RotatableCredential } from '../../domain/destinations/receiver-spec';
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
 * POST /admin/destinations/{id}/rotate-auth: new receiver credentials (auth, headers, client
 * certificate) from now on; for `graceSeconds` (24 h by default) an attempt the receiver refuses
 * is sent once more with the replaced ones (domain/destinations/credential-rotation.ts). The
 * answer names no credential.
 */
export async function postRotateAuth(deps: Pick<AdminDeps, 'destinations' | 'directory' | 'clock' | 'log' | 'addressRules' | 'resolver'>, id: string, body: unknown): Promise<Outcome<DestinationView>> {
  if (!INTERNAL_DESTINATION_ID.test(id)) return badId(id);
  const parsed = rotateCredentialsSchema.safeParse(body ?? {});
  if (!parsed.success) return { kind: 'invalid', body: { error: 'invalid rotate-auth request', issues: issuesFromZod(parsed.error) } };
  const { graceSeconds, ...given } = parsed.data;
  if (given.auth?.type === 'oauth2ClientCredentials') {
    const problem = await checkWebhookTarget(given.auth.tokenUrl, deps.addressRules, deps.resolver);
    if (problem) return { kind: problem.kind, body: { error: 'invalid rotate-auth request', issues: [{ path: 'auth.tokenUrl', message: problem.message }] } };
  }
  const now = deps.clock.now();
  let refusal: string | undefined;
  let found = false;
  let rotatedKeys: RotatableCredential[] = [];
  const rotated = await deps.destinations.update(id, (current) => {
    found = current !== undefined;
    if (!current) return undefined;
    const result = rotateCredentials(current, given, graceSeconds, now);
    refusal = result.ok ? undefined : result.message;
    if (result.ok) rotatedKeys = result.rotated;
    return result.ok ? result.destination : undefined;
  });
  if (!found) return notFound(id);
  if (!rotated || refusal) return { kind: 'conflict', body: { error: refusal ?? `destination ${id} changed; try again` } };
  deps.directory.changed(id, rotated);
  const until = replacedUntil(rotated, now)[rotatedKeys[0]!];
  deps.log.info('destination receiver credentials rotated', {
    destinationId: id,
    rotated: rotatedKeys,
    ...(given.auth ? { authType: given.auth.type } : {}),
    ...(until ? { previousValidUntil: until } : {}),
  });
  return { kind: 'ok', body: viewOf(rotated, now) };
}
