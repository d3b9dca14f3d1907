import { INTERNAL_DESTINATION_ID } from '../domain/ids';
import { z } from 'zod';
import { DestinationView, viewOf } from '../domain/destination';
import { issuesFromZod } from '../domain/event';
import { AdminResult, badId, notFound } from './destinations-admin';
import { reactivateDestination, redeliverAll, SuspensionDeps } from './suspension';

/** `POST /admin/destinations/{id}/reactivate`: the suspension cleared, its QUEUED events sent again. */
export async function postReactivate(deps: SuspensionDeps, id: string): Promise<AdminResult<{ destination: DestinationView; redelivered: number }>> {
  if (!INTERNAL_DESTINATION_ID.test(id)) return badId(id);
  const result = await reactivateDestination(deps, id);
  if (result === undefined) return notFound(id);
  if (result === 'active') {
    return {
      status: 409,
      body: { error: `destination ${JSON.stringify(id)} is not suspended; to send its queued events again use POST /admin/destinations/${id}/redeliver` },
    };
  }
  const redelivered = await redeliverAll(deps, id, 'QUEUED');
  return { status: 200, body: { destination: viewOf(result), redelivered } };
}

export const redeliverBodySchema = z
  .strictObject(
    { status: z.enum(['queued', 'dead'], { error: 'status must be "queued" or "dead"' }).default('queued') },
    { error: 'the body must be a JSON object {"status"?: "queued" | "dead"}' },
  )
  .default({ status: 'queued' });

/** `POST /admin/destinations/{id}/redeliver` with `{"status"?: "queued" | "dead"}`: those deliveries start over. */
export async function postRedeliver(deps: SuspensionDeps, id: string, body: unknown): Promise<AdminResult<{ redelivered: number; status: 'QUEUED' | 'DEAD' }>> {
  if (!INTERNAL_DESTINATION_ID.test(id)) return badId(id);
  const parsed = redeliverBodySchema.safeParse(body);
  if (!parsed.success) return { status: 400, body: { error: 'invalid redeliver request', issues: issuesFromZod(parsed.error) } };
  const destination = await deps.destinations.get(id);
  if (!destination) return notFound(id);
  if (destination.status === 'suspended') {
    return {
      status: 409,
      body: { error: `destination ${JSON.stringify(id)} is suspended (${destination.suspension?.reason ?? 'suspended'}): its events would only be queued again; reactivate it with POST /admin/destinations/${id}/reactivate, which also sends its queued events` },
    };
  }
  const status = parsed.data.status === 'dead' ? 'DEAD' : 'QUEUED';
  const redelivered = await redeliverAll(deps, id, status);
  return { status: 202, body: { redelivered, status } };
}
