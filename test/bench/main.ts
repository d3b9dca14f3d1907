/**
 * `npm run bench`: N events through the local Herald stack to a loopback receiver, and the
 * same N messages through the Pub/Sub emulator straight to that receiver (no Herald), so the
 * cost Herald adds over a bare push subscription shows as a ratio.
 *
 * Then the cost phase (cost.ts): Firestore operations, invocations, Pub/Sub bytes and CPU per
 * delivered event, for first-attempt successes and one-retry deliveries, and what that costs
 * per million 1 KB events at GCP list prices (shared/domain/usage/cost-model.ts).
 *
 * Last the steady-rate phase (steady.ts): 100 events/s, paced, to one destination, and the
 * write pattern of the success-rate counter documents that makes (target: ≤ 1 write/s on the
 * hottest one).
 *
 * Progress goes to stderr; stdout gets tables and, last, one JSON line with every number.
 * Options: --events N (BENCH_EVENTS, default 2000), --batch, --concurrency, --warmup,
 * --idle, --stall-timeout, --cost-events, --cost-batch, --cost-idle, --cost-only, --telemetry, --steady-seconds,
 * --steady-rate; see --help.
 *
 * `npm run bench -- rate` (rate.ts: adaptive rate control against throttling receivers, with
 * worker processes) and `npm run bench -- isolation` (isolation.ts: a healthy destination's
 * latency beside one that times out) are benches of their own, dispatched at the end of this file.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { PubSub } from '@google-cloud/pubsub';
import { RunningEmulators, startEmulators } from '../../apps/local/emulators';
import { LocalStack, startLocalStack } from '../../apps/local/stack';
import { COST_PROJECT, CostContext, CostReport, formatCostReport, runCostPhase } from './cost';
import { clearFirestore, purgeProject } from './housekeeping';
import { CountingLogger, PROBED_CALLS, RuntimeProbe } from './instrument';
import { benchTopic, directSender, EVENT_TYPE, heraldSender, Interrupted, LoadResult, runIdleProbe, runLoad, Send } from './load';
import { BenchReceiver, IdFrom, Tracker } from './receiver';
import { Distribution, ratio, round, table } from './stats';
import { formatSteadyReport, runSteadyPhase, STEADY_PROJECT, SteadyReport } from './steady';
import { formatUsageMetering, meterCallMicros } from './usage-metering';
import { formatSparseReport, runSparsePhase, SPARSE_PROJECT, SparseReport } from './sparse';
import { BatchedMeasurement, batchedTargets, formatBatched, measureBatched } from './batched';
import { collectionTable, OpsByCollection } from './firestore-meter';
import { BenchHarness } from './harness';
import { ISOLATION_HELP, runIsolationBench } from './isolation';
import { RATE_HELP, runRateBench } from './rate';
import { FANOUT_HELP, runFanoutBench } from './fanout';
import { LATENCY_HELP, runLatencyBench } from './latency';
import { QUOTA_HELP, runQuotaBench } from './quota';
import { LOG_HELP, runLogBench } from './log';
import { runScaleBench, SCALE_HELP } from './scale';
import { RECOVERY_HELP, runRecoveryBench } from './recovery';
import { BATCHED_HELP, runBatchedBench } from './batched';
import { ORDERED_HELP, runOrderedBench } from './ordered';
import { FILTERS_HELP, filterEvaluation, formatFilterEvaluation, runFilterBench } from './filters';

const HERALD_PROJECT = 'herald-bench';
const DIRECT_PROJECT = 'herald-bench-direct';
const DESTINATION = 'bench';
const DIRECT_TOPIC = 'bench-direct';
const DIRECT_SUBSCRIPTION = 'bench-direct-push';
const CLEANUP_STEP_MS = 15_000;

const HELP = `Usage: npm run bench -- [options]
       npm run bench -- rate [options]        adaptive rate control (issue 5); rate --help
       npm run bench -- isolation [options]   one destination timing out beside a healthy one; isolation --help
       npm run bench -- fanout [options]      a burst over D destinations, Herald vs the bare emulator; fanout --help
       npm run bench -- latency [options]     paced events, latency Herald adds over the bare emulator; latency --help
       npm run bench -- quota [options]       one account 10× over its publish quota beside another; quota --help
       npm run bench -- log [options]         the console's delivery log pages with 100,000 deliveries stored; log --help
       npm run bench -- scale [options]       100,000 destinations in 10,000 accounts: registration, one account's pages, suspension check, a deliver instance's memory; scale --help
       npm run bench -- recovery [options]    the reconciler recovering 50,000 missing records, round by round; recovery --help
       npm run bench -- batched [options]     10,000 events to a destination batching 100 / 1 s: requests, latency, cost; batched --help
       npm run bench -- ordered [options]     ordered per key through a receiver failing 20 %: inversions, throughput vs unordered, cost; ordered --help
       npm run bench -- filters [options]     CEL filter evaluation per event, and 20 destinations with 10 filtering 90 % out: writes and lane messages; filters --help

  --events N         events per part (env BENCH_EVENTS; default 2000)
  --batch N          events per POST /ingest batch and per direct publish round (BENCH_BATCH; 100)
  --concurrency N    batches in flight at once (BENCH_CONCURRENCY; 4)
  --warmup N         unmeasured events sent through each path first (BENCH_WARMUP; 100)
  --idle N           events sent one at a time afterwards, for latency with no queue (BENCH_IDLE; 20)
  --stall-timeout S  give up when no event arrives for S seconds (BENCH_STALL_TIMEOUT; 30)

Cost phase (Herald in a child process with HERALD_TIME_SCALE=1000 and a 100 ms retry pump):
  --cost-events M    events per cost run; 0 skips the phase (BENCH_COST_EVENTS; 500)
  --cost-batch K     events per POST /ingest in the cost runs; K=100 and direct publishing
                     are always measured too (BENCH_COST_BATCH; 1)
  --cost-idle S      seconds of the idle window that measures the pump's polling (BENCH_COST_IDLE; 3)
  --cost-only        skip the throughput and latency parts
  --telemetry on|off Herald's own metrics in the cost runs (BENCH_TELEMETRY; on): on is local mode's
                     default (recorded; read when GET /metrics is scraped), off is HERALD_TELEMETRY=off.
                     Run the cost phase once with each and compare its CPU per delivery

Sparse scenario (Herald in a child process at HERALD_TIME_SCALE=1): N destinations registered
through the admin API, each for a type of its own, then one event each; Firestore reads, writes
and deletes per event by collection, as billed (target ≤ 1.0 reads, ≤ 0.6 writes):
  --sparse-destinations N  destinations; 0 skips the scenario (BENCH_SPARSE_DESTINATIONS; 500)

Steady-rate phase (Herald in a child process at HERALD_TIME_SCALE=1, as deployed): events sent
into POST /ingest one per request, paced at R/s, for S seconds to one destination answering 204;
reports the send and delivered rates and the success-rate counter documents' writes (per
delivered event; the hottest document's most writes in any 1 s window, target ≤ 1, and mean/s):
  --steady-seconds S seconds of sending; 0 skips the phase (BENCH_STEADY_SECONDS; 20)
  --steady-rate R    events per second (BENCH_STEADY_RATE; 100)

Batched scenario (issue 37's cost target: Herald in this process at HERALD_TIME_SCALE=1, the
receiver and sender in a child, as \`npm run bench -- batched --ingest-batch 100 --rate 1000\`):
N events at 1,000/s, 100 per POST /ingest, to a destination batching 100 events or 1 s; every
term per million, net of Herald's idle (target ≤ $0.10):
  --batched-events N events; 0 skips the scenario (BENCH_BATCHED_COST_EVENTS; 10000)

Reuses the emulators named by PUBSUB_EMULATOR_HOST / FIRESTORE_EMULATOR_HOST, else starts its own.`;

interface Options {
  events: number;
  batch: number;
  concurrency: number;
  warmup: number;
  idle: number;
  stallMs: number;
  costEvents: number;
  costBatch: number;
  costIdleSeconds: number;
  costOnly: boolean;
  telemetry: 'on' | 'off';
  sparseDestinations: number;
  steadySeconds: number;
  steadyRate: number;
  batchedEvents: number;
}

/** --telemetry (BENCH_TELEMETRY): on (the default) or off. */
function onOff(value: string | undefined): 'on' | 'off' {
  if (value === undefined || value === '' || value === 'on') return 'on';
  if (value === 'off') return 'off';
  throw new UsageError(`--telemetry (BENCH_TELEMETRY) must be on or off, not ${JSON.stringify(value)}`);
}

function parseOptions(argv: string[]): Options {
  const { values } = parseArgs({
    args: argv,
    options: {
      events: { type: 'string' },
      batch: { type: 'string' },
      concurrency: { type: 'string' },
      warmup: { type: 'string' },
      idle: { type: 'string' },
      'stall-timeout': { type: 'string' },
      'cost-events': { type: 'string' },
      'cost-batch': { type: 'string' },
      'cost-idle': { type: 'string' },
      'cost-only': { type: 'boolean' },
      telemetry: { type: 'string' },
      'sparse-destinations': { type: 'string' },
      'steady-seconds': { type: 'string' },
      'steady-rate': { type: 'string' },
      'batched-events': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(`${HELP}\n`);
    process.exit(0);
  }
  const int = (flag: string, raw: string | undefined, env: string, fallback: number, min: number): number => {
    const value = raw ?? process.env[env];
    if (value === undefined || value === '') return fallback;
    const n = Number(value);
    if (!Number.isInteger(n) || n < min) throw new UsageError(`--${flag} (${env}) must be a whole number ≥ ${min}, not ${JSON.stringify(value)}`);
    return n;
  };
  return {
    events: int('events', values.events, 'BENCH_EVENTS', 2000, 1),
    batch: int('batch', values.batch, 'BENCH_BATCH', 100, 1),
    concurrency: int('concurrency', values.concurrency, 'BENCH_CONCURRENCY', 4, 1),
    warmup: int('warmup', values.warmup, 'BENCH_WARMUP', 100, 0),
    idle: int('idle', values.idle, 'BENCH_IDLE', 20, 0),
    stallMs: int('stall-timeout', values['stall-timeout'], 'BENCH_STALL_TIMEOUT', 30, 1) * 1000,
    costEvents: int('cost-events', values['cost-events'], 'BENCH_COST_EVENTS', 500, 0),
    costBatch: int('cost-batch', values['cost-batch'], 'BENCH_COST_BATCH', 1, 1),
    costIdleSeconds: int('cost-idle', values['cost-idle'], 'BENCH_COST_IDLE', 3, 1),
    costOnly: values['cost-only'] ?? false,
    telemetry: onOff(values.telemetry ?? process.env.BENCH_TELEMETRY),
    sparseDestinations: int('sparse-destinations', values['sparse-destinations'], 'BENCH_SPARSE_DESTINATIONS', 500, 0),
    steadySeconds: int('steady-seconds', values['steady-seconds'], 'BENCH_STEADY_SECONDS', 20, 0),
    steadyRate: int('steady-rate', values['steady-rate'], 'BENCH_STEADY_RATE', 100, 1),
    batchedEvents: int('batched-events', values['batched-events'], 'BENCH_BATCHED_COST_EVENTS', 10_000, 0),
  };
}

class UsageError extends Error {
  override name = 'UsageError';
}

/** An expected way for a run to fail (a stall, say): its message says it all, no stack needed. */
class BenchFailure extends Error {
  override name = 'BenchFailure';
}

// ---------------------------------------------------------------- output and shutdown

const note = (line: string) => process.stderr.write(`[bench] ${line}\n`);
let progressOpen = false;
/** On a terminal one line is rewritten in place; elsewhere every update is its own line. */
function progress(line: string, final = false): void {
  if (process.stderr.isTTY) {
    process.stderr.write(`\r\x1b[2K[bench] ${line}${final ? '\n' : ''}`);
    progressOpen = !final;
  } else note(line);
}
function endProgress(): void {
  if (progressOpen) process.stderr.write('\n');
  progressOpen = false;
}

const controller = new AbortController();
const cleanups: { what: string; run: () => Promise<void> }[] = [];
let interrupts = 0;

function onSignal(signal: NodeJS.Signals): void {
  interrupts++;
  if (interrupts > 1) {
    process.stderr.write(`\n[bench] ${signal} again: quitting without cleaning up\n`);
    process.exit(130);
  }
  endProgress();
  note(`${signal}: stopping and cleaning up (again to quit at once)`);
  controller.abort();
}

/** Rejects as soon as the run is interrupted, so no step keeps Ctrl-C waiting. */
function guard<T>(promise: Promise<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(new Interrupted('interrupted'));
    if (controller.signal.aborted) return onAbort();
    controller.signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => (controller.signal.removeEventListener('abort', onAbort), resolve(v)),
      (e: unknown) => (controller.signal.removeEventListener('abort', onAbort), reject(e as Error)),
    );
  });
}

async function runCleanups(): Promise<void> {
  for (const { what, run } of cleanups.reverse()) {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([run(), new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`took over ${CLEANUP_STEP_MS / 1000} s`)), CLEANUP_STEP_MS)))]);
    } catch (e) {
      note(`cleanup: ${what} failed: ${(e as Error).message}`);
    } finally {
      clearTimeout(timer);
    }
  }
  cleanups.length = 0;
}

// ---------------------------------------------------------------- emulator housekeeping

// ---------------------------------------------------------------- the two parts

interface PartResult extends LoadResult {
  idleLatencyMs?: Distribution & { problem?: string };
  /** This process during the load: Herald, the receiver and the load generator share it. */
  node: { cpuPercent?: number; eventLoopUtilization?: number };
}

interface Part {
  name: 'herald' | 'direct';
  send: Send;
  path: string;
  idFrom: IdFrom;
}

async function runPart(part: Part, receiver: BenchReceiver, options: Options, runId: string, hooks: { beforeLoad?: () => void; detail?: () => string; afterLoad?: (r: LoadResult) => Promise<void> } = {}): Promise<PartResult> {
  const ids = (phase: string, n: number) => Array.from({ length: n }, (_, i) => `${runId}-${part.name}-${phase}-${i}`);
  const loadOptions = { batchSize: options.batch, concurrency: options.concurrency, stallMs: options.stallMs, signal: controller.signal, progress };
  if (options.warmup > 0) {
    const tracker = new Tracker(`${part.name} warm-up`);
    receiver.route(part.path, tracker, part.idFrom);
    const warm = await runLoad(part.send, tracker, ids('warm', options.warmup), loadOptions);
    if (!warm.complete) throw new BenchFailure(`${part.name} warm-up failed: ${warm.problem}`);
  }
  const tracker = new Tracker(part.name);
  receiver.route(part.path, tracker, part.idFrom);
  hooks.beforeLoad?.();
  const cpu = process.cpuUsage();
  const elu = performance.eventLoopUtilization();
  const t0 = performance.now();
  const load = await runLoad(part.send, tracker, ids('load', options.events), { ...loadOptions, ...(hooks.detail ? { detail: hooks.detail } : {}) });
  const usedCpu = process.cpuUsage(cpu);
  const wallMs = performance.now() - t0;
  const result: PartResult = {
    ...load,
    node: {
      cpuPercent: round(((usedCpu.user + usedCpu.system) / 1000 / wallMs) * 100),
      eventLoopUtilization: round(performance.eventLoopUtilization(elu).utilization, 2),
    },
  };
  await hooks.afterLoad?.(result);
  if (result.complete && options.idle > 0) {
    const idle = new Tracker(`${part.name} idle`);
    receiver.route(part.path, idle, part.idFrom);
    progress(`${part.name}: ${options.idle} events one at a time`);
    result.idleLatencyMs = await runIdleProbe(part.send, idle, ids('idle', options.idle), { stallMs: options.stallMs, signal: controller.signal });
    progress(`${part.name}: idle latency p50 ${result.idleLatencyMs.p50 ?? '—'} ms`, true);
  }
  return result;
}

// ---------------------------------------------------------------- main

async function main(): Promise<number> {
  const options = parseOptions(process.argv.slice(2));
  const began = performance.now();
  const runId = randomBytes(4).toString('hex');
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.env.METADATA_SERVER_DETECTION ??= 'none';

  const receiver = await new BenchReceiver().start();
  cleanups.push({ what: 'stopping the receiver', run: () => receiver.stop() });

  // The emulators' own output is kept back and shown only if they fail to start.
  const emulatorLines: string[] = [];
  const reused = Boolean(process.env.PUBSUB_EMULATOR_HOST && process.env.FIRESTORE_EMULATOR_HOST);
  note(reused ? `reusing the emulators at ${process.env.PUBSUB_EMULATOR_HOST} and ${process.env.FIRESTORE_EMULATOR_HOST}` : 'starting the Pub/Sub and Firestore emulators');
  let emulators: RunningEmulators;
  try {
    emulators = await guard(startEmulators({ log: (line) => emulatorLines.push(line) }));
  } catch (e) {
    if (!(e instanceof Interrupted)) for (const line of emulatorLines.slice(-30)) note(line);
    throw e;
  }
  const ownEmulators = emulators.started.pubsub || emulators.started.firestore;
  cleanups.push({ what: 'stopping the emulators', run: () => emulators.stop() });
  // Our own emulators die with the process on Ctrl-C (their exit hooks): nothing to delete then.
  const emulatorsAlive = () => !(controller.signal.aborted && emulators.started.pubsub);
  process.env.PUBSUB_EMULATOR_HOST = emulators.pubsubHost;
  process.env.FIRESTORE_EMULATOR_HOST = emulators.firestoreHost;

  const throughput = options.costOnly ? undefined : await runThroughput(options, receiver, emulators, emulatorsAlive, runId);
  // In this process, a second or two: a destination filter's verdict per event (issue 56).
  const filters = filterEvaluation();

  const childContext: CostContext = {
    emulators,
    receiver,
    runId,
    signal: controller.signal,
    progress,
    note,
    addCleanup: (what, run) => cleanups.push({ what, run }),
  };
  /** A child-process phase's project: emptied first on shared emulators, its documents deleted after. */
  const ownProject = async (project: string) => {
    if (!ownEmulators) await guard(Promise.all([purgeProject(project), clearFirestore(emulators, project)]));
    cleanups.push({
      what: `deleting project ${project}'s documents`,
      run: async () => {
        if (emulatorsAlive()) await clearFirestore(emulators, project);
      },
    });
  };

  let cost: CostReport | undefined;
  if (options.costEvents > 0) {
    await ownProject(COST_PROJECT);
    cost = await runCostPhase(
      { events: options.costEvents, batch: options.costBatch, idleSeconds: options.costIdleSeconds, concurrency: options.concurrency, warmup: Math.min(50, options.costEvents), stallMs: options.stallMs, telemetry: options.telemetry },
      childContext,
    );
  }

  let sparse: SparseReport | undefined;
  if (options.sparseDestinations > 0) {
    await ownProject(SPARSE_PROJECT);
    sparse = await runSparsePhase({ destinations: options.sparseDestinations, concurrency: options.concurrency, stallMs: options.stallMs }, childContext);
  }

  let steady: SteadyReport | undefined;
  if (options.steadySeconds > 0) {
    await ownProject(STEADY_PROJECT);
    steady = await runSteadyPhase({ seconds: options.steadySeconds, rate: options.steadyRate, warmup: 20, stallMs: options.stallMs }, childContext);
  }

  // Last: its Herald runs in this process, and stays up until the cleanups.
  let batched: BatchedMeasurement | undefined;
  if (options.batchedEvents > 0) {
    const settings = { events: options.batchedEvents, rate: 1000, perPost: 100, maxEvents: 100, maxWaitMs: 1000, stallMs: options.stallMs, idleSeconds: 5, project: `herald-cost-batched-${runId}` };
    batched = await measureBatched(settings, { emulators, note, addCleanup: (what, run) => cleanups.push({ what, run }), guard, signal: controller.signal });
  }

  const runSeconds = round((performance.now() - began) / 1000);
  const report = {
    bench: 'herald-vs-direct',
    emulators: { reused: !ownEmulators, pubsub: emulators.pubsubHost, firestore: emulators.firestoreHost },
    ...(throughput?.report ?? {}),
    ...(cost ? { cost } : {}),
    ...(sparse ? { sparse } : {}),
    ...(steady ? { steady } : {}),
    ...(batched ? { batched } : {}),
    filterEvaluation: filters,
    runSeconds,
  };
  endProgress();
  const out = [
    ...(throughput ? [formatReport(throughput.report, throughput.logger)] : []),
    ...(cost ? [formatCostReport(cost)] : []),
    ...(sparse ? [formatSparseReport(sparse)] : []),
    ...(steady ? [formatSteadyReport(steady)] : []),
    ...(cost || sparse || steady ? [formatCollectionSummary(cost, sparse, steady)] : []),
    ...(cost || steady
      ? [
          formatUsageMetering([
            ...(cost?.runs ?? []).map((run) => ({ name: `${run.name} (scale 1000)`, ...(run.usageMetering ? { metering: run.usageMetering } : {}), judged: false })),
            ...(steady ? [{ name: `steady, ${steady.settings.rate} events/s (scale 1)`, ...(steady.usageMetering ? { metering: steady.usageMetering } : {}), judged: true }] : []),
          ], meterCallMicros()),
        ]
      : []),
    ...(batched ? [formatBatched(batched), ...batchedTargets(batched).filter((t) => t.includes('per million'))] : []),
    formatFilterEvaluation(filters),
    '',
    `Run took ${runSeconds} s.`,
    '',
  ];
  process.stdout.write(`${out.join('\n')}\n`);
  process.stdout.write(`${JSON.stringify(report)}\n`);
  const problems = [...(throughput && !throughput.ok ? [`herald ${throughput.report.herald.problem ?? 'ok'}; direct ${throughput.report.direct.problem ?? 'ok'}`] : []), ...(cost && !cost.complete ? ['cost phase incomplete'] : []), ...(sparse && !sparse.complete ? [`sparse scenario incomplete: ${sparse.problem ?? '?'}`] : []), ...(steady && !steady.complete ? [`steady-rate phase incomplete: ${steady.problem ?? '?'}`] : [])];
  if (problems.length) note(`incomplete run: ${problems.join('; ')}`);
  return problems.length ? 1 : 0;
}

/** Where Firestore's reads and writes go, by collection: the dense runs, one destination at scale 1, and the sparse scenario side by side. */
function formatCollectionSummary(cost: CostReport | undefined, sparse: SparseReport | undefined, steady: SteadyReport | undefined): string {
  const columns: { name: string; perEvent: OpsByCollection }[] = [];
  for (const run of cost?.runs ?? []) {
    if (run.scenario === 'first-attempt' && run.source === 'ingest' && run.perEvent.firestore.byCollection) columns.push({ name: `dense ${run.name.replace('first attempt, ', '')} (scale 1000)`, perEvent: run.perEvent.firestore.byCollection });
  }
  if (steady?.firestore.byCollection) columns.push({ name: `steady, 1 destination (scale 1)`, perEvent: steady.firestore.byCollection });
  if (sparse) columns.push({ name: `sparse, ${sparse.settings.destinations} destinations × 1 (scale 1)`, perEvent: sparse.firestore.byCollection });
  const { header, rows } = collectionTable(columns);
  return [
    '',
    'Firestore per delivered event by collection, as billed (a meter on the Firestore client\'s RPCs; everything in each run\'s counted span, polling and checks included):',
    '',
    table(header, rows),
  ].join('\n');
}

type ThroughputReport = Awaited<ReturnType<typeof runThroughput>>['report'];

/** The throughput and latency parts: Herald's local stack, then the bare push subscription. */
async function runThroughput(options: Options, receiver: BenchReceiver, emulators: RunningEmulators, emulatorsAlive: () => boolean, runId: string) {
  if (!(emulators.started.pubsub || emulators.started.firestore)) {
    // Shared emulators may hold an interrupted run's lanes, which would push to this receiver.
    await guard(Promise.all([purgeProject(HERALD_PROJECT), purgeProject(DIRECT_PROJECT), clearFirestore(emulators, HERALD_PROJECT)]));
  }
  note('starting Herald (local stack)');
  const logger = new CountingLogger();
  const stack: LocalStack = await guard(
    startLocalStack({
      port: 0,
      emulators: { pubsubHost: emulators.pubsubHost, firestoreHost: emulators.firestoreHost },
      env: { ...process.env, HERALD_PROJECT_ID: HERALD_PROJECT, HERALD_ALLOW_LOOPBACK: 'true', HERALD_LOG_LEVEL: 'INFO' },
      log: logger,
      onProgress: () => undefined,
    }),
  );
  cleanups.push({
    what: `stopping Herald and deleting project ${HERALD_PROJECT}'s topics, subscriptions and documents`,
    run: async () => {
      const alive = emulatorsAlive();
      await stack.stop({ purge: alive });
      if (alive) await clearFirestore(emulators, HERALD_PROJECT);
    },
  });
  const probe = new RuntimeProbe(stack.runtime);

  const put = await guard(
    fetch(`${stack.url}/admin/destinations/${DESTINATION}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${stack.config.adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: `${receiver.url}/herald`, eventTypes: [EVENT_TYPE] }),
    }),
  );
  if (put.status !== 201 && put.status !== 200) throw new Error(`PUT /admin/destinations/${DESTINATION} answered ${put.status}: ${(await put.text()).slice(0, 300)}`);

  // The baseline: a topic whose push subscription calls the receiver directly.
  const pubsub = new PubSub({ projectId: DIRECT_PROJECT });
  cleanups.push({
    what: `deleting ${DIRECT_TOPIC} and ${DIRECT_SUBSCRIPTION}`,
    run: async () => {
      if (emulatorsAlive()) {
        await pubsub.subscription(DIRECT_SUBSCRIPTION).delete().catch(() => undefined);
        await pubsub.topic(DIRECT_TOPIC).delete().catch(() => undefined);
      }
      await pubsub.close();
    },
  });
  const [topic] = await guard(pubsub.createTopic(DIRECT_TOPIC));
  // Same ack deadline as Herald's lanes.
  await guard(topic.createSubscription(DIRECT_SUBSCRIPTION, { ackDeadlineSeconds: 60, pushConfig: { pushEndpoint: `${receiver.url}/direct` } }));

  note(`${options.events} events per part, batches of ${options.batch}, ${options.concurrency} in flight, warm-up ${options.warmup}, idle probe ${options.idle}`);
  const ops = stack.runtime.firestoreOps;
  let firestore: { reads: number; writes: number; readsPerEvent?: number; writesPerEvent?: number } = { reads: 0, writes: 0 };
  let internals = probe.summary();
  let routing: { routed: number; routedMs?: number; routedPerSecond?: number } = { routed: 0 };
  const herald = await runPart({ name: 'herald', send: heraldSender(`${stack.url}/ingest`, stack.config.ingestToken, 30_000), path: '/herald', idFrom: 'ce-id-header' }, receiver, options, runId, {
    beforeLoad: () => {
      probe.reset();
      ops.reset();
    },
    detail: () => `routed ${probe.count('publish lane (ingest, route)')}`,
    afterLoad: async (r) => {
      // A delivery is recorded after the receiver answered: let those writes land before counting.
      const deadline = performance.now() + 5000;
      while (probe.count('deliveries.create') < r.delivered && performance.now() < deadline) await new Promise((res) => setTimeout(res, 50));
      const per = (n: number) => (r.delivered > 0 ? round(n / r.delivered, 2) : undefined);
      firestore = { reads: ops.reads, writes: ops.writes, readsPerEvent: per(ops.reads), writesPerEvent: per(ops.writes) };
      internals = probe.summary();
      // The middle stage: when the last event was on its lane (route done), from the first send.
      const routed = probe.count('publish lane (ingest, route)');
      const end = probe.lastEnd('publish lane (ingest, route)');
      const routedMs = end === undefined ? undefined : end - r.firstSentAt;
      routing = { routed, ...(routedMs !== undefined ? { routedMs: round(routedMs), routedPerSecond: round((routed / routedMs) * 1000) } : {}) };
    },
  });
  const direct = await runPart({ name: 'direct', send: directSender(benchTopic(pubsub, DIRECT_TOPIC)), path: '/direct', idFrom: 'push-envelope' }, receiver, options, runId);


  const report = {
    events: options.events,
    batchSize: options.batch,
    concurrency: options.concurrency,
    warmup: options.warmup,
    idleEvents: options.idle,
    herald: { ...withoutClock(herald), routing, firestore, internals, logs: logger.counts },
    direct: withoutClock(direct),
    ratio: {
      throughput: bothRatio(herald, direct, (p) => p.eventsPerSecond),
      latencyP50: bothRatio(herald, direct, (p) => p.latencyMs.p50),
      latencyP99: bothRatio(herald, direct, (p) => p.latencyMs.p99),
      idleLatencyP50: bothRatio(herald, direct, (p) => p.idleLatencyMs?.p50),
      idleLatencyP99: bothRatio(herald, direct, (p) => p.idleLatencyMs?.p99),
    },
  };
  return { report, logger, ok: herald.complete && direct.complete };
}

/** herald/direct, left out when either part did not finish (its numbers would mislead). */
function bothRatio(h: Omit<PartResult, 'firstSentAt'>, d: Omit<PartResult, 'firstSentAt'>, pick: (p: Omit<PartResult, 'firstSentAt'>) => number | undefined): number | undefined {
  return h.complete && d.complete ? ratio(pick(h), pick(d)) : undefined;
}

function withoutClock<T extends { firstSentAt: number }>(result: T): Omit<T, 'firstSentAt'> {
  const { firstSentAt: _, ...rest } = result;
  return rest;
}

function formatReport(r: ThroughputReport, logger: CountingLogger): string {
  const { herald: h, direct: d } = r;
  const rows: unknown[][] = [
    ['delivered', `${h.delivered}/${h.events}`, `${d.delivered}/${d.events}`, undefined],
    ['duplicates', h.duplicates, d.duplicates, undefined],
    ['publish (accepted) time, ms', h.publishMs, d.publishMs, bothRatio(h, d, (p) => p.publishMs)],
    ['all routed onto the lane after, ms', h.routing.routedMs, undefined, undefined],
    ['routing throughput, events/s', h.routing.routedPerSecond, undefined, undefined],
    ['first send → last receipt, ms', h.elapsedMs, d.elapsedMs, bothRatio(h, d, (p) => p.elapsedMs)],
    ['throughput, events/s', h.eventsPerSecond, d.eventsPerSecond, r.ratio.throughput],
    ['latency p50, ms', h.latencyMs.p50, d.latencyMs.p50, r.ratio.latencyP50],
    ['latency p90, ms', h.latencyMs.p90, d.latencyMs.p90, bothRatio(h, d, (p) => p.latencyMs.p90)],
    ['latency p99, ms', h.latencyMs.p99, d.latencyMs.p99, r.ratio.latencyP99],
    ['latency max, ms', h.latencyMs.max, d.latencyMs.max, bothRatio(h, d, (p) => p.latencyMs.max)],
    [`idle latency p50, ms (${r.idleEvents} one by one)`, h.idleLatencyMs?.p50, d.idleLatencyMs?.p50, r.ratio.idleLatencyP50],
    ['idle latency p99, ms', h.idleLatencyMs?.p99, d.idleLatencyMs?.p99, r.ratio.idleLatencyP99],
    ['bench process CPU during the load, %', h.node.cpuPercent, d.node.cpuPercent, undefined],
    ['bench process event-loop utilization', h.node.eventLoopUtilization, d.node.eventLoopUtilization, undefined],
    ['Firestore writes/event', h.firestore.writesPerEvent, undefined, undefined],
    ['Firestore reads/event', h.firestore.readsPerEvent, undefined, undefined],
  ];
  const out = [
    '',
    `Herald vs a bare push subscription: ${r.events} events each, batches of ${r.batchSize}, ${r.concurrency} batches in flight (after ${r.warmup} warm-up events)`,
    '',
    table(['', 'herald', 'direct', 'herald/direct'], rows),
    '',
    'Herald internals during the load (ms per call):',
    '',
    table(
      ['call', 'calls', 'mean', 'p50', 'p99', 'max', 'peak in flight'],
      PROBED_CALLS.map((c) => {
        const s = h.internals[c];
        return [c, s.count, s.mean, s.p50, s.p99, s.max, s.peakInFlight];
      }),
    ),
    '',
    `Herald logs: ${Object.entries(logger.counts).map(([k, v]) => `${k} ${v}`).join(', ')}${logger.problems.length ? `\n  ${logger.problems.join('\n  ')}` : ''}`,
    ...[h, d].flatMap((p, i) => (p.problem ? [`INCOMPLETE ${i === 0 ? 'herald' : 'direct'}: ${p.problem}`] : [])),
  ];
  return out.join('\n');
}

// `npm run bench -- rate …` and `npm run bench -- isolation …` are benches of their own.
const [mode, ...modeArgs] = process.argv.slice(2);
if (mode === 'rate' || mode === 'isolation') {
  const harness = new BenchHarness(mode === 'rate' ? RATE_HELP : ISOLATION_HELP);
  harness.run(() => (mode === 'rate' ? runRateBench(modeArgs, harness) : runIsolationBench(modeArgs, harness)));
} else if (mode === 'fanout') {
  const harness = new BenchHarness(FANOUT_HELP);
  harness.run(() => runFanoutBench(modeArgs, harness));
} else if (mode === 'scale') {
  const harness = new BenchHarness(SCALE_HELP);
  harness.run(() => runScaleBench(modeArgs, harness));
} else if (mode === 'batched') {
  const harness = new BenchHarness(BATCHED_HELP);
  harness.run(() => runBatchedBench(modeArgs, harness));
} else if (mode === 'ordered') {
  const harness = new BenchHarness(ORDERED_HELP);
  harness.run(() => runOrderedBench(modeArgs, harness));
} else if (mode === 'recovery') {
  const harness = new BenchHarness(RECOVERY_HELP);
  harness.run(() => runRecoveryBench(modeArgs, harness));
} else if (mode === 'latency') {
  const harness = new BenchHarness(LATENCY_HELP);
  harness.run(() => runLatencyBench(modeArgs, harness));
} else if (mode === 'log') {
  const harness = new BenchHarness(LOG_HELP);
  harness.run(() => runLogBench(modeArgs, harness));
} else if (mode === 'filters') {
  const harness = new BenchHarness(FILTERS_HELP);
  harness.run(() => runFilterBench(modeArgs, harness));
} else if (mode === 'quota') {
  const harness = new BenchHarness(QUOTA_HELP);
  harness.run(() => runQuotaBench(modeArgs, harness));
} else {
  main()
    .then(
      (code) => code,
      (e: unknown) => {
        endProgress();
        if (e instanceof Interrupted) note('interrupted');
        else if (e instanceof BenchFailure) note(`failed: ${e.message}`);
        else if (e instanceof UsageError) process.stderr.write(`bench: ${e.message}\n\n${HELP}\n`);
        else note(`failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
        return e instanceof Interrupted ? 130 : 1;
      },
    )
    .then(async (code) => {
      await runCleanups();
      // Client libraries keep sockets and timers open; the run is over.
      process.exit(code);
    });
}
