import type { CollectionResult, ResourceMetrics } from '@opentelemetry/sdk-metrics';
import { Buckets, HealthSample, keepSamples, summarize } from '../../domain/health/health-rates';
import { LaneAges } from '../../domain/health/lane-ages';
import { HealthReader, HealthReading } from '../../ports/health';
import { METRICS } from '../../telemetry-catalogue';

/** Samples closer together than this replace each other: a console polling every few seconds keeps the ring short. */
const SAMPLE_SPACING_MS = 5_000;

const EMPTY: Buckets = { bounds: [], counts: [] };

/** The cumulative totals Herald's health is read from, in one collection of the process's metrics. */
export function sampleOf(metrics: ResourceMetrics, at: number): HealthSample {
  const sample: HealthSample = { at, accepted: 0, delivered: 0, deadLettered: 0, endToEnd: EMPTY };
  for (const metric of metrics.scopeMetrics.flatMap((s) => s.metrics)) {
    const name = metric.descriptor.name;
    for (const point of metric.dataPoints) {
      const value: unknown = point.value;
      if (typeof value === 'number') {
        if (name === METRICS.eventsAccepted.name) sample.accepted += value;
        else if (name === METRICS.deadLettered.name) sample.deadLettered += value;
        else if (name === METRICS.attempts.name && point.attributes.outcome === 'delivered') sample.delivered += value;
      } else if (name === METRICS.endToEnd.name && typeof value === 'object' && value !== null && 'buckets' in value) {
        const { boundaries, counts } = (value as { buckets: { boundaries: number[]; counts: number[] } }).buckets;
        // One point per destination kind, on the same bounds: added bucket by bucket.
        sample.endToEnd = sample.endToEnd.counts.length === 0 ? { bounds: boundaries, counts } : { bounds: boundaries, counts: counts.map((c, i) => c + (sample.endToEnd.counts[i] ?? 0)) };
      }
    }
  }
  return sample;
}

/**
 * The numbers GET /metrics shows, read in this process (local mode runs every function in one):
 * each read collects the cumulative totals and keeps them, so a window's rates are the change
 * since the newest sample before it began. The first sample is the zeros the metrics started
 * from, taken when this is made: make it with the meter provider.
 */
export class ProcessHealth implements HealthReader {
  private samples: HealthSample[];

  constructor(
    private readonly collect: () => Promise<CollectionResult>,
    private readonly laneAges: LaneAges,
    startedAt: Date,
  ) {
    this.samples = [{ at: startedAt.getTime(), accepted: 0, delivered: 0, deadLettered: 0, endToEnd: EMPTY }];
  }

  async read(windowMs: number, now: Date): Promise<HealthReading> {
    const { resourceMetrics } = await this.collect();
    const latest = sampleOf(resourceMetrics, now.getTime());
    const health = summarize(this.samples, latest, windowMs);
    this.samples = keepSamples(this.samples, latest, SAMPLE_SPACING_MS);
    const oldest = this.laneAges.oldestSince(now.getTime() - windowMs);
    return {
      source: 'process',
      acceptedPerSecond: health.acceptedPerSecond,
      deliveredPerSecond: health.deliveredPerSecond,
      endToEndP99Ms: health.endToEndP99Ms,
      deadLettered: health.deadLettered,
      lanesOldestBacklogSeconds: oldest === undefined ? null : Math.round(oldest / 100) / 10,
      lanesBacklogBasis: 'the age of the oldest first attempt this process took from a lane in the window (as Herald sees it; not Pub/Sub’s backlog)',
      counts: { accepted: health.accepted, delivered: health.delivered },
      coveredSeconds: health.coveredSeconds,
    };
  }
}
