import { z } from 'zod';
import { DeliveryRecord, DeliveryStatus } from '../../domain/retry/delivery';
import { issuesFromZod } from '../../domain/events/event';
import { INTERNAL_DESTINATION_ID, splitDestinationId } from '../../domain/ids';
import { DeliveryStore } from '../../ports/deliveries';
import { MessageBus } from '../../ports/messaging';
import { abandonWithDeadLetter } from '../lanes/dead-letter';
import { forEachLimited } from '../support/for-each-limited';
import { AdminDeps, badId, notFound } from './destinations-admin';
import { Outcome } from '../support/outcome';

/**
 * Deleting a destination never orphans its deliveries (issue 32): a delivery still to be
 * sent (PENDING, IN_FLIGHT or QUEUED) would otherwise keep a status no list shows, for a
 * destination nothing can send to. So DELETE refuses (a conflict) while there are any, naming how
 * many and the ways out; `?deliveries=dead` deletes anyway and makes each of them DEAD with
 * a dead letter (reason `destination-deleted`), as the state machine's `abandon` does when
 * `deliver` or the pump find a delivery's destination gone.
 */

/** What DELETE …/destinations/{id} may be told to do with deliveries still to send. */
export const deleteDestinationQuerySchema = z.strictObject(
  {
    deliveries: z
      .enum(['dead'], { error: 'deliveries must be "dead": delete the destination and make its PENDING, IN_FLIGHT and QUEUED deliveries DEAD, with dead letters' })
      .optional()
      .describe('dead: delete even with deliveries still to send; each becomes DEAD with a dead letter (reason destination-deleted), replayable once a destination with this id exists again'),
  },
  { error: (issue) => (issue.code === 'unrecognized_keys' ? `unknown query parameter ${issue.keys.join(', ')}; the only one is deliveries=dead` : undefined) },
);

/** The statuses of a delivery still to be sent. */
export const OPEN_STATUSES = ['PENDING', 'IN_FLIGHT', 'QUEUED'] as const satisfies readonly DeliveryStatus[];
export type OpenCounts = Record<(typeof OPEN_STATUSES)[number], number>;

/** The `reason` of a delivery made DEAD because its destination was deleted (and the start of its dead letter's herald-reason). */
export const DESTINATION_DELETED = 'destination-deleted';

export type DeletionDeps = Pick<AdminDeps, 'destinations' | 'deliveries' | 'directory' | 'lanes' | 'clock' | 'log'> & {
  bus: MessageBus;
  deadLetterTopic: string;
};

/** `?deliveries=dead`'s answer: how many deliveries of each status it made DEAD. */
export interface DeletedWithDeliveries {
  id: string;
  deleted: boolean;
  dead: number;
  byStatus: OpenCounts;
  reason: typeof DESTINATION_DELETED;
}

/** The conflict's body: the error, and the counts it names. */
export type StillToSend = { kind: 'conflict'; body: { error: string; deliveries: OpenCounts } };

/** How many of the destination's deliveries are still to be sent, by status: count aggregations, never a scan. */
export async function openDeliveries(deliveries: Pick<DeliveryStore, 'countByStatus'>, id: string): Promise<OpenCounts> {
  const [pending, inFlight, queued] = await Promise.all(OPEN_STATUSES.map((status) => deliveries.countByStatus([id], status)));
  return { PENDING: pending!, IN_FLIGHT: inFlight!, QUEUED: queued! };
}

const total = (counts: OpenCounts) => counts.PENDING + counts.IN_FLIGHT + counts.QUEUED;

/** The conflict of a destination with deliveries still to send: how many, and every way out. */
export function stillToSend(id: string, counts: OpenCounts, suspended: boolean): StillToSend {
  const own = splitDestinationId(id).id;
  const n = total(counts);
  const ways = [
    counts.QUEUED > 0 ? (suspended ? 'reactivate it (POST …/reactivate) so its QUEUED ones are sent' : 'send its QUEUED ones (POST …/redeliver)') : undefined,
    counts.PENDING + counts.IN_FLIGHT > 0 ? 'wait for its PENDING and IN_FLIGHT ones to be delivered or die' : undefined,
    `or delete it anyway with DELETE …/destinations/${own}?deliveries=dead: each becomes DEAD with a dead letter (reason ${DESTINATION_DELETED}), replayable once a destination with this id exists again`,
  ].filter((w): w is string => w !== undefined);
  return {
    kind: 'conflict',
    body: {
      error: `destination ${own} still has ${n} ${n === 1 ? 'delivery' : 'deliveries'} to send (${counts.PENDING} PENDING, ${counts.IN_FLIGHT} IN_FLIGHT, ${counts.QUEUED} QUEUED); deleting it would leave them nowhere to go. ${ways.join('; ')}`,
      deliveries: counts,
    },
  };
}

/**
 * DELETE …/destinations/{id}[?deliveries=dead]. Without the switch: done when nothing is left
 * to send, else a conflict (stillToSend). With it: the destination deleted, then every delivery
 * of it still to send made DEAD with its dead letter, ok with the counts. Both sweep after the
 * delete: a delivery written while the request ran (an attempt settling at that moment) is
 * made DEAD too, never left behind. `?deliveries=dead` on a destination already gone sweeps
 * what is left of it (a sweep that failed half-way is finished by repeating the request).
 */
export async function deleteDestination(deps: DeletionDeps, id: string, query: Record<string, unknown> = {}): Promise<Outcome<DeletedWithDeliveries> | StillToSend> {
  if (!INTERNAL_DESTINATION_ID.test(id)) return badId(id);
  const parsed = deleteDestinationQuerySchema.safeParse(query);
  if (!parsed.success) return { kind: 'invalid', body: { error: 'invalid query', issues: issuesFromZod(parsed.error) } };
  const dead = parsed.data.deliveries === 'dead';
  const destination = await deps.destinations.get(id);
  if (!destination && !dead) return notFound(id);
  if (destination && !dead) {
    const counts = await openDeliveries(deps.deliveries, id);
    if (total(counts) > 0) return stillToSend(id, counts, destination.status === 'suspended');
  }
  const deleted = destination !== undefined && (await deps.destinations.delete(id));
  if (deleted) {
    deps.directory.changed(id);
    // Its dedicated lane, or the lane it had before lanes were shared; nothing when it never had one.
    await deps.lanes.removeLane(id);
  }
  const swept = deleted || dead ? await abandonOpen(deps, id) : undefined;
  if (!deleted && (swept === undefined || total(swept) === 0)) return notFound(id);
  deps.log.info(deleted ? 'destination deleted' : 'deleted destination swept', { destinationId: id, ...(swept && total(swept) > 0 ? { madeDead: swept } : {}) });
  if (!dead) {
    if (swept && total(swept) > 0) deps.log.warn('deliveries written while the destination was being deleted were made DEAD, with dead letters', { destinationId: id, ...swept });
    return { kind: 'done' };
  }
  return { kind: 'ok', body: { id: splitDestinationId(id).id, deleted, dead: total(swept!), byStatus: swept!, reason: DESTINATION_DELETED } };
}

/** Deliveries listed per page of each status, and made DEAD at once (each a transaction on its own record). */
const SWEEP_PAGE = 200;
const SWEEP_CONCURRENCY = 16;

/**
 * Every delivery of the (deleted) destination still to send, DEAD through the state machine
 * with its dead letter: how many of each status. A record that moved meanwhile (delivered,
 * already DEAD) is left as it is; one that keeps the same status is not listed twice, as the
 * listing goes on from the last id.
 */
async function abandonOpen(deps: DeletionDeps, id: string): Promise<OpenCounts> {
  const counts: OpenCounts = { PENDING: 0, IN_FLIGHT: 0, QUEUED: 0 };
  const reason = `${DESTINATION_DELETED}: the destination was deleted with this delivery still to send`;
  for (const status of OPEN_STATUSES) {
    let cursor: string | undefined;
    do {
      const page = await deps.deliveries.list(id, { status, limit: SWEEP_PAGE, ...(cursor !== undefined ? { cursor } : {}) });
      await forEachLimited(page.deliveries, SWEEP_CONCURRENCY, async (r) => {
        if (await abandonOne(deps, r, reason)) counts[status]++;
      });
      cursor = page.nextCursor;
    } while (cursor !== undefined);
  }
  return counts;
}

/** One of them DEAD, if it still has the status it was listed with. */
async function abandonOne(deps: DeletionDeps, record: DeliveryRecord, reason: string): Promise<boolean> {
  // Every PENDING, IN_FLIGHT or QUEUED record holds its event; one that does not is the reconciler's to report.
  return (await abandonWithDeadLetter(deps, record.id, reason, (current) => current.status === record.status)) !== undefined;
}
