import { DeliveryRecord } from '../domain/delivery';
import { transition } from '../domain/delivery-state';
import { Clock, DeliveryStore, DestinationStore, Logger, MessageBus } from '../ports';
import { abandonWithDeadLetter } from './dead-letter';

export interface QueuedCheckDeps {
  destinations: Pick<DestinationStore, 'get'>;
  deliveries: DeliveryStore;
  bus: MessageBus;
  deadLetterTopic: string;
  clock: Clock;
  log: Logger;
}

/**
 * Why a delivery was written QUEUED: its destination is suspended (as the writer's cached view
 * said), or its own attempt decided so (a failure under failureMode `queue`, or the attempt that
 * suspended the destination).
 */
export type QueuedBecause = 'suspended' | 'decided';

/**
 * A delivery just written QUEUED by an instance whose view of its destination may be up to
 * HERALD_DESTINATION_CACHE_MS old, checked against the destination read now:
 * - gone: it was deleted while this was decided, and nothing would ever send or list a QUEUED
 *   delivery of it. Deleting sweeps after the delete (app/admin/destination-deletion.ts), and
 *   this reads after the write, so of the two one always sees the other: the delivery becomes
 *   DEAD with its dead letter (`abandon`), never an orphan.
 * - no longer suspended, when it was queued because it was: reactivated (on another instance)
 *   while this was decided. Reactivation redelivers the QUEUED deliveries it lists after clearing
 *   the suspension, and this reads after the write: either the listing finds this one, or this
 *   read sees the reactivation and makes it PENDING, due now (the retry pump sends it). Never
 *   stranded QUEUED behind a reactivation that answered "N redelivered".
 * One read per QUEUED write, which it took before; none on any other path.
 */
export async function recheckQueued(deps: QueuedCheckDeps, record: DeliveryRecord, because: QueuedBecause): Promise<void> {
  const ids = { destinationId: record.destinationId, deliveryId: record.id, eventId: record.eventId };
  try {
    const destination = await deps.destinations.get(record.destinationId);
    if (destination) {
      if (because === 'suspended' && destination.status !== 'suspended') await pendingAgain(deps, record, ids);
      return;
    }
    const dead = await abandonWithDeadLetter(deps, record.id, 'destination-deleted: the destination was deleted as this delivery was queued', (current) => current.status === 'QUEUED');
    if (dead) deps.log.warn('a delivery queued as its destination was deleted is DEAD, with a dead letter', ids);
  } catch (e) {
    // The QUEUED record is written and stands; `DELETE …?deliveries=dead`, or reactivating, again sweeps what a failed check left.
    deps.log.warn('could not check the destination of a queued delivery', { ...ids, error: (e as Error).message });
  }
}

/** The delivery starts over as reactivation would have made it: PENDING, due now, with a fresh retry budget. */
async function pendingAgain(deps: QueuedCheckDeps, record: DeliveryRecord, ids: Record<string, string>): Promise<void> {
  const now = deps.clock.now();
  const again = await deps.deliveries.update(record.id, (current) => {
    if (current?.status !== 'QUEUED') return undefined;
    const next = transition(current, { type: 'redeliver', now });
    return next.ok ? next.state : undefined;
  });
  if (again) deps.log.info('a delivery queued as its destination was reactivated is PENDING again (this instance saw the suspension late)', ids);
}
