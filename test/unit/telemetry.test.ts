import { AggregationTemporality, DataPointType, HistogramMetricData, MetricData, MetricReader, ResourceMetrics, SumMetricData } from '@opentelemetry/sdk-metrics';
import { PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { otelTelemetry } from '../../shared/adapters/otel/otel-telemetry';
import { NO_TELEMETRY } from '../../shared/adapters/otel/off';
import { attemptOutcome, measureAttempt } from '../../shared/app/delivery/attempt';
import { countIngest } from '../../shared/app/intake/ingest';
import { loadConfig } from '../../shared/config';
import { Metrics } from '../../shared/ports/telemetry';
import { createTelemetry } from '../../shared/runtime/telemetry';
import { METRICS, MetricDefinition, prometheusName } from '../../shared/telemetry-catalogue';
import { DeliveryRecord } from '../../shared/domain/retry/delivery';

/** The SDK's own in-memory read: what an exporter would be handed, on demand. */
class TestReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
  protected onShutdown(): Promise<void> {
    return Promise.resolve();
  }
  async read(): Promise<ResourceMetrics> {
    const { resourceMetrics, errors } = await this.collect();
    expect(errors).toEqual([]);
    return resourceMetrics;
  }
}

const WHO = { deployment: 'herald', function: 'deliver', revision: 'deliver-00007-abc', instance: 'instance-1' };

function setup() {
  const reader = new TestReader();
  const telemetry = otelTelemetry(WHO, [reader]);
  return { reader, telemetry, metrics: telemetry.metrics };
}

function metric(rm: ResourceMetrics, name: string): MetricData | undefined {
  return rm.scopeMetrics.flatMap((s) => s.metrics).find((m) => m.descriptor.name === name);
}

function sumOf(rm: ResourceMetrics, name: string, labels: Record<string, string> = {}): number {
  const m = metric(rm, name) as SumMetricData | undefined;
  if (!m) return 0;
  expect(m.dataPointType).toBe(DataPointType.SUM);
  return m.dataPoints.filter((p) => Object.entries(labels).every(([k, v]) => p.attributes[k] === v)).reduce((n, p) => n + p.value, 0);
}

const record = (status: DeliveryRecord['status'], publishedAt = '2026-12-06T00:00:00.000Z') => ({ status, publishedAt }) as DeliveryRecord;
const ok = { kind: 'response', status: 200, durationMs: 42, bodyExcerpt: '' } as const;
const failed = { kind: 'response', status: 500, durationMs: 8, bodyExcerpt: '' } as const;

describe('the OpenTelemetry adapter', () => {
  it('writes as many points for 200 destinations as for one: no label grows with them', async () => {
    const points = async (destinations: number) => {
      const { reader, metrics, telemetry } = setup();
      const now = new Date('2026-12-06T00:00:01.500Z');
      for (let i = 0; i < 400; i++) {
        // A destination as the attempt knows it: its id is there, and must not reach a label.
        const destination: { id: string; topic?: string } = { id: `acct~hook-${i % destinations}` };
        measureAttempt(metrics, destination, i % 4 === 0 ? failed : ok, i % 4 === 0 ? { kind: 'retry', at: now, delayMs: 1, retry: 1, reason: 'x' } : { kind: 'delivered' }, record(i % 4 === 0 ? 'PENDING' : 'DELIVERED'), now);
      }
      const rm = await reader.read();
      await telemetry.shutdown();
      return rm.scopeMetrics.flatMap((m) => m.metrics).reduce((n, m) => n + m.dataPoints.length, 0);
    };
    const one = await points(1);
    expect(one).toBeGreaterThan(0);
    expect(await points(200)).toBe(one);
  });

  it('counts attempts by outcome and destination kind, and times them', async () => {
    const { reader, metrics, telemetry } = setup();
    const now = new Date('2026-12-06T00:00:01.500Z');
    measureAttempt(metrics, {}, ok, { kind: 'delivered' }, record('DELIVERED'), now);
    measureAttempt(metrics, {}, ok, { kind: 'delivered' }, record('DELIVERED'), now);
    measureAttempt(metrics, { topic: 'projects/p/topics/t' }, failed, { kind: 'retry', at: now, delayMs: 1, retry: 1, reason: 'x' }, record('PENDING'), now);
    measureAttempt(metrics, {}, failed, { kind: 'dead', cause: 'retries-exhausted', reason: 'x' } as never, record('DEAD'), now);
    const rm = await reader.read();
    expect(sumOf(rm, 'herald.attempts', { outcome: 'delivered', destination_kind: 'webhook' })).toBe(2);
    expect(sumOf(rm, 'herald.attempts', { outcome: 'retry', destination_kind: 'topic' })).toBe(1);
    expect(sumOf(rm, 'herald.attempts', { outcome: 'dead' })).toBe(1);
    expect(sumOf(rm, 'herald.attempts')).toBe(4);
    const duration = metric(rm, 'herald.attempt.duration') as HistogramMetricData;
    expect(duration.descriptor.unit).toBe('ms');
    const delivered = duration.dataPoints.find((p) => p.attributes.outcome === 'delivered')!;
    expect(delivered.value.count).toBe(2);
    expect(delivered.value.sum).toBe(84);
    const latency = (metric(rm, 'herald.delivery.latency') as HistogramMetricData).dataPoints;
    expect(latency).toHaveLength(1);
    expect(latency[0]!.value).toMatchObject({ count: 2, sum: 3000 });
    await telemetry.shutdown();
  });

  it('adds counters without labels and records histograms with their own buckets', async () => {
    const { reader, metrics } = setup();
    metrics.add('eventsAccepted', 5);
    metrics.add('eventsAccepted', 2);
    metrics.add('recovered', 0);
    metrics.add('rateChanges', 1, { direction: 'down' });
    metrics.record('groupCommitSize', 37);
    metrics.record('pumpLag', 1_200);
    const rm = await reader.read();
    expect(sumOf(rm, 'herald.events.accepted')).toBe(7);
    expect(sumOf(rm, 'herald.deliveries.recovered')).toBe(0);
    expect(sumOf(rm, 'herald.rate.changes', { direction: 'down' })).toBe(1);
    const size = (metric(rm, 'herald.group_commit.size') as HistogramMetricData).dataPoints[0]!.value;
    expect(size.buckets.boundaries).toEqual([1, 2, 5, 10, 20, 50, 100, 200, 500]);
    expect(size.buckets.counts[5]).toBe(1); // 37 is in (20, 50]: counts[0] is (-∞, 1]
  });

  it('names the service, the function, its revision and the instance on the resource', async () => {
    const { reader } = setup();
    const { resource } = await reader.read();
    expect(resource.attributes).toMatchObject({
      'service.name': 'herald',
      'service.namespace': 'herald',
      'service.instance.id': 'instance-1',
      'faas.name': 'deliver',
      'faas.version': 'deliver-00007-abc',
    });
  });

  it('makes every catalogue metric, with its unit and description, and nothing else', async () => {
    const { reader, metrics } = setup();
    for (const [key, def] of Object.entries(METRICS) as [keyof typeof METRICS, MetricDefinition][]) {
      const labels = Object.fromEntries(Object.entries(def.labels).map(([k, v]) => [k, v === 'bounded' ? 'x' : v[0]!]));
      if (def.kind === 'counter') (metrics.add as (k: string, v: number, l: object) => void)(key, 1, labels);
      else (metrics.record as (k: string, v: number, l: object) => void)(key, 1, labels);
    }
    const rm = await reader.read();
    const made = rm.scopeMetrics.flatMap((s) => s.metrics);
    expect(made.map((m) => m.descriptor.name).sort()).toEqual(Object.values(METRICS).map((m) => m.name).sort());
    for (const def of Object.values(METRICS) as MetricDefinition[]) {
      const m = made.find((x) => x.descriptor.name === def.name)!;
      expect({ unit: m.descriptor.unit, description: m.descriptor.description }).toEqual({ unit: def.unit, description: def.description });
      expect(m.dataPointType).toBe(def.kind === 'counter' ? DataPointType.SUM : DataPointType.HISTOGRAM);
    }
    // The catalogue's Prometheus names are the ones the exporter prints (the alerts and local mode's /metrics rely on them).
    const text = new PrometheusSerializer().serialize(rm);
    for (const def of Object.values(METRICS) as MetricDefinition[]) {
      const series = def.kind === 'histogram' ? `${prometheusName(def)}_bucket{` : `${prometheusName(def)}{`;
      expect(text).toContain(`\n${series}`);
      expect(text).toContain(`# TYPE ${prometheusName(def)} ${def.kind}`);
    }
  });

  it('takes only the labels the catalogue allows (a compile-time check)', () => {
    const typed = (m: Metrics) => {
      // @ts-expect-error a destination id is never a label
      m.add('attempts', 1, { outcome: 'delivered', destination_kind: 'webhook', destination: 'orders' });
      // @ts-expect-error an outcome outside the closed set
      m.add('attempts', 1, { outcome: 'lost', destination_kind: 'webhook' });
      // @ts-expect-error a metric with labels needs them
      m.add('attempts', 1);
      // @ts-expect-error a histogram is recorded, not added
      m.add('pumpLag', 1);
    };
    expect(typed).toBeInstanceOf(Function);
  });
});

describe('what Herald records', () => {
  it("maps an attempt's decision and record onto the catalogue's outcomes", () => {
    expect(attemptOutcome({ kind: 'delivered' }, { status: 'DELIVERED' })).toBe('delivered');
    expect(attemptOutcome({ kind: 'suspend', cause: 'gone', reason: '410' } as never, { status: 'QUEUED' })).toBe('suspended');
    expect(attemptOutcome({ kind: 'queue', reason: 'x' }, { status: 'QUEUED' })).toBe('queued');
    expect(attemptOutcome({ kind: 'throttle' } as never, { status: 'PENDING' })).toBe('retry');
  });

  it('counts ingest answers: accepted events, refused ones by reason', async () => {
    const { reader, metrics } = setup();
    countIngest(metrics, { kind: 'accepted', body: { accepted: ['a', 'b', 'c'] } });
    countIngest(metrics, { kind: 'invalid', body: { error: 'x', issues: [] } });
    countIngest(metrics, { kind: 'too-many', retryAfterSeconds: 1, body: { error: 'x', issues: [] } } as never);
    countIngest(metrics, { kind: 'unavailable', retryAfterSeconds: 1, body: { error: 'x', errorId: 'e', accepted: ['a'], failed: [{ id: 'b', error: 'x' }, { id: 'c', error: 'x' }] } });
    const rm = await reader.read();
    expect(sumOf(rm, 'herald.events.accepted')).toBe(4);
    expect(sumOf(rm, 'herald.events.refused', { reason: 'invalid' })).toBe(1);
    expect(sumOf(rm, 'herald.events.refused', { reason: 'quota' })).toBe(1);
    expect(sumOf(rm, 'herald.events.refused', { reason: 'unavailable' })).toBe(2);
  });
});

describe('the telemetry settings', () => {
  const base = { HERALD_ADMIN_TOKEN: 'a'.repeat(16), HERALD_INGEST_TOKEN: 'b'.repeat(16) };

  it('default to on, every 60 s, Cloud Monitoring left to where Herald runs', () => {
    const c = loadConfig(base);
    expect({ telemetry: c.telemetry, cloudMonitoring: c.cloudMonitoring, otlpEndpoint: c.otlpEndpoint, metricsIntervalMs: c.metricsIntervalMs }).toEqual({
      telemetry: 'on',
      cloudMonitoring: undefined,
      otlpEndpoint: undefined,
      metricsIntervalMs: 60_000,
    });
  });

  it.each([
    ['HERALD_TELEMETRY', 'maybe', 'must be on or off'],
    ['HERALD_OTLP_ENDPOINT', 'ftp://collector:4318', 'must be an http(s) URL'],
    ['HERALD_METRICS_INTERVAL_MS', '1000', 'HERALD_METRICS_INTERVAL_MS="1000"'],
    ['HERALD_CLOUD_MONITORING', 'sometimes', 'must be true or false'],
  ])('refuse %s=%s', (name, value, message) => {
    expect(() => loadConfig({ ...base, [name]: value })).toThrow(message);
  });

  it('make nothing when off, or when nothing would read the metrics', async () => {
    const on = loadConfig(base);
    expect(createTelemetry({ ...on, telemetry: 'off' }, { local: true }, {}).telemetry).toBe(NO_TELEMETRY);
    // Not on GCP (no K_SERVICE), no collector: no exporter, so no SDK work per call either.
    expect(createTelemetry(on, { local: false }, {}).telemetry).toBe(NO_TELEMETRY);
  });

  it('serve Prometheus text in local mode', async () => {
    const setup = createTelemetry(loadConfig(base), { local: true }, {});
    expect(setup.telemetry).not.toBe(NO_TELEMETRY);
    expect(setup.prometheus).toBeInstanceOf(Function);
    await setup.telemetry.shutdown();
  });
});
