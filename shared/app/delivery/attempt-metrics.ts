import { Destination } from '../../domain/destinations/destination';
import { AttemptResult, DeliveryRecord } from '../../domain/retry/delivery';
import { Decision } from '../../domain/retry/retry-decision';
import { Metrics } from '../../ports/telemetry';
import { ATTEMPT_OUTCOMES, DESTINATION_KINDS } from '../../telemetry-catalogue';

/** Which of the catalogue's outcomes an attempt came to, from what Herald decided and the record it wrote. */
export function attemptOutcome(decision: Decision, record: Pick<DeliveryRecord, 'status'>): (typeof ATTEMPT_OUTCOMES)[number] {
  if (decision.kind === 'suspend') return 'suspended';
  if (record.status === 'DELIVERED') return 'delivered';
  if (record.status === 'DEAD') return 'dead';
  if (record.status === 'QUEUED') return 'queued';
  return 'retry';
}

export function destinationKind(destination: Pick<Destination, 'topic'>): (typeof DESTINATION_KINDS)[number] {
  return destination.topic !== undefined ? 'topic' : 'webhook';
}

/**
 * One recorded attempt into Herald's metrics: counted by outcome, its send timed, and a delivery
 * timed from the event accepted to its 2xx. Labels are the outcome and the destination's kind
 * only, so the series are as many whatever the number of destinations.
 */
export function measureAttempt(metrics: Metrics | undefined, destination: Pick<Destination, 'topic'>, result: AttemptResult, decision: Decision, record: DeliveryRecord, now: Date): void {
  if (!metrics) return;
  const labels = { outcome: attemptOutcome(decision, record), destination_kind: destinationKind(destination) };
  metrics.add('attempts', 1, labels);
  metrics.record('attemptDuration', result.durationMs, labels);
  if (labels.outcome === 'delivered' && record.publishedAt !== undefined) {
    metrics.record('endToEnd', Math.max(0, now.getTime() - Date.parse(record.publishedAt)), { destination_kind: labels.destination_kind });
  }
}
