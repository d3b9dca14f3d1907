import { detailOf } from '../../domain/delivery/attempt-request';
import { withEvent, applied } from '../../domain/delivery/delivery-record';
import { historyOf, transition } from '../../domain/retry/delivery-state';
import { rateBoundsOf } from '../../domain/destinations/destination';
import { decide } from '../../domain/retry/retry-decision';
import { afterOutcome, backedOff, backOffUntil, rateWaitFor, send, withFailureModeOf } from './attempt-outcome';
import { startUnderClaim, updateUnderClaim, writeUnderClaim } from './claimed-update';
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
  const gate = await deps.limiter.acquire(t.destination.id, rateBoundsOf(t.destination), rateWaitFor(deps, t), { returning: started.rateDeferred === true });
  if (gate.kind === 'defer') {
    const deferred = await updateUnderClaim(deps.deliveries, t.id, started.claimedAt, { type: 'defer', until: new Date(gate.until) });
    if (!deferred) return { kind: 'duplicate', deliveryId: t.id };
    deps.log.info('delivery deferred by rate control', { ...t.ids, availableAt: deferred.availableAt });
    return { kind: 'deferred', deliveryId: t.id, until: deferred.availableAt! };
  }
  const at = deps.clock.now();
  const { result, sent } = await send(deps, t, at);
  if (result.kind === 'herald-overload') {
    const waiting = await updateUnderClaim(deps.deliveries, t.id, started.claimedAt, { type: 'back-off', until: backOffUntil(deps) });
    if (!waiting) return { kind: 'duplicate', deliveryId: t.id };
    return backedOff(deps, t, result, waiting);
  }
  deps.limiter.report(t.destination.id, result, at);
  const publishedAt = started.publishedAt ?? started.firstAttemptAt ?? at.toISOString();
  const decision = await withFailureModeOf(deps, t, decide(t.policy, historyOf(started), result, at, new Date(publishedAt)));
  const outcome = applied(transition(started, { type: 'attempted', at, result, decision, detail: detailOf(sent, result, decision, at) }));
  const record = withEvent(outcome, t.event);
  // Written only if nobody took the claim over while the attempt ran (it expired meanwhile).
  const written = await writeUnderClaim(deps.deliveries, t.id, started.claimedAt, record);
  if (!written) {
    deps.log.warn('the claim was taken over during the attempt (it outlived HERALD_CLAIM_TTL_MS); the newer claim decides', t.ids);
    return { kind: 'duplicate', deliveryId: t.id };
  }
  return afterOutcome(deps, t, { result, decision, at, publishedAt }, record);
}
