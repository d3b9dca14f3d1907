import type http from 'node:http';
import type { CollectionResult, MetricReader } from '@opentelemetry/sdk-metrics';

/*
 * The ways Herald's metrics leave the process, one MetricReader each. Each exporter package is
 * loaded only when its way is chosen: together they take ~0.5 s to load, paid on every cold
 * start otherwise.
 */

/* eslint-disable @typescript-eslint/no-require-imports */

/** Cloud Monitoring (custom metrics `workload.googleapis.com/<name>`), every `intervalMs`. */
export function cloudMonitoringReader(projectId: string, intervalMs: number): MetricReader {
  const { PeriodicExportingMetricReader } = require('@opentelemetry/sdk-metrics') as typeof import('@opentelemetry/sdk-metrics');
  const { MetricExporter } = require('@google-cloud/opentelemetry-cloud-monitoring-exporter') as typeof import('@google-cloud/opentelemetry-cloud-monitoring-exporter');
  return new PeriodicExportingMetricReader({ exporter: new MetricExporter({ projectId }), exportIntervalMillis: intervalMs, exportTimeoutMillis: Math.min(intervalMs, 30_000) });
}

/** OTLP/HTTP (JSON) to a collector at `endpoint` (its base URL: metrics go to `<endpoint>/v1/metrics`), every `intervalMs`. */
export function otlpReader(endpoint: string, intervalMs: number): MetricReader {
  const { PeriodicExportingMetricReader } = require('@opentelemetry/sdk-metrics') as typeof import('@opentelemetry/sdk-metrics');
  const { OTLPMetricExporter } = require('@opentelemetry/exporter-metrics-otlp-http') as typeof import('@opentelemetry/exporter-metrics-otlp-http');
  const url = `${endpoint.replace(/\/+$/, '')}/v1/metrics`;
  return new PeriodicExportingMetricReader({ exporter: new OTLPMetricExporter({ url }), exportIntervalMillis: intervalMs, exportTimeoutMillis: Math.min(intervalMs, 30_000) });
}

/**
 * Prometheus text, read when scraped: the reader, the handler that answers a scrape (local
 * mode's GET /metrics), and the same reader's collection as data (the Overview panel's numbers).
 */
export function prometheusReader(): { reader: MetricReader; handler: http.RequestListener; collect: () => Promise<CollectionResult> } {
  const { PrometheusExporter } = require('@opentelemetry/exporter-prometheus') as typeof import('@opentelemetry/exporter-prometheus');
  // Herald's own server answers the scrape; the exporter starts none of its own.
  const exporter = new PrometheusExporter({ preventServerStart: true });
  return { reader: exporter, handler: (req, res) => exporter.getMetricsRequestHandler(req, res), collect: () => exporter.collect() };
}
