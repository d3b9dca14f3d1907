import { ATTEMPT_OUTCOMES, cloudMonitoringType, MetricKey, METRICS, SPANS } from '../shared/telemetry-catalogue';
import { FUNCTION_NAMES, laneTopology, lanePrefixes, batchLaneNames, TopologyNames } from '../shared/topology';
import type { AlertThresholds } from './monitoring-config';

/**
 * Herald's alert policies as plain data: which time series each watches, against what, and
 * what the responder reads. infra/components/monitoring.ts declares them; the filters here
 * are also the dashboard's (infra/monitoring-dashboard.ts), so a chart shows what an alert
 * watches. Every Herald metric is named through shared/telemetry-catalogue.ts.
 */

/**
 * The monitored resource the Google Cloud OpenTelemetry exporter writes Herald's metrics
 * against on Cloud Run (and so on Cloud Functions 2nd gen): it maps a Cloud Run instance to
 * `generic_task`, since `cloud_run_revision` takes no custom metrics.
 */
export const HERALD_METRIC_RESOURCE = 'generic_task';

export type AttemptOutcome = (typeof ATTEMPT_OUTCOMES)[number];

/** One of Herald's own metrics, optionally narrowed by its labels. */
export function heraldMetricFilter(key: MetricKey, labels: Record<string, string> = {}): string {
  return [`metric.type = "${cloudMonitoringType(METRICS[key].name)}"`, `resource.type = "${HERALD_METRIC_RESOURCE}"`, ...Object.entries(labels).map(([k, v]) => `metric.labels.${k} = "${v}"`)].join(' AND ');
}

export const OLDEST_UNACKED_AGE = 'pubsub.googleapis.com/subscription/oldest_unacked_message_age';
export const RUN_REQUEST_COUNT = 'run.googleapis.com/request_count';

/**
 * Every lane subscription Herald has or may create: the shared shards', the dedicated lanes'
 * (`<topic>-deliver`, which an older Herald also made at runtime, so no list of names would do)
 * and the batch lane's pull subscription. Names hold only a-z, 0-9 and `-`: no regex escaping.
 */
export function laneSubscriptionPattern(names: TopologyNames): string {
  const batch = batchLaneNames(names);
  const pushSuffix = laneTopology('x', names).subscription.name.slice(laneTopology('x', names).topic.name.length);
  const prefixes = lanePrefixes(names).filter((p) => p !== batch.topic);
  return `(${prefixes.join('|')}).+${pushSuffix}|${batch.subscription}`;
}

export function laneAgeFilter(names: TopologyNames): string {
  return `metric.type = "${OLDEST_UNACKED_AGE}" AND resource.type = "pubsub_subscription" AND resource.labels.subscription_id = monitoring.regex.full_match("${laneSubscriptionPattern(names)}")`;
}

/**
 * Herald's functions as Cloud Run sees them: a 2nd gen function is a Cloud Run service of its
 * own name (infra/components/herald-function.ts), in the stack's region.
 */
export function functionRequestsFilter(region: string, only5xx: boolean): string {
  const services = FUNCTION_NAMES.map((n) => `"${n}"`).join(', ');
  const base = `metric.type = "${RUN_REQUEST_COUNT}" AND resource.type = "cloud_run_revision" AND resource.labels.location = "${region}" AND resource.labels.service_name = one_of(${services})`;
  return only5xx ? `${base} AND metric.labels.response_code_class = "5xx"` : base;
}

export interface Aggregation {
  alignmentPeriod: string;
  perSeriesAligner: string;
  crossSeriesReducer?: string;
  groupByFields?: string[];
}

/** How many arrived in each window, summed over every instance: counters are cumulative per instance. */
export const countPer = (seconds: number, groupByFields?: string[]): Aggregation => ({
  alignmentPeriod: `${seconds}s`,
  perSeriesAligner: 'ALIGN_DELTA',
  crossSeriesReducer: 'REDUCE_SUM',
  ...(groupByFields ? { groupByFields } : {}),
});

export interface ThresholdCondition {
  filter: string;
  aggregations: Aggregation[];
  /** With a denominator the threshold compares filter/denominator (a ratio condition). */
  denominatorFilter?: string;
  denominatorAggregations?: Aggregation[];
  comparison: 'COMPARISON_GT' | 'COMPARISON_LT';
  thresholdValue: number;
  duration: string;
  evaluationMissingData?: string;
  trigger: { count: number };
}

export type Severity = 'CRITICAL' | 'ERROR' | 'WARNING';
export const ALERT_KEYS = ['deadLetters', 'laneAge', 'successRatio', 'recoveries', 'functionErrors', 'suspensions'] as const;
export type AlertKey = (typeof ALERT_KEYS)[number];

export interface AlertSpec {
  key: AlertKey;
  displayName: string;
  severity: Severity;
  /** Markdown sent with each notification: what it means, what to do (docs/observability.md#alerts says more). */
  documentation: string;
  condition: ThresholdCondition;
}

export interface AlertPlanArgs {
  names: TopologyNames;
  region: string;
  thresholds: AlertThresholds;
}

const RECOVERY_WINDOW_SECONDS = 300;
const SUSPENSION_WINDOW_SECONDS = 300;
const FUNCTION_ERROR_WINDOW_SECONDS = 300;
// A count over a window: one window past the threshold is the news, no need to wait longer.
const AT_ONCE = '0s';
const runbook = (anchor: string) => `Runbook: docs/observability.md#${anchor} in the Herald repository.`;
// Silence is not failure: no traffic means no ratio and no lane sample, so no incident either.
const QUIET_IS_FINE = 'EVALUATION_MISSING_DATA_INACTIVE';

/** More than `threshold` arrivals of a Herald counter within the window. */
function moreThan(threshold: number, key: MetricKey, windowSeconds: number): ThresholdCondition {
  return { filter: heraldMetricFilter(key), aggregations: [countPer(windowSeconds)], comparison: 'COMPARISON_GT', thresholdValue: threshold, duration: AT_ONCE, trigger: { count: 1 } };
}

/**
 * A ratio condition: numerator over denominator, each counted per window and summed (by the
 * fields given, the same on both sides, as Cloud Monitoring requires).
 */
function ratioOf(numerator: string, denominator: string, window: Aggregation, comparison: ThresholdCondition['comparison'], thresholdValue: number): ThresholdCondition {
  return { filter: numerator, aggregations: [window], denominatorFilter: denominator, denominatorAggregations: [window], comparison, thresholdValue, duration: AT_ONCE, evaluationMissingData: QUIET_IS_FINE, trigger: { count: 1 } };
}

// 0.995 → "99.5", never 99.49999999999999.
const percent = (r: number) => String(Number((r * 100).toPrecision(6)));

/** What a notification says: what happened, what to do, and where the runbook is. */
const doc = (meaning: string, todo: string, anchor: string) => [meaning, todo, runbook(anchor)].join('\n\n');

export function alertPlans({ names, region, thresholds: t }: AlertPlanArgs): AlertSpec[] {
  const stack = names.prefix;
  return [
    {
      key: 'deadLetters',
      displayName: `Herald (${stack}): dead letters arriving`,
      severity: 'ERROR',
      documentation: doc(
        `More than ${t.deadLetterThreshold} deliveries were dead-lettered within ${t.deadLetterWindowSeconds / 60} min: a destination refused them for good, or they ran out of attempts.`,
        'See which: `herald replay --destination <id> --since 1h --dry-run` for the destinations `herald destinations list` shows failing, and `herald deliveries list <id> --status dead` for their last errors. Fix the destination (or its policy), then `herald replay` without `--dry-run`.',
        'dead-letters-arriving',
      ),
      condition: moreThan(t.deadLetterThreshold, 'deadLettered', t.deadLetterWindowSeconds),
    },
    {
      key: 'laneAge',
      displayName: `Herald (${stack}): a lane is falling behind`,
      severity: 'ERROR',
      documentation: doc(
        `A lane subscription's oldest unacked message is older than ${t.laneAgeSeconds} s (each lane its own incident): deliver is not keeping up with it, or keeps failing on it.`,
        "Check the deliver function's errors and instances (max instances reached?), the destinations on that lane (rate control holding them back?) and whether a Herald fault answers 500 to each push.",
        'a-lane-is-falling-behind',
      ),
      condition: {
        filter: laneAgeFilter(names),
        // One series per lane: the incident names the subscription.
        aggregations: [{ alignmentPeriod: '60s', perSeriesAligner: 'ALIGN_MAX' }],
        comparison: 'COMPARISON_GT',
        thresholdValue: t.laneAgeSeconds,
        // Two samples in a row: one slow minute after a burst is no backlog.
        duration: '120s',
        evaluationMissingData: QUIET_IS_FINE,
        trigger: { count: 1 },
      },
    },
    {
      key: 'successRatio',
      displayName: `Herald (${stack}): delivery success below SLO`,
      severity: 'CRITICAL',
      documentation: doc(
        `Fewer than ${percent(t.sloRatio)}% of delivery attempts were delivered over the last ${t.sloWindowSeconds / 60} min.`,
        'Look at the dashboard\'s "attempts by outcome": one destination failing (retry, dead) or many? `herald destinations list` shows failing ones; a broad drop points at Herald or the network (function errors, egress).',
        'delivery-success-below-slo',
      ),
      /*
       * A ratio threshold (denominatorFilter) rather than MQL or PromQL: it takes the same
       * filters built from the catalogue as every other condition and the provider declares it
       * as plain fields. MQL is deprecated in Cloud Monitoring, and a PromQL condition would
       * need the metric names in their PromQL spelling, a second naming that could drift.
       */
      condition: ratioOf(heraldMetricFilter('attempts', { outcome: 'delivered' satisfies AttemptOutcome }), heraldMetricFilter('attempts'), countPer(t.sloWindowSeconds), 'COMPARISON_LT', t.sloRatio),
    },
    {
      key: 'recoveries',
      displayName: `Herald (${stack}): the reconciler recovered deliveries`,
      severity: 'CRITICAL',
      documentation: doc(
        'The reconciler found accepted events with a destination left without a delivery record (a lane message lost or never pushed) and created the records: they are delivered now, late. Nothing is lost, but the loss it caught is a fault or an outage to explain.',
        `Read the pump's log lines and the \`${SPANS.reconcileRound}\` spans of that time for the events it recovered; check the Pub/Sub and Firestore status pages and the route and deliver functions' errors then.`,
        'the-reconciler-recovered-deliveries',
      ),
      condition: moreThan(0, 'recovered', RECOVERY_WINDOW_SECONDS),
    },
    {
      key: 'functionErrors',
      displayName: `Herald (${stack}): a function answers 5xx`,
      severity: 'ERROR',
      documentation: doc(
        `More than ${percent(t.functionErrorRatio)}% of one function's requests were answered 5xx over 5 min (the incident names the function): a Herald fault (500), a dependency it could not reach (503), or Cloud Run out of instances.`,
        "Open the function's logs in Cloud Logging (severity ERROR); check Firestore and Pub/Sub status and the function's max instances.",
        'a-function-answers-5xx',
      ),
      // Per function: the incident names the one failing.
      condition: ratioOf(functionRequestsFilter(region, true), functionRequestsFilter(region, false), countPer(FUNCTION_ERROR_WINDOW_SECONDS, ['resource.label.service_name']), 'COMPARISON_GT', t.functionErrorRatio),
    },
    {
      key: 'suspensions',
      displayName: `Herald (${stack}): a destination was suspended`,
      severity: 'WARNING',
      documentation: doc(
        'A destination was suspended, by its failure threshold or by hand: its deliveries are held (not lost) until it is reactivated.',
        '`herald destinations list` shows which (STATUS suspended); its account was notified. Once its endpoint answers again: `herald destinations reactivate <id>`, which sends the held (QUEUED) deliveries again.',
        'a-destination-was-suspended',
      ),
      condition: moreThan(0, 'suspensions', SUSPENSION_WINDOW_SECONDS),
    },
  ];
}
