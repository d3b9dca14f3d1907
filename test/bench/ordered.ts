/**
 * `npm run bench -- ordered`: ordered delivery per key (issue 38) through Herald's local stack in
 * this process, to a receiver on loopback that answers 503 to a seeded share of requests.
 *
 * Three runs, each to a fresh destination with the same policy and rate bounds: 3 keys × N events
 * ordered (are the first receipts of each key in publish order?), 100 keys ordered, and the same
 * events without a partitionkey (unordered). Throughput is events / (last first receipt − first
 * publish). Firestore operations come from the runtime's counters, Pub/Sub messages and bytes from
 * the lane publishes (each pushed once), CPU is this whole process's (an upper bound); the cost
 * per million events is then priced at GCP list prices (shared/domain/usage/cost-model.ts), ordered beside unordered.
 */
import http from 'node:http';
import { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { startLocalStack } from '../../apps/local/stack';
import { createLogger } from '../../shared/log';
import { PubSubMessage } from '../../shared/domain/events/cloudevents-pubsub';
import { COMPONENT_LABELS, COMPONENTS, costPerMillion, DEFAULT_ASSUMPTIONS, GCP_LIST_PRICES, messageBytes, PerEventUsage, storedGiBMonths } from '../../shared/domain/usage/cost-model';
import { clearFirestore, purgeProject } from './housekeeping';
import { BenchFailure, BenchHarness, flagsOf, intOption, mark } from './harness';
import { groupMemberStoredBytes, ownRecordBytes } from './stored-bytes';
import { round, table } from './stats';
import { realisticData } from './event-payload';

export const ORDERED_HELP = `Usage: npm run bench -- ordered [options]
  --per-key N        events per key in the 3-key run (BENCH_ORDERED_PER_KEY; 1000)
  --events N         events in the 100-key and the unordered runs (BENCH_ORDERED_EVENTS; 3000)
  --fail-share F     share of requests the receiver answers 503, in percent (BENCH_ORDERED_FAIL; 20)
  --rate R           events published per second (BENCH_ORDERED_RATE; 300)
  --stall-timeout S  give up when nothing arrives for S seconds (BENCH_STALL_TIMEOUT; 60)`;

const PROJECT = `herald-bench-ordered-${Date.now().toString(36)}`;
const SOURCE = '/herald-bench-ordered';
const TYPE = 'com.example.ordered';
/** Issue 38: ordered across 100 keys at least half as fast as unordered. */
const THROUGHPUT_SHARE = 0.5;
/** Retries a second apart, many of them, no success-rate threshold: a fifth failing must neither suspend it nor kill events. */
const POLICY = { retryOn: { statuses: 'any' }, backoff: { kind: 'fixed', delaysMs: [1000] }, maxAttempts: 50 };
const PER_POST = 10;

interface RunResult {
  name: string;
  events: number;
  received: number;
  seconds: number;
  perSecond: number;
  inversions: number;
  requests: number;
  usage: PerEventUsage;
}

/** A receiver that answers 503 to a seeded share of requests and keeps each event id's first 2xx, in order. */
class FlakyReceiver {
  readonly first = new Map<string, string[]>();
  readonly firstAt = new Map<string, number>();
  requests = 0;
  private server: http.Server | undefined;
  private seed = 20261127;

  constructor(private readonly failShare: number) {}

  private random(): number {
    this.seed = (this.seed * 1103515245 + 12345) % 2 ** 31;
    return this.seed / 2 ** 31;
  }

  async start(): Promise<string> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        this.requests++;
        const id = String(req.headers['ce-id'] ?? '');
        if (this.random() < this.failShare) return void res.writeHead(503).end();
        if (!this.firstAt.has(id)) {
          this.firstAt.set(id, performance.now());
          const path = req.url ?? '/';
          this.first.set(path, [...(this.first.get(path) ?? []), id]);
        }
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}

export async function runOrderedBench(args: string[], harness: BenchHarness): Promise<number> {
  const flags = flagsOf(args);
  const perKey = intOption('--per-key', flags['--per-key'], 'BENCH_ORDERED_PER_KEY', 1000, 1);
  const events = intOption('--events', flags['--events'], 'BENCH_ORDERED_EVENTS', 3000, 100);
  const failShare = intOption('--fail-share', flags['--fail-share'], 'BENCH_ORDERED_FAIL', 20, 0) / 100;
  const rate = intOption('--rate', flags['--rate'], 'BENCH_ORDERED_RATE', 300, 1);
  const stallMs = intOption('--stall-timeout', flags['--stall-timeout'], 'BENCH_STALL_TIMEOUT', 60, 1) * 1000;
  const emulators = await harness.emulators();
  const receiver = new FlakyReceiver(failShare);
  const base = await receiver.start();
  harness.addCleanup('receiver', () => receiver.stop());
  const stack = await startLocalStack({ port: 0, emulators, env: { ...process.env, HERALD_PROJECT_ID: PROJECT, HERALD_LOG_LEVEL: 'WARNING' }, log: createLogger({ level: 'ERROR', write: () => undefined }), onProgress: () => undefined });
  harness.addCleanup('herald', () => stack.stop());
  harness.addCleanup('the project', () => Promise.all([purgeProject(PROJECT), clearFirestore(emulators, PROJECT)]).then(() => undefined));
  // Lane messages as Pub/Sub carries them: counted and weighed at the publish (each is pushed once).
  const lane = { messages: 0, bytes: 0 };
  for (const rt of stack.runtimes) {
    const publish = rt.bus.publish.bind(rt.bus);
    rt.bus.publish = (topic: string, message: PubSubMessage) => {
      lane.messages++;
      lane.bytes += messageBytes(message.data, message.attributes);
      return publish(topic, message);
    };
  }

  const run = async (name: string, keys: number, count: number): Promise<RunResult> => {
    const path = `/${name}`;
    const res = await fetch(`${stack.url}/admin/destinations/${name}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${stack.config.adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: `${base}${path}`, eventTypes: [`${TYPE}.${name}`], policy: POLICY, rate: { min: 100 }, ...(keys > 0 ? { ordering: 'key' } : {}) }),
    });
    if (res.status !== 201) throw new BenchFailure(`registering ${name}: ${res.status} ${await res.text()}`);
    harness.note(`${name}: ${count} events${keys > 0 ? ` over ${keys} keys, ordered` : ', unordered'}, ${PER_POST} per POST /ingest at ${rate}/s; the receiver fails ${round(failShare * 100, 0)} %`);
    const event = (i: number) => ({ specversion: '1.0', id: `${name}-${i}`, source: SOURCE, type: `${TYPE}.${name}`, datacontenttype: 'application/json', data: realisticData(`${i}`, 910), ...(keys > 0 ? { partitionkey: `key-${i % keys}` } : {}) });
    const ops = stack.runtime.firestoreOps;
    const [ops0, lane0, requests0, cpu0] = [{ ...ops }, { ...lane }, receiver.requests, process.cpuUsage()];
    const start = performance.now();
    // One POST at a time: the publish order is the order of the ids (each key's events in the order Herald accepts them).
    for (let i = 0; i < count; i += PER_POST) {
      const wait = start + (i / rate) * 1000 - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const batch = Array.from({ length: Math.min(PER_POST, count - i) }, (_, k) => event(i + k));
      const r = await fetch(`${stack.url}/ingest`, { method: 'POST', headers: { authorization: `Bearer ${stack.config.ingestToken}`, 'content-type': 'application/cloudevents-batch+json' }, body: JSON.stringify(batch) });
      if (r.status !== 202) throw new BenchFailure(`POST /ingest answered ${r.status}: ${(await r.text()).slice(0, 200)}`);
    }
    const got = () => receiver.first.get(path)?.length ?? 0;
    let [seen, lastChange] = [0, performance.now()];
    while (got() < count && performance.now() - lastChange < stallMs) {
      await new Promise((r) => setTimeout(r, 200));
      if (got() !== seen) [seen, lastChange] = [got(), performance.now()];
    }
    const cpu = process.cpuUsage(cpu0);
    const ids = receiver.first.get(path) ?? [];
    const lastAt = Math.max(start, ...ids.map((id) => receiver.firstAt.get(id)!));
    const seconds = (lastAt - start) / 1000;
    // Inversions: a first receipt whose index is below the highest already received for its key.
    const highest = new Map<number, number>();
    let inversions = 0;
    for (const id of ids) {
      const i = Number(id.slice(name.length + 1));
      const key = keys > 0 ? i % keys : -1;
      if (keys > 0 && i < (highest.get(key) ?? -1)) inversions++;
      else highest.set(key, i);
    }
    const per = (n: number) => n / Math.max(1, ids.length);
    const recordBytes = keys > 0 ? await ownRecordBytes(stack.runtime.firestore, name) : await groupMemberStoredBytes(stack.runtime.firestore, name);
    const laneUsed = { messages: per(lane.messages - lane0.messages), bytes: per(lane.bytes - lane0.bytes) };
    const usage: PerEventUsage = {
      firestore: { reads: per(ops.reads - ops0.reads), writes: per(ops.writes - ops0.writes), deletes: per(ops.deletes - ops0.deletes) },
      pubsub: { publish: laneUsed, delivery: laneUsed },
      invocations: laneUsed.messages + 1 / PER_POST,
      cpuSeconds: per((cpu.user + cpu.system) / 1e6),
      storedGiBMonths: storedGiBMonths(recordBytes, stack.config.deliveryRetentionDays),
    };
    return { name, events: count, received: ids.length, seconds, perSecond: ids.length / Math.max(0.001, seconds), inversions, requests: receiver.requests - requests0, usage };
  };

  const three = await run('three-keys', 3, 3 * perKey);
  const hundred = await run('hundred-keys', 100, events);
  const unordered = await run('unordered', 0, events);
  const costs = [hundred, unordered].map((r) => ({ r, cost: costPerMillion(r.usage, GCP_LIST_PRICES, DEFAULT_ASSUMPTIONS, { firestore: 'regional', billing: 'request' }) }));
  const share = hundred.perSecond / Math.max(0.001, unordered.perSecond);
  const targets = [
    `Target: 3 keys × ${perKey} through a receiver failing ${round(failShare * 100, 0)} %: 0 inversions among first receipts, all arrive — ${three.inversions} inversions, ${three.received}/${three.events} — ${mark(three.inversions === 0 && three.received === three.events)}`,
    `Target: ordered across 100 keys ≥ ${THROUGHPUT_SHARE * 100} % of unordered throughput — ${round(hundred.perSecond, 1)}/s vs ${round(unordered.perSecond, 1)}/s (${round(share * 100, 0)} %), ${hundred.inversions} inversions — ${mark(share >= THROUGHPUT_SHARE && hundred.inversions === 0 && hundred.received === hundred.events)}`,
  ];
  process.stdout.write(
    [
      '',
      `Ordered delivery per key: the receiver answers 503 to ${round(failShare * 100, 0)} % of requests; retries 1 s apart; rate pinned at 100/s`,
      table(
        ['run', 'events', 'received', 'seconds', 'events/s', 'inversions', 'requests', 'reads/event', 'writes/event', 'lane msgs/event', 'CPU ms/event'],
        [three, hundred, unordered].map((r) => [r.name, r.events, r.received, round(r.seconds, 1), round(r.perSecond, 1), r.inversions, r.requests, round(r.usage.firestore.reads, 2), round(r.usage.firestore.writes, 2), round(r.usage.pubsub.publish.messages, 2), round(r.usage.cpuSeconds * 1000, 2)]),
      ),
      'Cost per million events, ordered (100 keys) beside unordered (Firestore us-central1, request-based; CPU: this whole process, an upper bound; both through the same failing receiver, retries included)',
      table(['component', ...costs.map((c) => c.r.name)], [...COMPONENTS.map((k) => [COMPONENT_LABELS[k], ...costs.map((c) => round(c.cost[k], 4))]), ['total', ...costs.map((c) => round(c.cost.total, 4))]]),
      ...targets,
      JSON.stringify({ bench: 'ordered', perKey, events, failShare, rate, runs: [three, hundred, unordered], costs: costs.map((c) => ({ run: c.r.name, ...c.cost })) }),
      '',
    ].join('\n'),
  );
  return targets.every((t) => t.endsWith('— MET')) ? 0 : 1;
}
