import type { protos } from '@google-cloud/monitoring';
import { CloudMonitoringHealth, healthRequests, laneSubscriptionPattern, newestValue, TimeSeriesLister } from '../../shared/adapters/cloud-monitoring/health';
import { readOverview } from '../../shared/app/admin/health-admin';
import { OPERATOR } from '../../shared/domain/access/account';
import { LaneAges } from '../../shared/domain/health/lane-ages';
import { HealthReader } from '../../shared/ports/health';
import { deployedHealth, localHealth } from '../../shared/runtime/health';
import { createTelemetry } from '../../shared/runtime/telemetry';
import { cloudMonitoringType, METRICS } from '../../shared/telemetry-catalogue';

/** Where the Overview panel's numbers come from: this process's metrics, Cloud Monitoring (its client stood in for), or nowhere. */

const SETTINGS = { telemetry: 'on' as const, projectId: 'acme-prod', topicPrefix: 'herald', metricsIntervalMs: 60_000 };
const silent = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

test('in local mode, the numbers GET /metrics shows: rates over the window, p99 of the deliveries, dead letters, lane ages', async () => {
  const started = new Date('2026-12-01T10:00:00Z');
  const setup = createTelemetry(SETTINGS, { local: true }, {});
  const ages = new LaneAges();
  const health = localHealth(SETTINGS, setup, ages, started);
  const { metrics } = setup.telemetry;
  metrics.add('eventsAccepted', 30);
  for (let i = 0; i < 20; i++) {
    metrics.add('attempts', 1, { outcome: 'delivered', destination_kind: 'webhook' });
    metrics.record('endToEnd', i < 19 ? 20 : 800, { destination_kind: 'webhook' });
  }
  metrics.add('attempts', 5, { outcome: 'retry', destination_kind: 'webhook' });
  metrics.add('deadLettered', 2);
  ages.seen(started.getTime() + 1_000, started.getTime() + 4_000);

  const reading = await health.read(300_000, new Date(started.getTime() + 10_000));
  expect(reading).toMatchObject({ source: 'process', acceptedPerSecond: 3, deliveredPerSecond: 2, deadLettered: 2, counts: { accepted: 30, delivered: 20 }, coveredSeconds: 10, lanesOldestBacklogSeconds: 3 });
  // The 99th of 20 is the slow one, in (500, 1000].
  expect(reading.endToEndP99Ms).toBeGreaterThan(500);
  expect(reading.endToEndP99Ms).toBeLessThanOrEqual(1_000);
  // A minute later with nothing new: nothing in the window after the last read.
  const later = await health.read(60_000, new Date(started.getTime() + 130_000));
  expect(later).toMatchObject({ acceptedPerSecond: 0, deliveredPerSecond: 0, deadLettered: 0, endToEndP99Ms: null, lanesOldestBacklogSeconds: null });
  await setup.telemetry.shutdown();
});

test('telemetry off, or deployed without Cloud Monitoring: no numbers, and why', async () => {
  const off = await localHealth({ ...SETTINGS, telemetry: 'off' }, createTelemetry({ ...SETTINGS, telemetry: 'off' }, { local: true }, {}), new LaneAges(), new Date()).read(60_000, new Date());
  expect(off).toMatchObject({ source: 'none', acceptedPerSecond: null, deadLettered: null });
  expect(off.reason).toContain('HERALD_TELEMETRY=on');
  const otlpOnly = await deployedHealth(SETTINGS, {}).read(60_000, new Date());
  expect(otlpOnly.source).toBe('none');
  expect(otlpOnly.reason).toContain('HERALD_CLOUD_MONITORING=true');
});

type TimeSeries = protos.google.monitoring.v3.ITimeSeries;
const point = (value: protos.google.monitoring.v3.ITypedValue): TimeSeries[] => [{ points: [{ value }, { value: { doubleValue: -1 } }] }];

test('Cloud Monitoring: one request per number, on the catalogue’s metric types and the lanes’ subscriptions', () => {
  const now = new Date('2026-12-01T10:00:00Z');
  const requests = healthRequests('acme-prod', 'herald', 300_000, now);
  const end = now.getTime() / 1000;
  expect(requests.accepted).toEqual({
    name: 'projects/acme-prod',
    filter: `metric.type = "${cloudMonitoringType(METRICS.eventsAccepted.name)}" AND resource.type = "generic_task" AND resource.labels.namespace = "herald"`,
    interval: { startTime: { seconds: end - 300 }, endTime: { seconds: end } },
    aggregation: { alignmentPeriod: { seconds: 300 }, perSeriesAligner: 'ALIGN_RATE', crossSeriesReducer: 'REDUCE_SUM' },
    view: 'FULL',
  });
  expect(requests.delivered.filter).toContain(`"${cloudMonitoringType(METRICS.attempts.name)}"`);
  expect(requests.delivered.filter).toContain('metric.labels.outcome = "delivered"');
  expect(requests.deadLettered.aggregation).toMatchObject({ perSeriesAligner: 'ALIGN_DELTA', crossSeriesReducer: 'REDUCE_SUM' });
  expect(requests.endToEndP99.filter).toContain(`"${cloudMonitoringType(METRICS.endToEnd.name)}"`);
  expect(requests.endToEndP99.aggregation).toMatchObject({ perSeriesAligner: 'ALIGN_DELTA', crossSeriesReducer: 'REDUCE_PERCENTILE_99' });
  expect(requests.lanes.filter).toContain('metric.type = "pubsub.googleapis.com/subscription/oldest_unacked_message_age"');
  expect(requests.lanes.filter).toContain(`monitoring.regex.full_match("${laneSubscriptionPattern('herald')}")`);
  // Pub/Sub reports late: the lanes look back 10 minutes even for a 1-minute window.
  expect(healthRequests('acme-prod', 'herald', 60_000, now).lanes.interval?.startTime).toEqual({ seconds: end - 600 });
  const lanes = new RegExp(`^${laneSubscriptionPattern('herald')}$`);
  for (const sub of ['herald-shard-0-deliver', 'herald-retry-shard-3-deliver', 'herald-lane-orders-deliver']) expect(sub).toMatch(lanes);
  for (const sub of ['herald-dead-letter-hold', 'herald-batch-pull', 'other-shard-0-deliver']) expect(sub).not.toMatch(lanes);
  expect(laneSubscriptionPattern('a.b')).toMatch(/^a\\\.b-/);
});

test('Cloud Monitoring: each answer’s newest point, as the reading', async () => {
  const asked: protos.google.monitoring.v3.IListTimeSeriesRequest[] = [];
  const answers: Record<string, TimeSeries[]> = {
    [METRICS.eventsAccepted.name]: point({ doubleValue: 12.34567 }),
    [METRICS.attempts.name]: point({ doubleValue: 11.5 }),
    [METRICS.deadLettered.name]: point({ int64Value: '3' }),
    [METRICS.endToEnd.name]: point({ doubleValue: 1234.56 }),
    oldest_unacked_message_age: point({ int64Value: 42 }),
  };
  const client: TimeSeriesLister = {
    listTimeSeries: (request) => {
      asked.push(request);
      const key = Object.keys(answers).find((k) => request.filter?.includes(`${k}"`)) ?? '';
      return Promise.resolve([answers[key] ?? []]);
    },
  };
  const reading = await new CloudMonitoringHealth(client, 'acme-prod', 'herald').read(300_000, new Date());
  expect(asked).toHaveLength(5);
  expect(reading).toMatchObject({ source: 'cloud-monitoring', acceptedPerSecond: 12.346, deliveredPerSecond: 11.5, deadLettered: 3, endToEndP99Ms: 1234.6, lanesOldestBacklogSeconds: 42 });
  expect(reading.lanesBacklogBasis).toContain('oldest unacked');
  // No series (no traffic yet, or a metric never written): null, not 0.
  const empty = await new CloudMonitoringHealth({ listTimeSeries: () => Promise.resolve([[]]) }, 'acme-prod', 'herald').read(300_000, new Date());
  expect(empty).toMatchObject({ acceptedPerSecond: null, deadLettered: null, lanesOldestBacklogSeconds: null });
  expect(newestValue([{ points: [] }])).toBeNull();
});

test('GET /admin/overview: the operator only, a checked window, a failure to read said as unavailable', async () => {
  const health: HealthReader = { read: (windowMs) => Promise.resolve({ source: 'process', acceptedPerSecond: windowMs, deliveredPerSecond: 0, endToEndP99Ms: null, deadLettered: 0, lanesOldestBacklogSeconds: null }) };
  const deps = { health, clock: { now: () => new Date('2026-12-01T10:00:00Z') }, log: silent };
  expect(await readOverview(deps, OPERATOR, { window: '1m' })).toEqual({
    kind: 'ok',
    body: { window: '1m', source: 'process', acceptedPerSecond: 60_000, deliveredPerSecond: 0, endToEndP99Ms: null, deadLettered: 0, lanesOldestBacklogSeconds: null, asOf: '2026-12-01T10:00:00.000Z' },
  });
  expect((await readOverview(deps, { kind: 'key', account: 'acme', keyId: 'k1', scopes: ['read'] }, {})).kind).toBe('forbidden');
  expect((await readOverview(deps, { kind: 'portal', account: 'acme', sessionId: 's1', scopes: ['read'] }, {})).kind).toBe('forbidden');
  expect(await readOverview(deps, OPERATOR, { window: '2d' })).toMatchObject({ kind: 'invalid', body: { issues: [{ path: 'window' }] } });
  const failing = { ...deps, health: { read: () => Promise.reject(new Error('PERMISSION_DENIED')) } };
  expect(await readOverview(failing, OPERATOR, {})).toMatchObject({ kind: 'unavailable', body: { error: expect.stringContaining('PERMISSION_DENIED') as string } });
});
