import { cloudMonitoringType, METRICS } from '../../../shared/telemetry-catalogue';
import { FUNCTION_NAMES } from '../../../shared/topology';
import { channelName, Declared, mockPulumi, PROJECT, REGION, settled, stackConfig, valueOf, programLoadTimeout } from './mocks';

/**
 * The Pulumi program with monitoring on (the default) and every monitoring key set: what it
 * declares for Cloud Monitoring, read off the resources. A stack prefix other than `herald`
 * checks that the lane filter follows the config.
 */

type Program = typeof import('../../../infra/index');
const EMAILS = ['oncall@example.com', 'payments@example.com'];
const EXISTING = `projects/${PROJECT}/notificationChannels/4242`;
const THRESHOLDS = { sloRatio: 0.995, sloWindowSeconds: 7200, laneAgeSeconds: 600, deadLetterThreshold: 3, deadLetterWindowSeconds: 900, functionErrorRatio: 0.02 };
const PREFIX = 'hx';
const declared: Declared[] = [];
let program: Program;

beforeAll(async () => {
  await mockPulumi(
    stackConfig({
      'herald:topicPrefix': PREFIX,
      'herald:dedicatedLanes': JSON.stringify(['acme_orders']),
      'herald:alertEmails': JSON.stringify(EMAILS),
      'herald:alertChannels': JSON.stringify([EXISTING]),
      'herald:alerts': JSON.stringify(THRESHOLDS),
    }),
    declared,
  );
  program = await import('../../../infra/index');
  await settled(declared);
}, programLoadTimeout());

const ofType = (type: string) => declared.filter((r) => r.type === type);
const POLICY = 'gcp:monitoring/alertPolicy:AlertPolicy';

interface Aggregation {
  alignmentPeriod: string;
  perSeriesAligner: string;
  crossSeriesReducer?: string;
  groupByFields?: string[];
}
interface Threshold {
  filter: string;
  aggregations: Aggregation[];
  denominatorFilter?: string;
  denominatorAggregations?: Aggregation[];
  comparison: string;
  thresholdValue: number;
  duration: string;
}

function policy(alert: string): { inputs: Record<string, unknown>; condition: Threshold } {
  const found = ofType(POLICY).filter((p) => (p.inputs.userLabels as Record<string, string>).alert === alert);
  expect(found).toHaveLength(1);
  const conditions = found[0]!.inputs.conditions as { conditionThreshold: Threshold }[];
  expect(conditions).toHaveLength(1);
  return { inputs: found[0]!.inputs, condition: conditions[0]!.conditionThreshold };
}

/** The metric types a filter names. */
const metricTypes = (filter: string) => [...filter.matchAll(/metric\.type = "([^"]+)"/g)].map((m) => m[1]!);
const CATALOGUE_TYPES = new Set(Object.values(METRICS).map((m) => cloudMonitoringType(m.name)));

describe('notification channels', () => {
  test('an email channel per address of herald:alertEmails', () => {
    const channels = ofType('gcp:monitoring/notificationChannel:NotificationChannel');
    expect(channels.map((c) => ({ type: c.inputs.type, project: c.inputs.project, email: (c.inputs.labels as Record<string, string>).email_address }))).toEqual(
      EMAILS.map((email) => ({ type: 'email', project: PROJECT, email })),
    );
  });

  test('every policy notifies the created channels and the existing one', () => {
    const expected = [...EMAILS.map((e) => channelName(PROJECT, e)), EXISTING];
    const policies = ofType(POLICY);
    expect(policies).toHaveLength(6);
    for (const p of policies) expect(p.inputs.notificationChannels).toEqual(expected);
  });
});

describe('alert policies', () => {
  test('each says what it means and what to do, with a severity', () => {
    const severities = Object.fromEntries(ofType(POLICY).map((p) => [(p.inputs.userLabels as Record<string, string>).alert, p.inputs.severity]));
    expect(severities).toEqual({ dead_letters: 'ERROR', lane_age: 'ERROR', success_ratio: 'CRITICAL', recoveries: 'CRITICAL', function_errors: 'ERROR', suspensions: 'WARNING' });
    for (const p of ofType(POLICY)) {
      const doc = p.inputs.documentation as { content: string; mimeType: string };
      expect(doc.mimeType).toBe('text/markdown');
      expect(doc.content).toMatch(/docs\/observability\.md#[a-z0-9-]+/);
      expect(doc.content.split('\n\n').length).toBeGreaterThanOrEqual(3);
      expect(p.inputs.combiner).toBe('OR');
    }
  });

  test('dead letters: more than herald:alerts.deadLetterThreshold within its window', () => {
    const { condition, inputs } = policy('dead_letters');
    expect(metricTypes(condition.filter)).toEqual(['workload.googleapis.com/herald.deliveries.dead_lettered']);
    expect(condition.filter).toContain('resource.type = "generic_task"');
    expect(condition.aggregations).toEqual([{ alignmentPeriod: '900s', perSeriesAligner: 'ALIGN_DELTA', crossSeriesReducer: 'REDUCE_SUM' }]);
    expect([condition.comparison, condition.thresholdValue, condition.duration]).toEqual(['COMPARISON_GT', 3, '0s']);
    expect((inputs.documentation as { content: string }).content).toContain('More than 3 deliveries were dead-lettered within 15 min');
  });

  test("a lane's oldest unacked message: every lane subscription, and only those", () => {
    const { condition } = policy('lane_age');
    expect(metricTypes(condition.filter)).toEqual(['pubsub.googleapis.com/subscription/oldest_unacked_message_age']);
    expect(condition.filter).toContain('resource.type = "pubsub_subscription"');
    expect([condition.comparison, condition.thresholdValue, condition.duration]).toEqual(['COMPARISON_GT', 600, '120s']);
    expect(condition.aggregations).toEqual([{ alignmentPeriod: '60s', perSeriesAligner: 'ALIGN_MAX' }]);
    // Cloud Monitoring's full_match is RE2; the pattern uses only what RE2 and JavaScript read alike.
    const pattern = /subscription_id = monitoring\.regex\.full_match\("([^"]+)"\)/.exec(condition.filter)?.[1];
    expect(pattern).toBeDefined();
    const matches = (name: string) => new RegExp(`^(?:${pattern!})$`).test(name);
    const subscriptions = ofType('gcp:pubsub/subscription:Subscription').map((s) => String(s.inputs.name));
    const lanes = subscriptions.filter((s) => /-(shard-\d+|lane-[a-z_]+)-deliver$|-batch-gather$/.test(s));
    expect(lanes).toEqual(expect.arrayContaining([`${PREFIX}-shard-0-deliver`, `${PREFIX}-retry-shard-0-deliver`, `${PREFIX}-lane-acme_orders-deliver`, `${PREFIX}-batch-gather`]));
    expect(lanes.filter((s) => !matches(s))).toEqual([]);
    expect(subscriptions.filter((s) => !lanes.includes(s) && matches(s))).toEqual([]);
    // A lane Herald made at runtime (a dedicated lane of an older release) is watched too; another stack's is not.
    expect(matches(`${PREFIX}-lane-globex_billing-deliver`)).toBe(true);
    expect(matches('herald-shard-0-deliver')).toBe(false);
  });

  test('delivery success: delivered attempts over all attempts, below herald:alerts.sloRatio over its window', () => {
    const { condition } = policy('success_ratio');
    const attempts = 'workload.googleapis.com/herald.attempts';
    expect(metricTypes(condition.filter)).toEqual([attempts]);
    expect(condition.filter).toContain('metric.labels.outcome = "delivered"');
    expect(metricTypes(condition.denominatorFilter!)).toEqual([attempts]);
    expect(condition.denominatorFilter).not.toContain('outcome');
    const window = { alignmentPeriod: '7200s', perSeriesAligner: 'ALIGN_DELTA', crossSeriesReducer: 'REDUCE_SUM' };
    expect(condition.aggregations).toEqual([window]);
    expect(condition.denominatorAggregations).toEqual([window]);
    expect([condition.comparison, condition.thresholdValue, condition.duration]).toEqual(['COMPARISON_LT', 0.995, '0s']);
  });

  test('reconciler recoveries: any is an alert', () => {
    const { condition } = policy('recoveries');
    expect(metricTypes(condition.filter)).toEqual(['workload.googleapis.com/herald.deliveries.recovered']);
    expect(condition.aggregations).toEqual([{ alignmentPeriod: '300s', perSeriesAligner: 'ALIGN_DELTA', crossSeriesReducer: 'REDUCE_SUM' }]);
    expect([condition.comparison, condition.thresholdValue, condition.duration]).toEqual(['COMPARISON_GT', 0, '0s']);
  });

  test("function errors: each deployed function's 5xx over its requests, on Cloud Run", () => {
    const { condition } = policy('function_errors');
    expect(metricTypes(condition.filter)).toEqual(['run.googleapis.com/request_count']);
    expect(condition.filter).toContain('metric.labels.response_code_class = "5xx"');
    expect(condition.denominatorFilter).not.toContain('response_code_class');
    for (const filter of [condition.filter, condition.denominatorFilter!]) {
      expect(filter).toContain('resource.type = "cloud_run_revision"');
      expect(filter).toContain(`resource.labels.location = "${REGION}"`);
      const services = /service_name = one_of\(([^)]*)\)/.exec(filter)?.[1]?.split(', ').map((s) => JSON.parse(s) as string);
      const deployed = ofType('gcp:cloudfunctionsv2/function:Function').map((f) => String(f.inputs.name));
      expect(services?.sort()).toEqual([...deployed].sort());
      expect(deployed.sort()).toEqual([...FUNCTION_NAMES].sort());
    }
    const window = { alignmentPeriod: '300s', perSeriesAligner: 'ALIGN_DELTA', crossSeriesReducer: 'REDUCE_SUM', groupByFields: ['resource.label.service_name'] };
    expect([condition.aggregations, condition.denominatorAggregations]).toEqual([[window], [window]]);
    expect([condition.comparison, condition.thresholdValue, condition.duration]).toEqual(['COMPARISON_GT', 0.02, '0s']);
  });

  test('suspensions: any is an alert', () => {
    const { condition } = policy('suspensions');
    expect(metricTypes(condition.filter)).toEqual(['workload.googleapis.com/herald.destinations.suspended']);
    expect([condition.comparison, condition.thresholdValue, condition.duration]).toEqual(['COMPARISON_GT', 0, '0s']);
  });
});

describe('dashboard', () => {
  const dashboards = () => ofType('gcp:monitoring/dashboard:Dashboard');
  interface Tile {
    xPos: number;
    yPos: number;
    width: number;
    height: number;
    widget: { title: string; xyChart: { dataSets: { timeSeriesQuery: { timeSeriesFilter: { filter: string; aggregation: Aggregation } } }[] } };
  }
  const layout = () => (JSON.parse(String(dashboards()[0]!.inputs.dashboardJson)) as { displayName: string; mosaicLayout: { columns: number; tiles: Tile[] } }).mosaicLayout;
  const filters = () => layout().tiles.flatMap((t) => t.widget.xyChart.dataSets.map((d) => d.timeSeriesQuery.timeSeriesFilter));

  test('one dashboard, charting the catalogue metrics the operator reads first', () => {
    expect(dashboards()).toHaveLength(1);
    const types = new Set(filters().flatMap((f) => metricTypes(f.filter)));
    for (const key of ['eventsAccepted', 'eventsRefused', 'attempts', 'attemptDuration', 'endToEnd', 'deadLettered', 'recovered', 'suspensions'] as const) {
      expect(types).toContain(cloudMonitoringType(METRICS[key].name));
    }
    expect(types).toContain('pubsub.googleapis.com/subscription/oldest_unacked_message_age');
    expect(types).toContain('run.googleapis.com/request_count');
  });

  test('percentiles of the histograms, breakdowns by their labels', () => {
    const of = (name: string) => filters().filter((f) => metricTypes(f.filter)[0] === cloudMonitoringType(name));
    expect(of(METRICS.attemptDuration.name).map((f) => f.aggregation.crossSeriesReducer)).toEqual(['REDUCE_PERCENTILE_50', 'REDUCE_PERCENTILE_99']);
    expect(of(METRICS.endToEnd.name).map((f) => f.aggregation.crossSeriesReducer)).toEqual(['REDUCE_PERCENTILE_99']);
    expect(of(METRICS.eventsRefused.name)[0]!.aggregation.groupByFields).toEqual(['metric.label.reason']);
    expect(of(METRICS.attempts.name)[0]!.aggregation.groupByFields).toEqual(['metric.label.outcome']);
  });

  test('tiles fit the grid and do not overlap', () => {
    const { columns, tiles } = layout();
    expect(tiles).toHaveLength(10);
    const cells = new Set<string>();
    for (const t of tiles) {
      expect(t.xPos + t.width).toBeLessThanOrEqual(columns);
      for (let x = t.xPos; x < t.xPos + t.width; x++) for (let y = t.yPos; y < t.yPos + t.height; y++) cells.add(`${x},${y}`);
    }
    expect(cells.size).toBe(tiles.reduce((n, t) => n + t.width * t.height, 0));
  });
});

test("every Herald metric watched or charted is one the catalogue names, under Cloud Monitoring's type", () => {
  const policyFilters = ofType(POLICY).flatMap((p) => (p.inputs.conditions as { conditionThreshold: Threshold }[]).flatMap((c) => [c.conditionThreshold.filter, c.conditionThreshold.denominatorFilter ?? '']));
  const dashboardText = String(ofType('gcp:monitoring/dashboard:Dashboard')[0]!.inputs.dashboardJson).replace(/\\"/g, '"');
  const own = [...policyFilters, dashboardText].flatMap(metricTypes).filter((t) => t.startsWith('workload.googleapis.com/'));
  expect(own.length).toBeGreaterThan(10);
  expect(own.filter((t) => !CATALOGUE_TYPES.has(t))).toEqual([]);
});

test('the stack outputs name the dashboard and each policy; the monitoring API is enabled', async () => {
  const outputs = program.monitoringResources!;
  expect(await valueOf(outputs.dashboard)).toBe('herald-monitoring-dashboard-id');
  expect(Object.keys(outputs.alertPolicies).sort()).toEqual(['deadLetters', 'functionErrors', 'laneAge', 'recoveries', 'successRatio', 'suspensions']);
  expect(ofType('gcp:projects/service:Service').map((s) => s.inputs.service)).toContain('monitoring.googleapis.com');
});
