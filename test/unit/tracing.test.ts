import http from 'node:http';
import { AddressInfo } from 'node:net';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OtelTracing } from '../../shared/adapters/otel/otel-tracing';
import { TracedHttpSender } from '../../shared/adapters/traced-senders';
import { createLogger } from '../../shared/log';
import { HttpRequest } from '../../shared/ports/http';
import { NO_TRACING } from '../../shared/ports/tracing';
import { createTracing } from '../../shared/runtime/tracing';
import { useTracing } from '../../shared/tracing';

const PRODUCER = { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' };
const UNSAMPLED = { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00' };

function tracingWith(sampleRatio: number) {
  const exporter = new InMemorySpanExporter();
  const tracing = new OtelTracing({ projectId: 'p1', sampleRatio, resource: { 'service.name': 'herald' }, processors: [new SimpleSpanProcessor(exporter)] });
  return { exporter, tracing };
}

afterEach(() => {
  useTracing(NO_TRACING);
});

test('a carried context is continued: same trace, the carrier its parent; its sampling decision kept', async () => {
  const { exporter, tracing } = tracingWith(0);
  await tracing.inSpan('herald.ingest', { parent: PRODUCER }, async (span) => {
    expect(span.sampled).toBe(true);
    expect(span.carrier?.traceparent).toMatch(/^00-4bf92f3577b34da6a3ce929d0e0e4736-[0-9a-f]{16}-01$/);
  });
  const [ended] = exporter.getFinishedSpans();
  expect(ended!.parentSpanContext?.spanId).toBe('00f067aa0ba902b7');
  await tracing.inSpan('herald.ingest', { parent: UNSAMPLED }, async (span) => expect(span.sampled).toBe(false));
  expect(exporter.getFinishedSpans()).toHaveLength(1);
});

test('a failure of a trace not sampled is still kept, as a span of its own in that trace', async () => {
  const { exporter, tracing } = tracingWith(0);
  await tracing.inSpan('herald.attempt', { parent: UNSAMPLED }, async () => {
    tracing.keepFailure('herald.send.failed', { 'error.message': 'HTTP 503' });
  });
  const kept = exporter.getFinishedSpans();
  expect(kept).toHaveLength(1);
  expect(kept[0]).toMatchObject({ name: 'herald.send.failed', status: { code: 2, message: 'HTTP 503' } });
  expect(kept[0]!.spanContext().traceId).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
  expect(kept[0]!.events.map((e) => e.name)).toEqual(['herald.send.failed']);
});

test('a sampled failure is an event on the active span', async () => {
  const { exporter, tracing } = tracingWith(1);
  await tracing.inSpan('herald.send', {}, async () => tracing.keepFailure('herald.send.failed', { 'error.message': 'timeout' }));
  const [span] = exporter.getFinishedSpans();
  expect(span!.events.map((e) => e.name)).toEqual(['herald.send.failed']);
});

test("log lines under a span carry Cloud Logging's trace fields; outside one, none", async () => {
  const { tracing } = tracingWith(1);
  useTracing(tracing);
  const lines: Record<string, unknown>[] = [];
  const log = createLogger({ write: (l) => lines.push(JSON.parse(l) as Record<string, unknown>) });
  log.info('outside');
  let spanId = '';
  await tracing.inSpan('herald.attempt', { parent: PRODUCER }, async (span) => {
    spanId = span.carrier!.traceparent.slice(36, 52);
    await Promise.resolve();
    log.info('inside');
  });
  expect(Object.keys(lines[0]!).some((k) => k.startsWith('logging.googleapis.com/'))).toBe(false);
  expect(lines[1]).toMatchObject({
    'logging.googleapis.com/trace': 'projects/p1/traces/4bf92f3577b34da6a3ce929d0e0e4736',
    'logging.googleapis.com/spanId': spanId,
    'logging.googleapis.com/trace_sampled': true,
  });
});

test("a webhook's request gets the send span's traceparent header; the receiver's status is on the span", async () => {
  const { exporter, tracing } = tracingWith(1);
  useTracing(tracing);
  const sent: HttpRequest[] = [];
  const http = new TracedHttpSender({ send: async (r) => (sent.push(r), { kind: 'response', status: 500, durationMs: 1, bodyExcerpt: '' }) });
  await tracing.inSpan('herald.attempt', { parent: PRODUCER }, () => http.send({ url: 'https://example.com/hook?token=x', headers: { 'webhook-id': 'm' }, body: Buffer.alloc(0), timeoutMs: 1000 }));
  const send = exporter.getFinishedSpans().find((s) => s.name === 'herald.send')!;
  expect(sent[0]!.headers).toEqual({ 'webhook-id': 'm', traceparent: `00-4bf92f3577b34da6a3ce929d0e0e4736-${send.spanContext().spanId}-01` });
  expect(send.attributes).toMatchObject({ 'http.response.status_code': 500, 'server.address': 'example.com', 'server.port': 443 });
  // Never the URL: its query may hold a credential.
  expect(JSON.stringify(send.attributes)).not.toContain('token');
  expect(send.status).toMatchObject({ code: 2, message: 'HTTP 500' });
});

test('tracing is off (nothing loaded) without an exporter, or with HERALD_TELEMETRY=off', async () => {
  const settings = { telemetry: 'on' as const, traceSampleRatio: 0.01, projectId: 'p', topicPrefix: 'herald' };
  expect(createTracing(settings, { local: true }, {})).toBe(NO_TRACING);
  expect(createTracing(settings, { local: false }, {})).toBe(NO_TRACING);
  expect(createTracing({ ...settings, telemetry: 'off', otlpEndpoint: 'http://127.0.0.1:4318' }, { local: false }, { K_SERVICE: 'deliver' })).toBe(NO_TRACING);
  const otlp = createTracing({ ...settings, otlpEndpoint: 'http://127.0.0.1:4318' }, { local: true }, {});
  expect(otlp).not.toBe(NO_TRACING);
  await otlp.shutdown();
});

test('with HERALD_OTLP_ENDPOINT, spans reach a collector at <endpoint>/v1/traces (a loopback one here)', async () => {
  const bodies: { path: string; body: string }[] = [];
  const collector = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      bodies.push({ path: req.url ?? '', body });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => collector.listen(0, '127.0.0.1', r));
  try {
    const endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}/`;
    // Ratio 0, but the producer's sampled flag is followed.
    await promisify(execFile)(process.execPath, ['--import', 'tsx', path.join(__dirname, '../support/otlp-span.ts'), endpoint, PRODUCER.traceparent], { timeout: 20_000 });
    expect(bodies.map((b) => b.path)).toEqual(['/v1/traces']);
    const sent = JSON.parse(bodies[0]!.body) as { resourceSpans: { scopeSpans: { spans: { name: string; traceId: string; parentSpanId: string }[] }[] }[] };
    expect(sent.resourceSpans[0]!.scopeSpans[0]!.spans[0]).toMatchObject({ name: 'herald.ingest', traceId: '4bf92f3577b34da6a3ce929d0e0e4736', parentSpanId: '00f067aa0ba902b7' });
  } finally {
    await new Promise((r) => collector.close(r));
  }
}, 30_000);
