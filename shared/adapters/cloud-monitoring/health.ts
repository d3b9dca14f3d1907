import type { protos } from '@google-cloud/monitoring';
import { HealthReader, HealthReading } from '../../ports/health';
import { cloudMonitoringType, METRICS } from '../../telemetry-catalogue';

type ListRequest = protos.google.monitoring.v3.IListTimeSeriesRequest;
type TimeSeries = protos.google.monitoring.v3.ITimeSeries;
type Aggregation = protos.google.monitoring.v3.IAggregation;

/** What this reads with of Cloud Monitoring's client (the one call a unit test stands in for). */
export interface TimeSeriesLister {
  listTimeSeries(request: ListRequest): Promise<[TimeSeries[], ...unknown[]]>;
}

/** Pub/Sub writes its subscription metrics every minute and shows them a few minutes late: look this far back at least for the lanes' backlog (ms). */
const PUBSUB_LOOKBACK_MS = 10 * 60_000;

export type HealthQuery = 'accepted' | 'delivered' | 'deadLettered' | 'endToEndP99' | 'lanes';

const escapeRegex = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The push subscriptions of a deployment's lanes (shared/topology.ts): shards, retry shards and dedicated lanes, each `<topic>-deliver`. */
export function laneSubscriptionPattern(prefix: string): string {
  return `${escapeRegex(prefix)}-(shard-[0-9]+|retry-shard-[0-9]+|lane-.+)-deliver`;
}

/**
 * The five timeSeries.list requests of one reading. Herald's own metrics: one series each,
 * summed over the deployment's instances (the exporter's generic_task, namespace = the topic
 * prefix), over one alignment period as long as the window: a rate per second (ALIGN_RATE), a
 * count (ALIGN_DELTA), the p99 of the distribution's observations. The lanes: Pub/Sub's own
 * oldest unacked message age on their push subscriptions, the largest, per minute.
 */
export function healthRequests(projectId: string, deployment: string, windowMs: number, now: Date): Record<HealthQuery, ListRequest> {
  const end = Math.floor(now.getTime() / 1000);
  const windowSeconds = Math.max(60, Math.round(windowMs / 1000));
  const ours = (name: string, extra = '') => `metric.type = "${cloudMonitoringType(name)}" AND resource.type = "generic_task" AND resource.labels.namespace = "${deployment}"${extra}`;
  const over = (filter: string, perSeriesAligner: Aggregation['perSeriesAligner'], crossSeriesReducer: Aggregation['crossSeriesReducer']): ListRequest => ({
    name: `projects/${projectId}`,
    filter,
    interval: { startTime: { seconds: end - windowSeconds }, endTime: { seconds: end } },
    aggregation: { alignmentPeriod: { seconds: windowSeconds }, perSeriesAligner, crossSeriesReducer },
    view: 'FULL',
  });
  const lookback = Math.max(windowSeconds, PUBSUB_LOOKBACK_MS / 1000);
  return {
    accepted: over(ours(METRICS.eventsAccepted.name), 'ALIGN_RATE', 'REDUCE_SUM'),
    delivered: over(ours(METRICS.attempts.name, ' AND metric.labels.outcome = "delivered"'), 'ALIGN_RATE', 'REDUCE_SUM'),
    deadLettered: over(ours(METRICS.deadLettered.name), 'ALIGN_DELTA', 'REDUCE_SUM'),
    endToEndP99: over(ours(METRICS.endToEnd.name), 'ALIGN_DELTA', 'REDUCE_PERCENTILE_99'),
    lanes: {
      name: `projects/${projectId}`,
      filter: `metric.type = "pubsub.googleapis.com/subscription/oldest_unacked_message_age" AND resource.type = "pubsub_subscription" AND resource.labels.subscription_id = monitoring.regex.full_match("${laneSubscriptionPattern(deployment)}")`,
      interval: { startTime: { seconds: end - lookback }, endTime: { seconds: end } },
      aggregation: { alignmentPeriod: { seconds: 60 }, perSeriesAligner: 'ALIGN_MAX', crossSeriesReducer: 'REDUCE_MAX' },
      view: 'FULL',
    },
  };
}

/** The newest point's number of the first series (points come newest first), or null with none. */
export function newestValue(series: readonly TimeSeries[]): number | null {
  const value = series[0]?.points?.[0]?.value;
  if (!value) return null;
  if (typeof value.doubleValue === 'number') return value.doubleValue;
  if (value.int64Value !== null && value.int64Value !== undefined) return Number(String(value.int64Value));
  return null;
}

const round = (v: number | null, places: number) => (v === null ? null : Math.round(v * 10 ** places) / 10 ** places);

/** Herald's health from Cloud Monitoring: what the deployed functions exported, and Pub/Sub's own view of the lanes. */
export class CloudMonitoringHealth implements HealthReader {
  constructor(
    private readonly client: TimeSeriesLister,
    private readonly projectId: string,
    private readonly deployment: string,
  ) {}

  async read(windowMs: number, now: Date): Promise<HealthReading> {
    const requests = healthRequests(this.projectId, this.deployment, windowMs, now);
    const keys = Object.keys(requests) as HealthQuery[];
    const answers = await Promise.all(keys.map((k) => this.client.listTimeSeries(requests[k]).then(([series]) => newestValue(series))));
    const value = Object.fromEntries(keys.map((k, i) => [k, answers[i] ?? null])) as Record<HealthQuery, number | null>;
    return {
      source: 'cloud-monitoring',
      acceptedPerSecond: round(value.accepted, 3),
      deliveredPerSecond: round(value.delivered, 3),
      endToEndP99Ms: round(value.endToEndP99, 1),
      deadLettered: value.deadLettered === null ? null : Math.round(value.deadLettered),
      lanesOldestBacklogSeconds: value.lanes,
      lanesBacklogBasis: "Pub/Sub's oldest unacked message age on the lanes' push subscriptions (the largest, as last reported)",
    };
  }
}

/** Reads with Cloud Monitoring's client, loaded only when first read: the admin function's cold start does not pay for it otherwise. */
export function cloudMonitoringHealth(projectId: string, deployment: string): HealthReader {
  let reader: CloudMonitoringHealth | undefined;
  return {
    read: (windowMs, now) => {
      if (!reader) {
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        const { MetricServiceClient } = require('@google-cloud/monitoring') as typeof import('@google-cloud/monitoring');
        reader = new CloudMonitoringHealth(new MetricServiceClient({ projectId }), projectId, deployment);
      }
      return reader.read(windowMs, now);
    },
  };
}
