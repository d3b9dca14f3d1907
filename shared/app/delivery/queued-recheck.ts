import { DeliveryRecord } from '../../domain/retry/delivery';
import { transition } from '../../domain/retry/delivery-state';
import { Destination } from '../../domain/destinations/destination';
import { overloadBackoffMs } from '../../domain/retry/herald-overload';
import { Clock, Logger } from '../../ports/clock';
import { DeliveryStore } from '../../ports/deliveries';
import { DestinationStore } from '../../ports/destinations';
import { MessageBus } from '../../ports/messaging';
import { abandonWithDeadLetter } from '../lanes/dead-letter';

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
 * One read per QUEUED write, which it took before; none on any other path. A read that fails is
 * tried again (READ_AGAIN); one that still fails cannot tell a reactivation from a suspension, so
 * a delivery queued because of a suspension is made PENDING again a little later (`unsure`): the
 * pump then decides with the destination as it is — QUEUED again, with its check, if it is still
 * suspended; sent if it is active; DEAD if it is gone. Never left QUEUED on an active destination
 * for want of one read (issue 51).
 */
export async function recheckQueued(deps: QueuedCheckDeps, record: DeliveryRecord, because: QueuedBecause, again: ReadAgain = READ_AGAIN): Promise<void> {
  const ids = { destinationId: record.destinationId, deliveryId: record.id, eventId: record.eventId };
  let destination: Destination | undefined;
  try {
    destination = await readAgainOnFailure(() => deps.destinations.get(record.destinationId), again);
  } catch (e) {
    deps.log.warn('could not check the destination of a queued delivery', { ...ids, error: (e as Error).message });
    if (because === 'suspended') await unsure(deps, record, ids, again);
    // Queued by its own attempt: only a deletion is at stake, and `DELETE …?deliveries=dead` sweeps what a failed check left.
    return;
  }
  try {
    if (destination) {
      if (because === 'suspended' && destination.status !== 'suspended') await pendingAgain(deps, record, ids);
      return;
    }
    const dead = await abandonWithDeadLetter(deps, record.id, 'destination-deleted: the destination was deleted as this delivery was queued', (current) => current.status === 'QUEUED');
    if (dead) deps.log.warn('a delivery queued as its destination was deleted is DEAD, with a dead letter', ids);
  } catch (e) {
    // The QUEUED record is written and stands; `DELETE …?deliveries=dead`, or reactivating, again sweeps what a failed check left.
    deps.log.warn('could not settle a queued delivery after checking its destination', { ...ids, error: (e as Error).message });
  }
}

/** How often, and after what pauses, a failed read of the destination is tried again; `sleep` for tests. */
export interface ReadAgain {
  tries: number;
  firstPauseMs: number;
  sleep?: (ms: number) => Promise<void>;
  /** [0, 1): spreads the delay `unsure` gives (default Math.random). */
  random?: () => number;
}

/** 3 tries over 0.3 s, as a record's write gets (RECORD_RETRY). */
export const READ_AGAIN: ReadAgain = { tries: 3, firstPauseMs: 100 };

/** A read tried again on any failure (it changes nothing), `tries` times in all. */
async function readAgainOnFailure<T>(read: () => Promise<T>, again: ReadAgain): Promise<T> {
  const sleep = again.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  for (let attempt = 1; ; attempt++) {
    try {
      return await read();
    } catch (e) {
      if (attempt >= again.tries) throw e;
      await sleep(again.firstPauseMs * 2 ** (attempt - 1));
    }
  }
}

/**
 * The destination could not be read: the delivery queued because of a suspension is PENDING
 * again as reactivation makes it (a fresh retry budget, which a reactivation would give it
 * anyway), due after Herald's overload back-off, so the pump decides with a fresh view.
 */
async function unsure(deps: QueuedCheckDeps, record: DeliveryRecord, ids: Record<string, string>, again: ReadAgain): Promise<void> {
  const now = deps.clock.now();
  const due = new Date(now.getTime() + overloadBackoffMs((again.random ?? Math.random)()));
  try {
    const pending = await deps.deliveries.update(record.id, (current) => {
      if (current?.status !== 'QUEUED') return undefined;
      const next = transition(current, { type: 'redeliver', now: due });
      return next.ok ? next.state : undefined;
    });
    if (pending) deps.log.warn('a queued delivery whose destination could not be checked is PENDING again: the pump decides with the destination as it is then', { ...ids, availableAt: pending.availableAt });
  } catch (e) {
    // Both Firestore reads and writes failing: it stays QUEUED; reactivating again redelivers it.
    deps.log.warn('a queued delivery whose destination could not be checked stays QUEUED', { ...ids, error: (e as Error).message });
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
