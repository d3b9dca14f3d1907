import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../../apps/local/emulators';
import { METRICS, prometheusName } from '../../shared/telemetry-catalogue';
import { eventually } from '../support/eventually';
import { Receiver } from '../support/receiver';
import { startTestStack, testSecretsKey, TestStack } from '../support/stack';
import { killed, LocalHerald, spawnLocalHerald } from '../support/local-herald';

/**
 * Herald's metrics as an operator sees them: local mode delivers events to a real receiver,
 * some after a failure, some never; then a real Prometheus scrapes local mode's GET /metrics
 * and its query API must count what the admin API counts. Then `npm start` in a process of its
 * own exports over OTLP/HTTP to a collector (a loopback server here), whose JSON must carry the
 * numbers of its deliveries. (In its own process: the OTLP exporter loads its HTTP client with a
 * dynamic import, which Jest's module sandbox does not run.)
 */

const PROJECT = `metrics-test-${Date.now().toString(36)}`;
const EVENTS = 8;
const TYPE = 'com.example.metrics';
const PROMETHEUS = '/usr/bin/prometheus';

/** `/ok` answers 204; `/flaky` fails each event's first attempt; `/down` always fails. */
const receiver: Receiver = new Receiver((req) => {
  if (req.path === '/down') return { status: 503 };
  if (req.path === '/flaky') {
    const id = req.headers['ce-id'];
    return { status: receiver.on('/flaky').filter((r) => r.headers['ce-id'] === id).length === 1 ? 503 : 204 };
  }
  return { status: 204 };
});

/** OTLP/HTTP collector stand-in: keeps each export's decoded JSON body. */
const otlpExports: OtlpBody[] = [];
const collector = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    if (req.url === '/v1/metrics' && req.method === 'POST' && String(req.headers['content-type']).startsWith('application/json')) otlpExports.push(JSON.parse(Buffer.concat(chunks).toString()) as OtlpBody);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
});

interface OtlpValue {
  stringValue?: string;
}
interface OtlpPoint {
  attributes?: { key: string; value: OtlpValue }[];
  asDouble?: number;
  asInt?: number | string;
  count?: number | string;
}
interface OtlpMetric {
  name: string;
  unit?: string;
  sum?: { dataPoints: OtlpPoint[]; isMonotonic?: boolean };
  histogram?: { dataPoints: OtlpPoint[] };
}
interface OtlpBody {
  resourceMetrics: { resource: { attributes: { key: string; value: OtlpValue }[] }; scopeMetrics: { metrics: OtlpMetric[] }[] }[];
}

let stack: TestStack;
let prometheus: ChildProcess | undefined;
let prometheusUrl = '';
let dir = '';

beforeAll(async () => {
  await receiver.start();
  await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
  stack = await startTestStack(PROJECT, {
    HERALD_TIME_SCALE: '300',
    HERALD_PUMP_INTERVAL_MS: '100',
  });
  for (const [id, policy] of [
    ['ok', 'event-platform'],
    ['flaky', 'event-platform'],
    ['down', 'adobe-best-effort'],
  ] as const) {
    const res = await stack.admin('PUT', `/destinations/${id}`, { url: `${receiver.url}/${id}`, eventTypes: [TYPE], policy });
    expect(res.status).toBe(201);
  }
});

let spawned: LocalHerald | undefined;

afterAll(async () => {
  await Promise.all([killed(spawned?.child), killed(prometheus)]);
  await stack?.stop({ purge: true });
  await receiver.stop();
  collector.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The deliveries of `destination` in `status`, as the admin API lists them. */
async function counted(destination: string, status: 'delivered' | 'dead', admin = stack.admin): Promise<number> {
  const res = await admin('GET', `/destinations/${destination}/deliveries?status=${status}&limit=100`);
  expect(res.status).toBe(200);
  return (res.body as { deliveries: unknown[] }).deliveries.length;
}

/** One number from Prometheus's query API (an empty answer is 0). */
async function query(promql: string): Promise<number> {
  const res = await fetch(`${prometheusUrl}/api/v1/query?query=${encodeURIComponent(promql)}`);
  const body = (await res.json()) as { status: string; data: { result: { value: [number, string] }[] } };
  expect(body.status).toBe('success');
  return body.data.result.reduce((n, r) => n + Number(r.value[1]), 0);
}

async function startPrometheus(target: number): Promise<void> {
  dir = mkdtempSync(path.join(tmpdir(), 'herald-prometheus-'));
  const port = await freePort();
  const config = path.join(dir, 'prometheus.yml');
  writeFileSync(config, ['global:', '  scrape_interval: 1s', 'scrape_configs:', '  - job_name: herald', '    static_configs:', `      - targets: ['127.0.0.1:${target}']`, ''].join('\n'));
  prometheus = spawn(PROMETHEUS, [`--config.file=${config}`, `--storage.tsdb.path=${path.join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`], { stdio: 'ignore' });
  prometheusUrl = `http://127.0.0.1:${port}`;
  await eventually('Prometheus to be ready', async () => ((await fetch(`${prometheusUrl}/-/ready`).catch(() => undefined))?.ok ? true : undefined), 30_000, 250);
}

/** Sums the latest export's points of `name` whose attributes include `labels`. */
function otlpSum(body: OtlpBody, name: string, labels: Record<string, string> = {}): number {
  const metrics = body.resourceMetrics.flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics)).filter((m) => m.name === name);
  const points = metrics.flatMap((m) => m.sum?.dataPoints ?? []);
  const matches = (p: OtlpPoint) => Object.entries(labels).every(([k, v]) => p.attributes?.find((a) => a.key === k)?.value.stringValue === v);
  return points.filter(matches).reduce((n, p) => n + Number(p.asDouble ?? p.asInt ?? 0), 0);
}

test('a real Prometheus scraping GET /metrics counts the deliveries the admin API counts', async () => {
  expect(stack).toBeDefined();
  for (let i = 0; i < EVENTS; i++) {
    const res = await stack.ingest({ 'ce-id': `m-${i}`, 'ce-source': '/metrics-test', 'ce-type': TYPE, 'ce-specversion': '1.0', 'content-type': 'application/json' }, `{"n":${i}}`);
    expect(res.status).toBe(202);
  }
  // Every event settles: delivered to /ok and (after one failure) /flaky, dead at /down.
  await eventually('every delivery settled', async () => ((await counted('ok', 'delivered')) === EVENTS && (await counted('flaky', 'delivered')) === EVENTS && (await counted('down', 'dead')) === EVENTS ? true : undefined), 60_000, 250);
  const delivered = (await counted('ok', 'delivered')) + (await counted('flaky', 'delivered'));
  const dead = await counted('down', 'dead');

  const scrape = await fetch(`${stack.url}/metrics`);
  expect(scrape.status).toBe(200);
  expect(scrape.headers.get('content-type')).toMatch(/^text\/plain/);
  const text = await scrape.text();
  // Bounded labels: no destination id, no event id anywhere in it.
  expect(text).not.toMatch(/flaky|m-\d|\/ok/);

  await startPrometheus(stack.port);
  const attempts = prometheusName(METRICS.attempts);
  await eventually(
    'Prometheus to have scraped the settled counts',
    async () => ((await query(`sum(${attempts}{outcome="delivered"})`)) === delivered && (await query(`sum(${attempts}{outcome="dead"})`)) === dead ? true : undefined),
    30_000,
    500,
  );
  expect(await query('up{job="herald"}')).toBe(1);
  expect(await query(`sum(${attempts}{outcome="delivered"})`)).toBe(2 * EVENTS);
  // /flaky's first attempts and /down's two retries each.
  expect(await query(`sum(${attempts}{outcome="retry"})`)).toBe(EVENTS + 2 * EVENTS);
  expect(await query(`sum(${prometheusName(METRICS.eventsAccepted)})`)).toBe(EVENTS);
  expect(await query(`sum(${prometheusName(METRICS.deadLettered)})`)).toBe(dead);
  expect(await query(`sum(${prometheusName(METRICS.attemptDuration)}_count)`)).toBe(2 * EVENTS + EVENTS + 2 * EVENTS + dead);
  expect(await query(`sum(${prometheusName(METRICS.endToEnd)}_count)`)).toBe(delivered);
  expect(await query(`sum(${prometheusName(METRICS.pumpLag)}_count)`)).toBeGreaterThan(0);
  // /ok's first successes were written in group commits: every one of them in some commit.
  expect(await query(`sum(${prometheusName(METRICS.groupCommitSize)}_sum)`)).toBeGreaterThanOrEqual(EVENTS);
});

test('npm start exports the same numbers to an OTLP/HTTP collector, on a resource naming service and function', async () => {
  const project = `${PROJECT}-otlp`;
  const tokens = { admin: 'herald_admin_metrics-test-token', ingest: 'herald_ingest_metrics-test-token' };
  spawned = spawnLocalHerald({
    ...process.env,
    PORT: '0',
    HERALD_PROJECT_ID: project,
    HERALD_SECRETS_KEY: testSecretsKey(project),
    HERALD_ADMIN_TOKEN: tokens.admin,
    HERALD_INGEST_TOKEN: tokens.ingest,
    HERALD_TIME_SCALE: '300',
    HERALD_PUMP_INTERVAL_MS: '100',
    HERALD_OTLP_ENDPOINT: `http://127.0.0.1:${(collector.address() as AddressInfo).port}`,
    HERALD_METRICS_INTERVAL_MS: '5000',
  });
  const url = await spawned.ready();
  const admin = async (method: string, route: string, body?: unknown) => {
    const res = await fetch(`${url}/admin${route}`, { method, headers: { authorization: `Bearer ${tokens.admin}`, 'content-type': 'application/json' }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    return { status: res.status, body: (await res.json()) as unknown };
  };
  expect((await admin('PUT', '/destinations/flaky', { url: `${receiver.url}/flaky`, eventTypes: [TYPE], policy: 'event-platform' })).status).toBe(201);
  for (let i = 0; i < EVENTS; i++) {
    const res = await fetch(`${url}/ingest`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tokens.ingest}`, 'ce-id': `otlp-${i}`, 'ce-source': '/metrics-test', 'ce-type': TYPE, 'ce-specversion': '1.0', 'content-type': 'application/json' },
      body: `{"n":${i}}`,
    });
    expect(res.status).toBe(202);
  }
  await eventually('every delivery settled', async () => ((await counted('flaky', 'delivered', admin)) === EVENTS ? true : undefined), 60_000, 250);
  const latest = await eventually(
    'an OTLP export with the settled counts',
    () => {
      const body = otlpExports.at(-1);
      return body && otlpSum(body, METRICS.attempts.name, { outcome: 'delivered' }) === EVENTS ? body : undefined;
    },
    20_000,
    250,
  );
  expect(otlpSum(latest, METRICS.attempts.name, { outcome: 'retry', destination_kind: 'webhook' })).toBe(EVENTS);
  expect(otlpSum(latest, METRICS.eventsAccepted.name)).toBe(EVENTS);
  const names = new Set(latest.resourceMetrics.flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics.map((m) => m.name))));
  for (const name of [METRICS.attempts.name, METRICS.attemptDuration.name, METRICS.endToEnd.name, METRICS.eventsAccepted.name, METRICS.pumpLag.name]) expect(names).toContain(name);
  const resource = Object.fromEntries(latest.resourceMetrics[0]!.resource.attributes.map((a) => [a.key, a.value.stringValue]));
  expect(resource).toMatchObject({ 'service.name': 'herald', 'faas.name': 'local' });
  spawned.child.kill('SIGTERM');
  expect(await spawned.exited).toEqual({ code: 0, signal: null });
});
