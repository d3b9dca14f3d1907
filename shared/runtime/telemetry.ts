import type http from 'node:http';
import { randomUUID } from 'node:crypto';
import type { CollectionResult, MetricReader } from '@opentelemetry/sdk-metrics';
import { NO_TELEMETRY } from '../adapters/otel/off';
import { cloudMonitoringReader, otlpReader, prometheusReader } from '../adapters/otel/readers';
import { HeraldConfig } from '../config-schema';
import { Telemetry } from '../ports/telemetry';

/** The process's telemetry, and, in local mode, what answers GET /metrics. */
export interface TelemetrySetup {
  telemetry: Telemetry;
  /** Prometheus text of every metric, read when scraped (local mode only). */
  prometheus?: http.RequestListener;
  /** The same numbers as data, collected when asked (local mode only: the Overview panel, runtime/health.ts). */
  collect?: () => Promise<CollectionResult>;
}

type TelemetrySettings = Pick<HeraldConfig, 'telemetry' | 'cloudMonitoring' | 'otlpEndpoint' | 'metricsIntervalMs' | 'projectId' | 'topicPrefix'>;

/**
 * The one place Herald's telemetry providers are made, from the settings (docs/configuration.md):
 * Cloud Monitoring where Herald runs on GCP (Cloud Run sets K_SERVICE), a collector over OTLP/HTTP
 * with HERALD_OTLP_ENDPOINT, Prometheus text in local mode; none of them (or HERALD_TELEMETRY=off):
 * nothing recorded at all. Spans are made beside it from the same settings (runtime/tracing.ts).
 */
export function createTelemetry(config: TelemetrySettings, where: { local: boolean }, env: NodeJS.ProcessEnv = process.env): TelemetrySetup {
  if (config.telemetry === 'off') return { telemetry: NO_TELEMETRY };
  const readers: MetricReader[] = [];
  let prometheus: http.RequestListener | undefined;
  let collect: TelemetrySetup['collect'];
  if (where.local) {
    const scrape = prometheusReader();
    readers.push(scrape.reader);
    prometheus = scrape.handler;
    collect = scrape.collect;
  }
  if (config.cloudMonitoring ?? (!where.local && env.K_SERVICE !== undefined)) readers.push(cloudMonitoringReader(config.projectId, config.metricsIntervalMs));
  if (config.otlpEndpoint !== undefined) readers.push(otlpReader(config.otlpEndpoint, config.metricsIntervalMs));
  if (readers.length === 0) return { telemetry: NO_TELEMETRY };
  // Loaded only now: a process that exports nothing loads no OpenTelemetry SDK.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { otelTelemetry } = require('../adapters/otel/otel-telemetry') as typeof import('../adapters/otel/otel-telemetry');
  const telemetry = otelTelemetry(
    {
      deployment: config.topicPrefix,
      function: env.K_SERVICE ?? env.FUNCTION_TARGET ?? (where.local ? 'local' : 'herald'),
      ...(env.K_REVISION !== undefined ? { revision: env.K_REVISION } : {}),
      instance: randomUUID(),
    },
    readers,
  );
  return { telemetry, ...(prometheus ? { prometheus } : {}), ...(collect ? { collect } : {}) };
}
