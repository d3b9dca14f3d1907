import { randomUUID } from 'node:crypto';
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { HeraldConfig } from '../config-schema';
import { NO_TRACING, Tracing } from '../ports/tracing';

type TracingSettings = Pick<HeraldConfig, 'telemetry' | 'cloudTrace' | 'otlpEndpoint' | 'traceSampleRatio' | 'projectId' | 'topicPrefix'>;

/* eslint-disable @typescript-eslint/no-require-imports */

/**
 * The process's tracing, from the settings (docs/observability.md#traces): Cloud Trace where
 * Herald runs on GCP (Cloud Run sets K_SERVICE) or HERALD_CLOUD_TRACE=true, a collector over
 * OTLP/HTTP with HERALD_OTLP_ENDPOINT, `processors` given by a test; none of them (local mode by
 * default) or HERALD_TELEMETRY=off: NO_TRACING, and no OpenTelemetry module is loaded.
 */
export function createTracing(config: TracingSettings, where: { local: boolean }, env: NodeJS.ProcessEnv = process.env, processors: SpanProcessor[] = []): Tracing {
  if (config.telemetry === 'off') return NO_TRACING;
  const all = [...processors];
  const exporters = require('../adapters/otel/span-exporters') as typeof import('../adapters/otel/span-exporters');
  if (config.cloudTrace ?? (!where.local && env.K_SERVICE !== undefined)) all.push(exporters.cloudTraceProcessor(config.projectId));
  if (config.otlpEndpoint !== undefined) all.push(exporters.otlpSpanProcessor(config.otlpEndpoint));
  if (all.length === 0) return NO_TRACING;
  const { OtelTracing } = require('../adapters/otel/otel-tracing') as typeof import('../adapters/otel/otel-tracing');
  return new OtelTracing({
    projectId: config.projectId,
    sampleRatio: config.traceSampleRatio,
    resource: {
      'service.name': 'herald',
      'service.namespace': config.topicPrefix,
      'service.instance.id': randomUUID(),
      'faas.name': env.K_SERVICE ?? env.FUNCTION_TARGET ?? (where.local ? 'local' : 'herald'),
      ...(env.K_REVISION !== undefined ? { 'faas.version': env.K_REVISION } : {}),
    },
    processors: all,
  });
}
