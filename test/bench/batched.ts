/**
 * `npm run bench -- batched`: one batched destination (issue 37's target: `maxEvents: 100,
 * maxWaitMs: 1000`) taking N events, paced, through Herald's local stack in this process.
 *
 * The receiver and the sender run in a child process (batched-load.ts). The receiver parses each
 * request as the CloudEvents batched content mode and counts requests, events received once and
 * again, and each event's added latency (first receipt − the moment its POST /ingest began).
 * Firestore operations come from the runtime's own counters (and a delete for each intake batch
 * journaled, which the reconciler removes after the run); Pub/Sub traffic is measured on the
 * batch lane's wire (bundles published and pulled, by their size); CPU is this process's: Herald,
 * its idle timers and the bench's counting included (an upper bound). Then the cost per million
 * events at GCP list prices (shared/domain/usage/cost-model.ts), every term.
 */
import path from 'node:path';
import { startLocalStack } from '../../apps/local/stack';
import { batchLaneNames } from '../../shared/topology';
import { createLogger } from '../../shared/log';
import { COMPONENT_LABELS, COMPONENTS, CostBreakdown, costPerMillion, DEFAULT_ASSUMPTIONS, GCP_LIST_PRICES, messageBytes, PerEventUsage, storedGiBMonths } from '../../shared/domain/usage/cost-model';
import { EmulatorHosts } from '../../apps/local/emulators';
import { clearFirestore, purgeProject } from './housekeeping';
import { BenchFailure, BenchHarness, flagsOf, intOption, mark, startProfile } from './harness';
import { BATCHED_LOAD_ENV, BATCHED_PATH, BatchedLoadMessage, BatchedLoadSettings } from './batched-load';
import { forkUntilReady } from './fork-child';
import { percentile, round, table } from './stats';
import { groupMemberStoredBytes } from './stored-bytes';
import { collectionTable, FirestoreMeter, meterFirestore, opsDelta, OpsByCollection, perEvent } from './firestore-meter';

export const BATCHED_HELP = `Usage: npm run bench -- batched [options]
  --events N         events sent (BENCH_BATCHED_EVENTS; 10000)
  --rate R           events per second, paced (BENCH_BATCHED_RATE; 500)
  --ingest-batch K   events per POST /ingest (BENCH_BATCHED_INGEST; 10)
  --max-events E     the destination's batch.maxEvents (BENCH_BATCHED_MAX_EVENTS; 100)
  --max-wait-ms W    the destination's batch.maxWaitMs (BENCH_BATCHED_MAX_WAIT_MS; 1000)
  --stall-timeout S  give up when nothing arrives for S seconds (BENCH_STALL_TIMEOUT; 30)
  --idle-seconds I   how long Herald idles first, to take its time-based CPU and reads off the run's (BENCH_BATCHED_IDLE_SECONDS; 5)
BENCH_PROFILE=file.cpuprofile writes a CPU profile of the run (Herald's process; the receiver and sender run in another).`;

const PROJECT = `herald-bench-batched-${Date.now().toString(36)}`;
const SOURCE = '/herald-bench-batched';
const TYPE = 'com.example.batched';
/** Targets of issue 37. */
const REQUESTS_PER_10K = 110;
/** Issue 37's cost target, $ per million events at batch 100 (cost.ts judges its batched run by it too). */
export const BATCHED_COST_MAX = 0.1;

/** What one batched run sends, and to what destination. */
export interface BatchedSettings {
  events: number;
  rate: number;
  perPost: number;
  maxEvents: number;
  maxWaitMs: number;
  stallMs: number;
  idleSeconds: number;
  /** The project the run's stack uses (emptied and purged after). */
  project: string;
}

/** What a run needs of whoever runs it (the batched bench's harness, or the cost bench's). */
export interface BatchedContext {
  emulators: EmulatorHosts;
  note: (line: string) => void;
  addCleanup: (what: string, run: () => Promise<void>) => void;
  guard: <T>(promise: Promise<T>) => Promise<T>;
  signal: AbortSignal;
}

export interface BatchedMeasurement {
  settings: BatchedSettings;
  requests: number;
  received: number;
  again: number;
  seconds: number;
  addedMs: { p50?: number; p90?: number; p99?: number };
  idle: { cpuMsPerSecond: number; readsPerSecond: number; writesPerSecond: number };
  cpuMsRawPerEvent: number;
  wire: { published: { messages: number; bytes: number }; pulled: { messages: number; bytes: number } };
  recordBytes: number;
  retentionDays: number;
  usage: PerEventUsage;
  cost: CostBreakdown;
  /** Firestore operations of the run per event received, by collection (idle's not taken off). */
  byCollection: OpsByCollection;
}

export async function runBatchedBench(args: string[], harness: BenchHarness): Promise<number> {
  const flags = flagsOf(args);
  const settings: BatchedSettings = {
    events: intOption('--events', flags['--events'], 'BENCH_BATCHED_EVENTS', 10_000, 1),
    rate: intOption('--rate', flags['--rate'], 'BENCH_BATCHED_RATE', 500, 1),
    perPost: intOption('--ingest-batch', flags['--ingest-batch'], 'BENCH_BATCHED_INGEST', 10, 1),
    maxEvents: intOption('--max-events', flags['--max-events'], 'BENCH_BATCHED_MAX_EVENTS', 100, 2),
    maxWaitMs: intOption('--max-wait-ms', flags['--max-wait-ms'], 'BENCH_BATCHED_MAX_WAIT_MS', 1000, 100),
    stallMs: intOption('--stall-timeout', flags['--stall-timeout'], 'BENCH_STALL_TIMEOUT', 30, 1) * 1000,
    idleSeconds: intOption('--idle-seconds', flags['--idle-seconds'], 'BENCH_BATCHED_IDLE_SECONDS', 5, 1),
    project: PROJECT,
  };
  const emulators = await harness.emulators();
  const measured = await measureBatched(settings, { emulators, note: harness.note, addCleanup: (what, run) => harness.addCleanup(what, run), guard: (p) => harness.guard(p), signal: harness.signal });
  const targets = batchedTargets(measured);
  process.stdout.write([formatBatched(measured), ...targets, JSON.stringify({ bench: 'batched', ...measured }), ''].join('\n'));
  return targets.every((t) => t.endsWith('— MET')) ? 0 : 1;
}

/**
 * One run: Herald's local stack in this process, the receiver and the sender in a child, the
 * destination registered, Herald measured idle, then the events sent and counted.
 */
export async function measureBatched(settings: BatchedSettings, ctx: BatchedContext): Promise<BatchedMeasurement> {
  const { events, rate, perPost, maxEvents, maxWaitMs, stallMs, idleSeconds, project } = settings;
  const { emulators } = ctx;
  // Every Firestore client of this process reports here: the run's operations by collection (the runtime's counters have no collection).
  const meter = new FirestoreMeter();
  meterFirestore(meter);
  const stack = await startLocalStack({ port: 0, emulators, env: { ...process.env, HERALD_PROJECT_ID: project, HERALD_LOG_LEVEL: 'WARNING' }, log: createLogger({ level: 'ERROR', write: () => undefined }), onProgress: () => undefined });
  // Cleanups run last first: Herald stops before its project is purged from under it.
  ctx.addCleanup(`project ${project}`, () => Promise.all([purgeProject(project), clearFirestore(emulators, project)]).then(() => undefined));
  ctx.addCleanup('the batched run\'s Herald', () => stack.stop());
  // The receiver and the sender in a process of their own: this one's CPU is then Herald's.
  const load: BatchedLoadSettings = { stackUrl: stack.url, ingestToken: stack.config.ingestToken, events, rate, perPost, stallMs, source: SOURCE, type: TYPE };
  const { child, ready } = await forkUntilReady<BatchedLoadMessage, Extract<BatchedLoadMessage, { type: 'ready' }>>(
    path.join(__dirname, 'batched-load.ts'),
    { ...process.env, [BATCHED_LOAD_ENV]: JSON.stringify(load) },
    'the receiver and sender',
    ctx.signal,
    ctx.note,
  );
  ctx.addCleanup('the receiver and sender', async () => void child.kill());
  const res = await fetch(`${stack.url}/admin/destinations/batched`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${stack.config.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url: `${ready.receiverUrl}${BATCHED_PATH}`, eventTypes: [TYPE], batch: { maxEvents, maxWaitMs } }),
  });
  if (res.status !== 201) throw new BenchFailure(`registering the batched destination: ${res.status} ${await res.text()}`);

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
  // Each intake batch journaled is deleted once reconciled: a delete each, counted here though the run ends first.
  const intake = stack.runtime.intake;
  const journal = intake.add.bind(intake);
  let journaled = 0;
  intake.add = async (batch) => {
    await journal(batch);
    journaled++;
  };
  const ops = stack.runtime.firestoreOps;
  // Herald idle first: its timers and polls (the retry pump's, the batcher's pulls) cost CPU and reads by the second, not
  // by the event (cost.ts prices them as fixed costs); what they cost per second is taken off the run's, as cost.ts does.
  ctx.note(`measuring Herald idle for ${idleSeconds} s`);
  const [idleOps0, idleCpu0, idleAt0] = [{ ...ops }, process.cpuUsage(), Date.now()];
  await ctx.guard(new Promise((r) => setTimeout(r, idleSeconds * 1000)));
  const idleCpu = process.cpuUsage(idleCpu0);
  const idleFor = (Date.now() - idleAt0) / 1000;
  const idle = { cpuMsPerSecond: (idleCpu.user + idleCpu.system) / 1000 / idleFor, readsPerSecond: (ops.reads - idleOps0.reads) / idleFor, writesPerSecond: (ops.writes - idleOps0.writes) / idleFor };
  ctx.note(`sending ${events} events at ${rate}/s, ${perPost} per POST /ingest, to a destination batching ${maxEvents} events or ${maxWaitMs} ms`);
  const ops0 = { ...ops };
  const byCollection0 = structuredClone(meter.byCollection);
  const stopProfile = process.env.BENCH_PROFILE ? await startProfile() : undefined;
  const cpu0 = process.cpuUsage();
  const finished = new Promise<Extract<BatchedLoadMessage, { type: 'done' }>>((resolve, reject) => {
    child.on('message', (m: BatchedLoadMessage) => m.type === 'done' && resolve(m));
    child.once('exit', (code) => reject(new BenchFailure(`the receiver and sender exited with code ${code} before the run ended`)));
  });
  child.send({ type: 'go' });
  const done = await ctx.guard(finished);
  const cpu = process.cpuUsage(cpu0);
  const byCollection = opsDelta(structuredClone(meter.byCollection), byCollection0);
  if (stopProfile) ctx.note(`CPU profile of the run (Herald): ${await stopProfile(process.env.BENCH_PROFILE!)}`);
  if (done.failure) throw new BenchFailure(done.failure);
  const { received, again, requests, seconds, addedMs: added } = done;
  const per = (n: number) => n / Math.max(1, received);
  const net = (total: number, perSecond: number) => Math.max(0, total - perSecond * seconds);
  const cpuMsRaw = (cpu.user + cpu.system) / 1000;
  // A delivered event's record as stored, over the retention: its group documents (members, what they share, the arrays) and
  // their index entries, per member, by Firestore's storage size rules (firestoreStoredBytes).
  const recordBytes = await groupMemberStoredBytes(stack.runtime.firestore, 'batched');
  const usage: PerEventUsage = {
    firestore: { reads: per(net(ops.reads - ops0.reads, idle.readsPerSecond)), writes: per(net(ops.writes - ops0.writes, idle.writesPerSecond)), deletes: per(ops.deletes - ops0.deletes + journaled) },
    pubsub: { publish: { messages: per(wire.published.messages), bytes: per(wire.published.bytes) }, delivery: { messages: per(wire.pulled.messages), bytes: per(wire.pulled.bytes) } },
    invocations: 1 / perPost,
    cpuSeconds: per(net(cpuMsRaw, idle.cpuMsPerSecond) / 1000),
    storedGiBMonths: storedGiBMonths(recordBytes, stack.config.deliveryRetentionDays),
  };
  const cost = costPerMillion(usage, GCP_LIST_PRICES, DEFAULT_ASSUMPTIONS, { firestore: 'regional', billing: 'request' });
  return {
    settings,
    requests,
    received,
    again,
    seconds,
    addedMs: { p50: percentile(added, 50), p90: percentile(added, 90), p99: percentile(added, 99) },
    idle,
    cpuMsRawPerEvent: per(cpuMsRaw),
    wire,
    recordBytes,
    retentionDays: stack.config.deliveryRetentionDays,
    usage,
    cost,
    byCollection: perEvent(byCollection, received),
  };
}

/** Issue 37's targets, a line each. */
export function batchedTargets(m: BatchedMeasurement): string[] {
  const { events, maxEvents, maxWaitMs } = m.settings;
  const requestsMax = Math.ceil((REQUESTS_PER_10K * events) / 10_000);
  const latencyMax = maxWaitMs + 100;
  const p50 = m.addedMs.p50 ?? Infinity;
  return [
    `Target: ≤ ${requestsMax} requests for ${events} events — ${m.requests} — ${mark(m.requests <= requestsMax && m.received === events)}`,
    `Target: every event received, once (duplicates only after a fault) — ${m.received}/${events}, ${m.again} again — ${mark(m.received === events && m.again === 0)}`,
    `Target: p50 added latency ≤ ${latencyMax} ms — ${round(p50, 0)} ms — ${mark(p50 <= latencyMax)}`,
    `Target: ≤ $${BATCHED_COST_MAX.toFixed(2)} per million events at batch ${maxEvents}, every term (request-based) — $${m.cost.total.toFixed(3)} — ${mark(m.cost.total <= BATCHED_COST_MAX)}`,
  ];
}

/** The run's table and its cost per million, every term. */
export function formatBatched(m: BatchedMeasurement): string {
  const { events, rate, perPost, maxEvents, maxWaitMs } = m.settings;
  const { usage, cost, wire, idle } = m;
  return [
    '',
    `Batched delivery: ${events} events in ${round(m.seconds, 1)} s to one destination (batch ${maxEvents} events / ${maxWaitMs} ms), ${perPost} per POST /ingest at ${rate}/s, Herald at scale 1`,
    table(
      ['requests', 'events per request', 'received', 'again', 'added p50 ms', 'p90 ms', 'p99 ms', 'reads/event', 'writes/event', 'CPU ms/event (raw)'],
      [[m.requests, round(m.received / Math.max(1, m.requests), 1), m.received, m.again, round(m.addedMs.p50 ?? NaN, 0), round(m.addedMs.p90 ?? NaN, 0), round(m.addedMs.p99 ?? NaN, 0), round(usage.firestore.reads, 3), round(usage.firestore.writes, 3), `${round(usage.cpuSeconds * 1000, 2)} (${round(m.cpuMsRawPerEvent, 2)})`]],
    ),
    `Cost per million events (Firestore us-central1, request-based; Pub/Sub: ${wire.published.messages} messages published (${round(wire.published.bytes / events, 0)} bytes per event) and ${wire.pulled.messages} pulled, measured; a record ${round(m.recordBytes, 0)} bytes as stored in its group with its index entries, over ${m.retentionDays} days; CPU: Herald's process, net of its idle ${round(idle.cpuMsPerSecond, 1)} ms/s; reads net of its idle ${round(idle.readsPerSecond, 2)}/s)`,
    table(['component', '$ per million'], [...COMPONENTS.map((c) => [COMPONENT_LABELS[c], round(cost[c], 4)]), ['total', round(cost.total, 4)]]),
    (({ header, rows }) => table(header, rows))(collectionTable([{ name: 'batched', perEvent: m.byCollection }])),
  ].join('\n');
}
