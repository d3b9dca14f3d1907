import { Attributes, Counter, Histogram, Meter } from '@opentelemetry/api';
import { CounterKey, HistogramKey, LabelArgs, Metrics } from '../../ports/telemetry';
import { METRICS, MetricKey } from '../../telemetry-catalogue';

/**
 * Histogram bounds, by metric: one Cloud Monitoring distribution point costs the same whatever
 * its buckets, so these are set for reading, from the shortest answer worth telling apart to
 * the longest wait Herald allows (an attempt: 60 s; a delivery: a day of retries).
 */
const BUCKETS: Record<HistogramKey, readonly number[]> = {
  attemptDuration: [5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000],
  endToEnd: [10, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 300_000, 900_000, 3_600_000, 21_600_000, 86_400_000],
  pumpLag: [100, 500, 1_000, 5_000, 15_000, 60_000, 300_000, 900_000, 3_600_000],
  groupCommitSize: [1, 2, 5, 10, 20, 50, 100, 200, 500],
};

/** Herald's metrics on an OpenTelemetry meter: one instrument per catalogue entry, made once. */
export class OtelMetrics implements Metrics {
  private readonly counters = new Map<MetricKey, Counter>();
  private readonly histograms = new Map<MetricKey, Histogram>();

  constructor(meter: Meter) {
    for (const [key, m] of Object.entries(METRICS) as [MetricKey, (typeof METRICS)[MetricKey]][]) {
      const options = { unit: m.unit, description: m.description };
      if (m.kind === 'counter') this.counters.set(key, meter.createCounter(m.name, options));
      else this.histograms.set(key, meter.createHistogram(m.name, { ...options, advice: { explicitBucketBoundaries: [...BUCKETS[key as HistogramKey]] } }));
    }
  }

  add<K extends CounterKey>(key: K, value: number, ...labels: LabelArgs<K>): void {
    this.counters.get(key)!.add(value, labels[0] as Attributes | undefined);
  }

  record<K extends HistogramKey>(key: K, value: number, ...labels: LabelArgs<K>): void {
    this.histograms.get(key)!.record(value, labels[0] as Attributes | undefined);
  }
}
