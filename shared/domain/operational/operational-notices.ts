import { eventAccount } from '../access/account';
import type { Destination } from '../destinations/destination';
import type { HeraldEvent } from '../events/event';
import { splitDestinationId } from '../ids';
import type { DeliveryRecord } from '../retry/delivery';
import type { ThresholdPolicy } from '../retry/delivery-policy';
import type { Suspension } from '../retry/suspension-record';
import type { RateCounts } from '../stats/success-rate';
import type { FailingMeasure, FailingState } from './failing-level';
import type { OperationalNotice } from './operational-events';

/** Each operational event's notice, from the state that caused it (the catalogue: operational-events.ts). */

function about(destination: Pick<Destination, 'id' | 'url' | 'topic'>) {
  const { account, id } = splitDestinationId(destination.id);
  const target = destination.url ?? destination.topic;
  return { account, destinationId: id, ...(target === undefined ? {} : { target }) };
}

export function failingNotice(destination: Destination, state: FailingState, measure: FailingMeasure, counts: RateCounts, threshold: ThresholdPolicy): OperationalNotice {
  return {
    kind: 'destination.failing',
    key: `${destination.id}-${state.fraction}-${state.at}`,
    concerns: destination.id,
    data: {
      ...about(destination),
      fraction: state.fraction,
      failureRate: measure.failureRate,
      suspendAboveFailureRate: measure.suspendAboveFailureRate,
      successes: counts.successes,
      failures: counts.failures,
      windowSeconds: threshold.windowMs / 1000,
    },
  };
}

export function suspendedNotice(destination: Destination & { suspension: Suspension }): OperationalNotice {
  const s = destination.suspension;
  return {
    kind: 'destination.suspended',
    key: `${destination.id}-${s.at}`,
    concerns: destination.id,
    data: {
      ...about(destination),
      cause: s.cause,
      reason: s.reason,
      ...(s.by === undefined ? {} : { by: s.by }),
      suspendedAt: s.at,
      attempts1h: s.attempts1h,
      ...(s.successRate1h === undefined ? {} : { successRate1h: s.successRate1h }),
      recentErrors: s.recentErrors,
      ...(destination.technicalEmail ? { technicalEmail: destination.technicalEmail } : {}),
      reactivate: s.notification.reactivate,
    },
  };
}

/** `was`: the suspension it came out of, when known. */
export function reactivatedNotice(destination: Destination, reactivatedAt: string, was: Suspension | undefined): OperationalNotice {
  return {
    kind: 'destination.reactivated',
    key: `${destination.id}-${reactivatedAt}`,
    concerns: destination.id,
    data: { ...about(destination), reactivatedAt, ...(was ? { suspendedAt: was.at, cause: was.cause } : {}) },
  };
}

/** A DEAD delivery: keyed by its id, so the reconciler's second dead letter makes the same event. */
export function deadNotice(record: DeliveryRecord, event: HeraldEvent): OperationalNotice {
  const { id } = splitDestinationId(record.destinationId);
  return {
    kind: 'delivery.dead',
    key: record.id,
    concerns: record.destinationId,
    data: {
      account: eventAccount(event.attributes),
      destinationId: id,
      deliveryId: record.id,
      eventId: event.attributes.id,
      eventSource: event.attributes.source,
      eventType: event.attributes.type,
      attempts: record.attempts,
      reason: record.reason ?? 'dead',
      ...(record.lastError ? { lastError: record.lastError } : {}),
    },
  };
}
