import { withEvent, applied } from '../../domain/delivery/delivery-record';
import type { DeliveryRecord } from '../../domain/retry/delivery';
import { historyOf, transition } from '../../domain/retry/delivery-state';
import { attempt } from './attempt';
import { handBackOnStop, startUnderClaim, updateUnderClaim, writeUnderClaim } from './claimed-update';
import { DeliverDeps, DeliverOutcome, Target } from './delivery-context';
import { afterOrderedOutcome } from '../ordering/ordered-delivery';

/** A retry the pump claimed: attempted only while the claim the message carries is still the record's. */
export async function claimedAttempt(deps: DeliverDeps, t: Target, claim: string): Promise<DeliverOutcome> {
  const start = await startUnderClaim(deps.deliveries, t.id, claim, deps.clock.now());
  if ('refused' in start) {
    deps.log.info(`claimed lane message skipped: ${start.refused}`, { ...t.ids, claim });
    // An ordered delivery settled by a push that failed before its key moved on: moved on now (idempotent).
    if (t.destination.ordering && start.record?.order) await afterOrderedOutcome(deps, t.destination, start.record, start.record.status === 'QUEUED' && t.destination.status === 'suspended');
    return { kind: 'duplicate', deliveryId: t.id };
  }
  const { started } = start;
  return claimedStages(deps, t, started).catch((e: unknown) => handBackOnStop(e, (next) => updateUnderClaim(deps.deliveries, t.id, started.claimedAt, next), deps.clock.now()));
}

function claimedStages(deps: DeliverDeps, t: Target, started: DeliveryRecord): Promise<DeliverOutcome> {
  return attempt(deps, t, {
    gate: { returning: started.rateDeferred === true },
    // Only a first push reads before its turn.
    skipped: () => ({ kind: 'duplicate', deliveryId: t.id }),
    unattempted: async (next) => {
      const waiting = await updateUnderClaim(deps.deliveries, t.id, started.claimedAt, next);
      return waiting ? { record: waiting } : { ended: { kind: 'duplicate', deliveryId: t.id } };
    },
    around: (work) => work(),
    history: historyOf(started),
    publishedAt: (at) => started.publishedAt ?? started.firstAttemptAt ?? at.toISOString(),
    record: async ({ result, decision, detail, at }) => {
      const record = withEvent(applied(transition(started, { type: 'attempted', at, result, decision, detail })), t.event);
      // Written only if nobody took the claim over while the attempt ran (it expired meanwhile).
      if (await writeUnderClaim(deps.deliveries, t.id, started.claimedAt, record)) return { record };
      deps.log.warn('the claim was taken over during the attempt (it outlived HERALD_CLAIM_TTL_MS); the newer claim decides', t.ids);
      return { ended: { kind: 'duplicate', deliveryId: t.id } };
    },
  });
}
