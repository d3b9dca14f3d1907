import { createTracing } from '../../shared/runtime/tracing';

/**
 * Exports one span, continuing the traceparent given, to the OTLP/HTTP endpoint given, then
 * exits: run as a process of its own, as the exporter loads its HTTP transport with a dynamic
 * import, which Jest's module sandbox refuses. Usage: otlp-span.ts <endpoint> <traceparent>
 */
async function main(): Promise<void> {
  const [endpoint, traceparent] = process.argv.slice(2);
  const tracing = createTracing({ telemetry: 'on', traceSampleRatio: 0, projectId: 'p', topicPrefix: 'herald', otlpEndpoint: endpoint! }, { local: true }, {});
  await tracing.inSpan('herald.ingest', { parent: { traceparent: traceparent! } }, () => Promise.resolve());
  await tracing.shutdown();
}

void main();
