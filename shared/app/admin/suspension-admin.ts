import { INTERNAL_DESTINATION_ID } from '../../domain/ids';
import { z } from 'zod';
import { DestinationView, viewOf } from '../../domain/destinations/destination';
import { issuesFromZod } from '../../domain/events/event';
import { badId, notFound } from './destinations-admin';
import { Outcome } from '../support/outcome';
import { MANUAL_REASON_MAX } from '../../domain/destinations/suspension';
import { reactivateDestination, redeliverAll, SuspensionDeps, suspendDestinationByHand } from '../delivery/suspend-and-reactivate';

/** `POST /admin/destinations/{id}/reactivate`: the suspension cleared, its QUEUED events sent again. */
export async function postReactivate(deps: SuspensionDeps, id: string): Promise<Outcome<{ destination: DestinationView; redelivered: number }>> {
  if (!INTERNAL_DESTINATION_ID.test(id)) return badId(id);
  const result = await reactivateDestination(deps, id);
  if (result === undefined) return notFound(id);
  if (result === 'active') {
    return {
      kind: 'conflict',
      body: { error: `destination ${JSON.stringify(id)} is not suspended; to send its queued events again use POST /admin/destinations/${id}/redeliver` },
    };
  }
  const redelivered = await redeliverAll(deps, id, 'QUEUED');
  return { kind: 'ok', body: { destination: viewOf(result), redelivered } };
}

export const suspendBodySchema = z
  .strictObject(
    {
      reason: z
        .string({ error: 'reason must be a string' })
        .trim()
        .min(1, 'reason must not be blank: leave it out to give none')
        .max(MANUAL_REASON_MAX, `reason is at most ${MANUAL_REASON_MAX} characters`)
        .optional(),
    },
    {
      error: (issue) =>
        issue.code === 'unrecognized_keys'
          ? `unknown field${issue.keys.length === 1 ? '' : 's'} ${issue.keys.join(', ')}: a suspend request is {"reason"?: string}`
          : 'the body must be a JSON object {"reason"?: string}',
    },
  )
  .default({});

/**
 * `POST /admin/destinations/{id}/suspend` with `{"reason"?}`: suspended by hand, as an automatic
 * suspension leaves it (its events QUEUED until reactivated), recording that `by` did it.
 */
export async function postSuspend(deps: SuspensionDeps, id: string, body: unknown, by: string): Promise<Outcome<{ destination: DestinationView }>> {
  if (!INTERNAL_DESTINATION_ID.test(id)) return badId(id);
  const parsed = suspendBodySchema.safeParse(body);
  if (!parsed.success) return { kind: 'invalid', body: { error: 'invalid suspend request', issues: issuesFromZod(parsed.error) } };
  const result = await suspendDestinationByHand(deps, id, { by, ...(parsed.data.reason === undefined ? {} : { reason: parsed.data.reason }) });
  if (result === undefined) return notFound(id);
  if ('refused' in result) return { kind: 'conflict', body: { error: result.refused } };
  return { kind: 'ok', body: { destination: viewOf(result) } };
}

export const redeliverBodySchema = z
  .strictObject(
    { status: z.enum(['queued', 'dead'], { error: 'status must be "queued" or "dead"' }).default('queued') },
    { error: 'the body must be a JSON object {"status"?: "queued" | "dead"}' },
  )
  .default({ status: 'queued' });

/** `POST /admin/destinations/{id}/redeliver` with `{"status"?: "queued" | "dead"}`: those deliveries start over. */
export async function postRedeliver(deps: SuspensionDeps, id: string, body: unknown): Promise<Outcome<{ redelivered: number; status: 'QUEUED' | 'DEAD' }>> {
  if (!INTERNAL_DESTINATION_ID.test(id)) return badId(id);
  const parsed = redeliverBodySchema.safeParse(body);
  if (!parsed.success) return { kind: 'invalid', body: { error: 'invalid redeliver request', issues: issuesFromZod(parsed.error) } };
  const destination = await deps.destinations.get(id);
  if (!destination) return notFound(id);
  if (destination.status === 'suspended') {
    return {
      kind: 'conflict',
      body: { error: `destination ${JSON.stringify(id)} is suspended (${destination.suspension?.reason ?? 'suspended'}): its events would only be queued again; reactivate it with POST /admin/destinations/${id}/reactivate, which also sends its queued events` },
    };
  }
  const status = parsed.data.status === 'dead' ? 'DEAD' : 'QUEUED';
  const redelivered = await redeliverAll(deps, id, status);
  return { kind: 'accepted', body: { redelivered, status } };
}
