/**
 * Herald's own metrics and spans, as plain data: the names, units, meanings and the only
 * labels each may carry. The telemetry setup (its instruments, the Prometheus text of local
 * mode) and the Pulumi program (the Cloud Monitoring dashboard and alert policies) both build
 * from it, so an alert never watches a metric under a name the code does not write. No
 * imports: infra and the functions both stand on it.
 *
 * Labels are bounded: never a destination id, an event id or a URL. An account label only
 * where a setting caps the accounts reported (HERALD_METRICS_ACCOUNTS).
 */

export type MetricKind = 'counter' | 'histogram' | 'gauge';

export interface MetricDefinition {
  name: string;
  kind: MetricKind;
  unit: string;
  description: string;
  /** Label keys and, where they are a closed set, their values. */
  labels: Record<string, readonly string[] | 'bounded'>;
}

export const ATTEMPT_OUTCOMES = ['delivered', 'retry', 'dead', 'queued', 'suspended'] as const;
export const DESTINATION_KINDS = ['webhook', 'topic'] as const;
export const REFUSAL_REASONS = ['invalid', 'unauthorized', 'quota', 'too-large', 'unavailable'] as const;

export const METRICS = {
  eventsAccepted: { name: 'herald.events.accepted', kind: 'counter', unit: '{event}', description: 'Events ingest accepted (journaled; each is then delivered at least once).', labels: {} },
  eventsRefused: { name: 'herald.events.refused', kind: 'counter', unit: '{event}', description: 'Events ingest refused, by reason.', labels: { reason: REFUSAL_REASONS } },
  attempts: { name: 'herald.attempts', kind: 'counter', unit: '{attempt}', description: 'Delivery attempts by outcome and destination kind.', labels: { outcome: ATTEMPT_OUTCOMES, destination_kind: DESTINATION_KINDS } },
  attemptDuration: { name: 'herald.attempt.duration', kind: 'histogram', unit: 'ms', description: "One attempt's send, request to answer.", labels: { outcome: ATTEMPT_OUTCOMES, destination_kind: DESTINATION_KINDS } },
  endToEnd: { name: 'herald.delivery.latency', kind: 'histogram', unit: 'ms', description: 'From the event accepted to its delivery answered 2xx.', labels: { destination_kind: DESTINATION_KINDS } },
  deadLettered: { name: 'herald.deliveries.dead_lettered', kind: 'counter', unit: '{delivery}', description: 'Deliveries sent to the dead-letter topic.', labels: {} },
  replayed: { name: 'herald.deliveries.replayed', kind: 'counter', unit: '{delivery}', description: 'Deliveries a replay sent again.', labels: {} },
  recovered: { name: 'herald.deliveries.recovered', kind: 'counter', unit: '{delivery}', description: 'Deliveries the reconciler recovered: a loss signal, 0 when all is well.', labels: {} },
  suspensions: { name: 'herald.destinations.suspended', kind: 'counter', unit: '{destination}', description: 'Destinations suspended, by rule or by hand.', labels: {} },
  reactivations: { name: 'herald.destinations.reactivated', kind: 'counter', unit: '{destination}', description: 'Destinations reactivated.', labels: {} },
  rateChanges: { name: 'herald.rate.changes', kind: 'counter', unit: '{change}', description: "Rate-control bound changes, by direction.", labels: { direction: ['up', 'down'] } },
  rateDeferred: { name: 'herald.rate.deferred', kind: 'counter', unit: '{delivery}', description: 'Deliveries put off by rate control (recorded PENDING, nothing sent).', labels: {} },
  pumpLag: { name: 'herald.pump.lag', kind: 'histogram', unit: 'ms', description: 'How late the pump claimed a due retry.', labels: {} },
  groupCommitSize: { name: 'herald.group_commit.size', kind: 'histogram', unit: '{write}', description: 'Writes in one group commit of delivery outcomes.', labels: {} },
} as const satisfies Record<string, MetricDefinition>;

export type MetricKey = keyof typeof METRICS;

/** The name Cloud Monitoring gives an OpenTelemetry metric written by the Google Cloud exporter. */
export function cloudMonitoringType(name: string): string {
  return `workload.googleapis.com/${name}`;
}

/** The name a Prometheus scrape shows (the OpenTelemetry Prometheus exporter: dots to underscores, a counter ends in `_total`). */
export function prometheusName(definition: MetricDefinition): string {
  const base = definition.name.replace(/\./g, '_');
  return definition.kind === 'counter' ? `${base}_total` : base;
}

/** Spans Herald starts; their attributes follow the OpenTelemetry HTTP and messaging conventions. */
export const SPANS = {
  ingest: 'herald.ingest',
  lanePublish: 'herald.lane.publish',
  attempt: 'herald.attempt',
  send: 'herald.send',
  pumpClaim: 'herald.pump.claim',
  reconcileRound: 'herald.reconcile.round',
  replay: 'herald.replay',
} as const;
