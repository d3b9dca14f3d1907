import { DeliveryRecord } from '../domain/delivery';
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
 * A delivery just written QUEUED by an instance whose view of its destination may be up to
 * HERALD_DESTINATION_CACHE_MS old: if the destination is gone from the store now, it was
 * deleted while this was decided, and nothing would ever send or list a QUEUED delivery of
 * it. Deleting sweeps after the delete (app/admin/destination-deletion.ts), and this reads after
 * the write, so of the two one always sees the other: the delivery becomes DEAD with its
 * dead letter (`abandon`), never an orphan. One read per QUEUED write; none on any other path.
 */
export async function deadIfDestinationDeleted(deps: QueuedCheckDeps, record: DeliveryRecord): Promise<void> {
  const ids = { destinationId: record.destinationId, deliveryId: record.id, eventId: record.eventId };
  try {
    if (await deps.destinations.get(record.destinationId)) return;
    const dead = await abandonWithDeadLetter(deps, record.id, 'destination-deleted: the destination was deleted as this delivery was queued', (current) => current.status === 'QUEUED');
    if (dead) deps.log.warn('a delivery queued as its destination was deleted is DEAD, with a dead letter', ids);
  } catch (e) {
    // The QUEUED record is written and stands; `DELETE …?deliveries=dead` again sweeps what a failed check left.
    deps.log.warn('could not check whether the destination of a queued delivery still exists', { ...ids, error: (e as Error).message });
  }
}
