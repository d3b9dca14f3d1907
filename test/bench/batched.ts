/**
 * `npm run bench -- batched`: one batched destination (issue 37's target: `maxEvents: 100,
 * maxWaitMs: 1000`) taking N events, paced, through Herald's local stack in this process.
 *
 * The receiver parses each request as the CloudEvents batched content mode and counts requests,
 * events received once and again, and each event's added latency (first receipt − the moment its
 * POST /ingest began). Firestore operations come from the runtime's own counters; Pub/Sub
 * traffic is one lane message published and one pulled per event (measured on the wire by
 * their size); CPU is this whole process's (receiver and load generator included: an upper
 * bound). Then the cost per million events at GCP list prices (cost-model.ts), every term.
 */
import { performance } from 'node:perf_hooks';
import { startLocalStack } from '../../shared/apps/local/stack';
import { batchLaneNames } from '../../shared/topology';
import { createLogger } from '../../shared/log';
import { COMPONENT_LABELS, COMPONENTS, costPerMillion, DEFAULT_ASSUMPTIONS, GCP_LIST_PRICES, messageBytes, PerEventUsage, storedGiBMonths } from './cost-model';
import { clearFirestore, purgeProject } from './housekeeping';
import { BenchFailure, BenchHarness, flagsOf, intOption, mark, startProfile } from './harness';
import { BenchReceiver, Tracker } from './receiver';
import { percentile, round, table } from './stats';
import { groupMemberStoredBytes } from './stored-bytes';
import { realisticData } from './event-payload';

export const BATCHED_HELP = `Usage: npm run bench -- batched [options]
  --events N         events sent (BENCH_BATCHED_EVENTS; 10000)
  --rate R           events per second, paced (BENCH_BATCHED_RATE; 500)
  --ingest-batch K   events per POST /ingest (BENCH_BATCHED_INGEST; 10)
  --max-events E     the destination's batch.maxEvents (BENCH_BATCHED_MAX_EVENTS; 100)
  --max-wait-ms W    the destination's batch.maxWaitMs (BENCH_BATCHED_MAX_WAIT_MS; 1000)
  --stall-timeout S  give up when nothing arrives for S seconds (BENCH_STALL_TIMEOUT; 30)
BENCH_PROFILE=file.cpuprofile writes a CPU profile of the run (Herald, receiver and sender: one process).`;

const PROJECT = `herald-bench-batched-${Date.now().toString(36)}`;
const SOURCE = '/herald-bench-batched';
const TYPE = 'com.example.batched';
/** Targets of issue 37. */
const REQUESTS_PER_10K = 110;
const COST_MAX = 0.1;

export async function runBatchedBench(args: string[], harness: BenchHarness): Promise<number> {
  const flags = flagsOf(args);
  const events = intOption('--events', flags['--events'], 'BENCH_BATCHED_EVENTS', 10_000, 1);
  const rate = intOption('--rate', flags['--rate'], 'BENCH_BATCHED_RATE', 500, 1);
  const perPost = intOption('--ingest-batch', flags['--ingest-batch'], 'BENCH_BATCHED_INGEST', 10, 1);
  const maxEvents = intOption('--max-events', flags['--max-events'], 'BENCH_BATCHED_MAX_EVENTS', 100, 2);
  const maxWaitMs = intOption('--max-wait-ms', flags['--max-wait-ms'], 'BENCH_BATCHED_MAX_WAIT_MS', 1000, 100);
  const stallMs = intOption('--stall-timeout', flags['--stall-timeout'], 'BENCH_STALL_TIMEOUT', 30, 1) * 1000;
  const emulators = await harness.emulators();
  const receiver = await new BenchReceiver().start();
  harness.addCleanup('receiver', () => receiver.stop());
  const tracker = new Tracker('batched');
  receiver.route('/batched', tracker, 'batch-body');
  const stack = await startLocalStack({ port: 0, emulators, env: { ...process.env, HERALD_PROJECT_ID: PROJECT, HERALD_LOG_LEVEL: 'WARNING' }, log: createLogger({ level: 'ERROR', write: () => undefined }), onProgress: () => undefined });
  harness.addCleanup('herald', () => stack.stop());
  harness.addCleanup('the project', () => Promise.all([purgeProject(PROJECT), clearFirestore(emulators, PROJECT)]).then(() => undefined));
  const res = await fetch(`${stack.url}/admin/destinations/batched`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${stack.config.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url: `${receiver.url}/batched`, eventTypes: [TYPE], batch: { maxEvents, maxWaitMs } }),
  });
  if (res.status !== 201) throw new BenchFailure(`registering the batched destination: ${res.status} ${await res.text()}`);

  const event = (i: number) => ({ specversion: '1.0', id: `e-${i}`, source: SOURCE, type: TYPE, datacontenttype: 'application/json', data: realisticData(`${i}`, 910) });
  // The batch lane's traffic on the wire: what ingest publishes (bundles, or single messages) and the batcher pulls.
  const wire = { published: { messages: 0, bytes: 0 }, pulled: { messages: 0, bytes: 0 } };
  const { bus, batchLane } = stack.runtime;
  const publish = bus.publish.bind(bus);
  bus.publish = async (topic, message) => {
    const id = await publish(topic, message);
    if (topic === batchLaneNames(stack.runtime.names).topic) [wire.published.messages, wire.published.bytes] = [wire.published.messages + 1, wire.published.bytes + messageBytes(message.data, message.attributes)];
    return id;
  };
  const pull = batchLane.pull.bind(batchLane);
  batchLane.pull = async (max) => {
    const got = await pull(max);
    for (const m of got) [wire.pulled.messages, wire.pulled.bytes] = [wire.pulled.messages + 1, wire.pulled.bytes + messageBytes(m.message.data, m.message.attributes)];
    return got;
  };
  // Made before the clock starts: the process's CPU is the cost bound, and making payloads is not Herald's work.
  const bodies = Array.from({ length: Math.ceil(events / perPost) }, (_, n) => {
    const batch = Array.from({ length: Math.min(perPost, events - n * perPost) }, (_, k) => event(n * perPost + k));
    return { ids: batch.map((e) => e.id), body: JSON.stringify(batch) };
  });
  harness.note(`sending ${events} events at ${rate}/s, ${perPost} per POST /ingest, to a destination batching ${maxEvents} events or ${maxWaitMs} ms`);
  const ops = stack.runtime.firestoreOps;
  const ops0 = { ...ops };
  const stopProfile = process.env.BENCH_PROFILE ? await startProfile() : undefined;
  const cpu0 = process.cpuUsage();
  const start = performance.now();
  const posts: Promise<void>[] = [];
  for (let i = 0; i < events; i += perPost) {
    const due = start + (i / rate) * 1000;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const { ids, body } = bodies[i / perPost]!;
    const at = performance.now();
    tracker.markSent(ids, at);
    posts.push(
      fetch(`${stack.url}/ingest`, { method: 'POST', headers: { authorization: `Bearer ${stack.config.ingestToken}`, 'content-type': 'application/cloudevents-batch+json' }, body }).then(async (r) => {
        if (r.status !== 202) throw new BenchFailure(`POST /ingest answered ${r.status}: ${(await r.text()).slice(0, 200)}`);
      }),
    );
  }
  await Promise.all(posts);
  let [seen, lastChange] = [0, performance.now()];
  while (tracker.arrived.size < events && performance.now() - lastChange < stallMs) {
    await new Promise((r) => setTimeout(r, 100));
    if (tracker.arrived.size !== seen) [seen, lastChange] = [tracker.arrived.size, performance.now()];
  }
  const seconds = (performance.now() - start) / 1000;
  const cpu = process.cpuUsage(cpu0);
  if (stopProfile) harness.note(`CPU profile of the run: ${await stopProfile(process.env.BENCH_PROFILE!)}`);
  const received = tracker.arrived.size;
  const requests = receiver.requestsOn('/batched');
  const again = tracker.duplicates;
  const added = [...tracker.arrived].map(([id, at]) => at - tracker.sent.get(id)!).sort((a, b) => a - b);
  const per = (n: number) => n / Math.max(1, received);
  // A delivered event's record as stored, over the retention: its group documents (members, what they share, the arrays) and
  // their index entries, per member, by Firestore's storage size rules (firestoreStoredBytes).
  const recordBytes = await groupMemberStoredBytes(stack.runtime.firestore, 'batched');
  const usage: PerEventUsage = {
    firestore: { reads: per(ops.reads - ops0.reads), writes: per(ops.writes - ops0.writes), deletes: per(ops.deletes - ops0.deletes) },
    pubsub: { publish: { messages: per(wire.published.messages), bytes: per(wire.published.bytes) }, delivery: { messages: per(wire.pulled.messages), bytes: per(wire.pulled.bytes) } },
    invocations: 1 / perPost,
    cpuSeconds: per((cpu.user + cpu.system) / 1e6),
    storedGiBMonths: storedGiBMonths(recordBytes, stack.config.deliveryRetentionDays),
  };
  const cost = costPerMillion(usage, GCP_LIST_PRICES, DEFAULT_ASSUMPTIONS, { firestore: 'regional', billing: 'request' });
  const requestsMax = Math.ceil((REQUESTS_PER_10K * events) / 10_000);
  const latencyMax = maxWaitMs + 100;
  const p50 = percentile(added, 50) ?? Infinity;
  const targets = [
    `Target: ≤ ${requestsMax} requests for ${events} events — ${requests} — ${mark(requests <= requestsMax && received === events)}`,
    `Target: every event received, once (duplicates only after a fault) — ${received}/${events}, ${again} again — ${mark(received === events && again === 0)}`,
    `Target: p50 added latency ≤ ${latencyMax} ms — ${round(p50, 0)} ms — ${mark(p50 <= latencyMax)}`,
    `Target: ≤ $${COST_MAX.toFixed(2)} per million events at batch ${maxEvents}, every term (request-based) — $${cost.total.toFixed(3)} — ${mark(cost.total <= COST_MAX)}`,
  ];
  process.stdout.write(
    [
      '',
      `Batched delivery: ${events} events in ${round(seconds, 1)} s to one destination (batch ${maxEvents} events / ${maxWaitMs} ms), ${perPost} per POST /ingest at ${rate}/s`,
      table(
        ['requests', 'events per request', 'received', 'again', 'added p50 ms', 'p90 ms', 'p99 ms', 'reads/event', 'writes/event', 'CPU ms/event'],
        [[requests, round(received / Math.max(1, requests), 1), received, again, round(p50, 0), round(percentile(added, 90) ?? NaN, 0), round(percentile(added, 99) ?? NaN, 0), round(usage.firestore.reads, 3), round(usage.firestore.writes, 3), round(usage.cpuSeconds * 1000, 2)]],
      ),
      `Cost per million events (Firestore us-central1, request-based; Pub/Sub: ${wire.published.messages} messages published (${round(wire.published.bytes / events, 0)} bytes per event) and ${wire.pulled.messages} pulled, measured; a record ${round(recordBytes, 0)} bytes as stored in its group with its index entries, over ${stack.config.deliveryRetentionDays} days; CPU: this whole process, an upper bound)`,
      table(['component', '$ per million'], [...COMPONENTS.map((c) => [COMPONENT_LABELS[c], round(cost[c], 4)]), ['total', round(cost.total, 4)]]),
      ...targets,
      JSON.stringify({ bench: 'batched', events, rate, perPost, maxEvents, maxWaitMs, requests, received, again, addedMs: { p50, p90: percentile(added, 90), p99: percentile(added, 99) }, usage, cost }),
      '',
    ].join('\n'),
  );
  return targets.every((t) => t.endsWith('— MET')) ? 0 : 1;
}
