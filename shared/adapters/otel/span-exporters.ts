import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';

/*
 * The ways Herald's spans leave the process, one batching processor each. Each exporter package
 * is loaded only when its way is chosen: a cold start pays for none it does not use.
 */

/* eslint-disable @typescript-eslint/no-require-imports */

// A function's CPU may be throttled between requests: export often, in small batches, and flush at shutdown.
const BATCH = { scheduledDelayMillis: 1_000, maxExportBatchSize: 256, maxQueueSize: 4_096 };

/** Cloud Trace, in `projectId`. */
export function cloudTraceProcessor(projectId: string): SpanProcessor {
  const { BatchSpanProcessor } = require('@opentelemetry/sdk-trace-base') as typeof import('@opentelemetry/sdk-trace-base');
  const { TraceExporter } = require('@google-cloud/opentelemetry-cloud-trace-exporter') as typeof import('@google-cloud/opentelemetry-cloud-trace-exporter');
  return new BatchSpanProcessor(new TraceExporter({ projectId }), BATCH);
}

/** OTLP/HTTP to a collector at `endpoint` (its base URL: spans go to `<endpoint>/v1/traces`). */
export function otlpSpanProcessor(endpoint: string): SpanProcessor {
  const { BatchSpanProcessor } = require('@opentelemetry/sdk-trace-base') as typeof import('@opentelemetry/sdk-trace-base');
  const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-http') as typeof import('@opentelemetry/exporter-trace-otlp-http');
  return new BatchSpanProcessor(new OTLPTraceExporter({ url: `${endpoint.replace(/\/+$/, '')}/v1/traces` }), BATCH);
}
