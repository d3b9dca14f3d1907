/**
 * `npm run bench -- rate`: Herald's adaptive rate control (issue 5) against receivers that
 * accept C requests/s and answer 429 above that, C = 10, 37 and 150 by default.
 *
 * Setup, on the emulators (started, or reused from PUBSUB_EMULATOR_HOST and
 * FIRESTORE_EMULATOR_HOST), in project herald-bench-rate:
 *   - one destination per C (`rate-C`, policy event-platform: a 429 throttles the event, which
 *     the retry pump brings back 10 s later without spending a retry), written straight into
 *     the destination store; its lane topic `herald-lane-rate-C` with a PULL subscription of
 *     the bench's own (Herald's push subscription is not created, so nothing else delivers);
 *   - a loopback receiver in this process: per destination path, a sliding 1 s window that
 *     accepts C requests and answers 429 to the rest (no Retry-After unless --retry-after);
 *   - a backlog of events published onto each lane (CloudEvents Pub/Sub binding with the lane
 *     attributes herald-destination and herald-published-at, as `route` publishes them): more
 *     than min(C, 100) × the run's seconds, so demand stays above capacity throughout;
 *   - W ≥ 3 worker processes (rate-worker.ts, forked with this process's execArgv, i.e. tsx),
 *     each with its own Herald runtime at HERALD_TIME_SCALE=1, pulling from every lane (each
 *     message goes to one worker) with flow control of M messages per subscription, calling
 *     deliverFromLane for each and acking after it; one more process runs the retry pump every
 *     200 ms and pulls nothing (deferred and throttled deliveries come back through it, onto
 *     the lane).
 * By default the capacities run one after the other: each alone is what a destination sees
 * in production, and three at once triple the load on a 2-core machine running both
 * emulators, three workers and the receiver (event-loop delays of a second and Firestore
 * transactions of seconds then measure the machine, not the controller); --parallel runs
 * them at once (each destination its own lane, receiver path and controller document).
 *
 * --hang H is the recovery scenario. No backlog is published up front: a producer in this
 * process publishes half of min(C, 100) events a second onto each lane, all run long. For the
 * first H seconds the receiver holds every request 6 s (Herald's attempts time out, its rate
 * sinks to the minimum, 1/s, and the events it has no turn for are deferred a second apart),
 * then it accepts C/s and the run is measured from then. New events fill half the recovered
 * rate; the deferred backlog must fill the rest (brought forward: deferred at 1/s, it would
 * take a second per event), until it is all delivered.
 *
 * Measured from the receiver's log, over the run [t0, t0 + S) where t0 is when the workers
 * were told to start (with --hang, when the receiver answers again): seconds until the delivered (2xx) rate over the preceding 1 s first
 * reaches 80 % of min(C, 100); steady state = mean delivered/s over the second half ÷
 * min(C, 100); the share of 429s among the second half's requests (and overall); the most
 * deliveries (and requests) in any sliding 1 s window. From the workers' logs: the writes to
 * the destination's rate-control document (one per lease), to its success-rate counter
 * documents and to its delivery records: most in any 1 s window and mean writes/s.
 */
import { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { PubSub } from '@google-cloud/pubsub';
import { LANE_ATTRIBUTES } from '../../shared/domain/intake/lane-message';
import { loadConfig } from '../../shared/config';
import { toPubSubMessage } from '../../shared/domain/events/cloudevents-pubsub';
import { applySpec } from '../../shared/domain/destinations/destination';
import { HeraldEvent } from '../../shared/domain/events/event';
import { createLogger } from '../../shared/log';
import { createRuntime, Runtime } from '../../shared/runtime/runtime';
import { laneTopology } from '../../shared/topology';
import { BenchFailure, BenchHarness, intOption, mark, UsageError } from './harness';
import { clearFirestore, purgeProject } from './housekeeping';
import { forkUntilReady } from './fork-child';
import { EVENT_SOURCE, sleep } from './load';
import { analyseRate, analyseRecovery, HERALD_MAX_RATE, RATE_TARGETS, RateAnalysis, RecoveryAnalysis } from './rate-analysis';
import { emptyOutcomes, OutcomeCounts, ParentMessage, WorkerMessage, WorkerReport, WorkerStatus } from './rate-protocol';
import { Behaviour, ScriptedReceiver } from './scripted-receiver';
import { round, table } from './stats';

export const RATE_PROJECT = 'herald-bench-rate';
const EVENT_TYPE = 'com.example.bench.rate';
const POLICY = 'event-platform';
const PUBLISH_CHUNK = 1000;

export const RATE_HELP = `Usage: npm run bench -- rate [options]

Adaptive rate control: receivers accepting C requests/s (sliding 1 s window, 429 above it),
W Herald worker processes pulling each destination's lane, for S seconds per capacity.
  --capacity C[,C…]   receiver capacities, requests/s (BENCH_RATE_CAPACITY; 10,37,150)
  --seconds S         measured seconds per capacity (BENCH_RATE_SECONDS; 90)
  --workers W         delivering worker processes (BENCH_RATE_WORKERS; 3)
  --max-messages M    pull flow control per worker and subscription (BENCH_RATE_MAX_MESSAGES; 200)
  --pump-interval MS  the retry pump's interval, in its own process (BENCH_RATE_PUMP_INTERVAL; 200)
  --retry-after S     put Retry-After: S on every 429 (default: no Retry-After)
  --hang S            recovery: a producer of min(C, 100)/2 events/s instead of a backlog; for the first
                      S s every request is held 6 s (attempts time out, the rate sinks to 1/s, events are
                      deferred), then the receiver accepts C/s; measured from then (BENCH_RATE_HANG; 0)
  --parallel          all capacities at once, each its own destination (default: one after the other)

Reuses the emulators named by PUBSUB_EMULATOR_HOST / FIRESTORE_EMULATOR_HOST, else starts its own.`;

interface RateOptions {
  capacities: number[];
  seconds: number;
  workers: number;
  maxMessages: number;
  pumpIntervalMs: number;
  retryAfter?: number;
  sequential: boolean;
  /** Seconds the receiver hangs before it accepts C/s; the measured run starts when it answers. */
  hangSeconds: number;
}

function parseRateOptions(argv: string[]): RateOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      capacity: { type: 'string', multiple: true },
      seconds: { type: 'string' },
      workers: { type: 'string' },
      'max-messages': { type: 'string' },
      'pump-interval': { type: 'string' },
      'retry-after': { type: 'string' },
      hang: { type: 'string' },
      parallel: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(`${RATE_HELP}\n`);
    process.exit(0);
  }
  const rawCapacities = values.capacity?.join(',') ?? process.env.BENCH_RATE_CAPACITY ?? '10,37,150';
  const capacities = rawCapacities.split(',').map((c) => c.trim()).filter(Boolean).map(Number);
  if (capacities.length === 0 || capacities.some((c) => !Number.isInteger(c) || c < 1)) throw new UsageError(`--capacity must be whole numbers ≥ 1, not ${JSON.stringify(rawCapacities)}`);
  if (new Set(capacities).size !== capacities.length) throw new UsageError(`--capacity lists a capacity twice: ${rawCapacities}`);
  const retryAfter = values['retry-after'] === undefined ? undefined : intOption('retry-after', values['retry-after'], 'BENCH_RATE_RETRY_AFTER', 1, 0);
  return {
    capacities,
    seconds: intOption('seconds', values.seconds, 'BENCH_RATE_SECONDS', 90, 4),
    workers: intOption('workers', values.workers, 'BENCH_RATE_WORKERS', 3, 1),
    maxMessages: intOption('max-messages', values['max-messages'], 'BENCH_RATE_MAX_MESSAGES', 200, 1),
    pumpIntervalMs: intOption('pump-interval', values['pump-interval'], 'BENCH_RATE_PUMP_INTERVAL', 200, 100),
    ...(retryAfter !== undefined ? { retryAfter } : {}),
    sequential: !(values.parallel ?? false),
    hangSeconds: intOption('hang', values.hang, 'BENCH_RATE_HANG', 0, 0),
  };
}

const epochNow = () => performance.timeOrigin + performance.now();
const destinationOf = (capacity: number) => `rate-${capacity}`;
/** A receiver that has stopped answering in time: every request held past Herald's 5 s attempt timeout. */
const HANGING: Behaviour = { kind: 'slow', delayMs: 6000 };
/** The recovery scenario's producer: half the target, so half the turns are the backlog's once the receiver answers. */
const recoveryLoad = (capacity: number) => Math.max(1, Math.round(Math.min(capacity, HERALD_MAX_RATE) / 2));
/** The recovery target: the whole deferred backlog delivered in the run, at ≥ 0.9 of the target while it lasted. */
const recoveryMet = (r: RecoveryAnalysis) => r.drainedSeconds !== undefined && (r.drainingRatio ?? 0) >= RATE_TARGETS.steadyRatio;
const throttleAt = (capacity: number, options: RateOptions): Behaviour => ({ kind: 'throttle', capacity, ...(options.retryAfter !== undefined ? { retryAfter: options.retryAfter } : {}) });
const pathOf = (capacity: number) => `/rate-${capacity}`;

// ---------------------------------------------------------------- workers

class RateWorker {
  latest?: WorkerStatus;
  private report?: (r: WorkerReport) => void;
  private exited?: Error;

  private constructor(
    readonly index: number,
    private readonly child: ChildProcess,
  ) {
    child.on('message', (m: WorkerMessage) => {
      if (m.type === 'status') this.latest = m;
      else if (m.type === 'report') this.report?.(m);
    });
    child.on('exit', (code, signal) => (this.exited = new Error(`worker ${index} exited (${signal ?? `code ${code}`})`)));
  }

  static start(index: number, env: NodeJS.ProcessEnv, h: BenchHarness): Promise<RateWorker> {
    const started = forkUntilReady<WorkerMessage, Extract<WorkerMessage, { type: 'ready' }>>(
      path.join(__dirname, 'rate-worker.ts'),
      { ...env, BENCH_WORKER: String(index) },
      `worker ${index}`,
      h.signal,
      (line) => h.note(`worker ${index}: ${line}`),
    );
    void started.then(({ child }) =>
      h.addCleanup(`stopping worker ${index}`, async () => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }),
    );
    return started.then(({ child }) => new RateWorker(index, child));
  }

  send(message: ParentMessage): void {
    if (!this.exited && this.child.connected) this.child.send(message);
  }

  /** Tells the worker to stop pulling; resolves with its logs. */
  stop(): Promise<WorkerReport> {
    if (this.exited) return Promise.reject(this.exited);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.child.kill('SIGKILL');
        reject(new Error(`worker ${this.index} did not report within 30 s of stop`));
      }, 30_000);
      this.report = (r) => {
        clearTimeout(timer);
        resolve(r);
      };
      this.child.once('exit', () => {
        clearTimeout(timer);
        reject(this.exited ?? new Error(`worker ${this.index} exited`));
      });
      this.send({ type: 'stop' });
    });
  }
}

// ---------------------------------------------------------------- one run

interface GroupResult {
  analyses: RateAnalysis[];
  outcomes: Record<string, OutcomeCounts>;
  /** Deferred deliveries the workers brought forward, per destination. */
  broughtForward: Record<string, number>;
  /** With --hang: how the deferred backlog came back, per capacity (in the order of `analyses`). */
  recoveries?: RecoveryAnalysis[];
  pump?: WorkerStatus['pump'];
  workerCpuPercent: number[];
  workerLoopDelayMs: WorkerReport['loopDelayMs'][];
  /** This process's event-loop delay during the run (the receiver's timestamps are only as good as it), ms. */
  benchLoopDelayMs: { p99?: number; max?: number };
  problems: string[];
}

function sumOutcomes(a: OutcomeCounts, b: OutcomeCounts): OutcomeCounts {
  const attempted = { ...a.attempted };
  for (const [k, v] of Object.entries(b.attempted)) attempted[k] = (attempted[k] ?? 0) + v;
  return { attempted, deferred: a.deferred + b.deferred, 'handed-over': a['handed-over'] + b['handed-over'], duplicate: a.duplicate + b.duplicate, queued: a.queued + b.queued, rejected: a.rejected + b.rejected, 'published-again': a['published-again'] + b['published-again'], errors: a.errors + b.errors };
}

/** Publishes events `from` to `to` − 1 of this run onto the destination's lane, as `route` would. */
function publishEvents(pubsub: PubSub, capacity: number, from: number, to: number, runId: string, prefix: string): Promise<string[]> {
  const destinationId = destinationOf(capacity);
  const topic = pubsub.topic(laneTopology(destinationId, { prefix }).topic.name, { batching: { maxMessages: 500, maxMilliseconds: 10 } });
  const publishedAt = new Date().toISOString();
  return Promise.all(
    Array.from({ length: to - from }, (_, k) => {
      const n = from + k;
      const id = `${runId}-${capacity}-${n}`;
      const event: HeraldEvent = {
        attributes: { specversion: '1.0', id, source: EVENT_SOURCE, type: EVENT_TYPE, time: publishedAt, datacontenttype: 'application/json' },
        data: Buffer.from(JSON.stringify({ id, n })),
      };
      const message = toPubSubMessage(event, { [LANE_ATTRIBUTES.destination]: destinationId, [LANE_ATTRIBUTES.publishedAt]: publishedAt });
      return topic.publishMessage({ data: message.data, attributes: message.attributes }).then(() => id);
    }),
  );
}

async function publishBacklog(pubsub: PubSub, capacity: number, count: number, runId: string, h: BenchHarness, prefix: string): Promise<void> {
  for (let i = 0; i < count; i += PUBLISH_CHUNK) await h.guard(publishEvents(pubsub, capacity, i, Math.min(count, i + PUBLISH_CHUNK), runId, prefix));
}

/**
 * The recovery scenario's producer: `perSecond` events a second onto the destination's lane
 * from `from` until `until` (epoch ms); resolves with each event's id and when it was published.
 */
async function produce(pubsub: PubSub, capacity: number, perSecond: number, from: number, until: number, runId: string, h: BenchHarness, prefix: string): Promise<{ id: string; at: number }[]> {
  const published: { id: string; at: number }[] = [];
  for (let n = 0; epochNow() < until; await sleep(100, h.signal)) {
    const due = Math.floor(((epochNow() - from) / 1000) * perSecond);
    if (due <= n) continue;
    const at = epochNow();
    for (const id of await h.guard(publishEvents(pubsub, capacity, n, due, runId, prefix))) published.push({ id, at });
    n = due;
  }
  return published;
}

async function runGroup(capacities: number[], options: RateOptions, ctx: { h: BenchHarness; env: NodeJS.ProcessEnv; rt: Runtime; receiver: ScriptedReceiver; runId: string }): Promise<GroupResult> {
  const { h, env, rt, receiver, runId } = ctx;
  const label = capacities.map((c) => `C=${c}`).join(', ');
  const subscriptions: string[] = [];
  for (const capacity of capacities) {
    const destinationId = destinationOf(capacity);
    const lane = laneTopology(destinationId, rt.names);
    receiver.route(pathOf(capacity), options.hangSeconds > 0 ? HANGING : throttleAt(capacity, options));
    const now = rt.clock.now();
    // A lane of its own: its volume earns one (topology.ts), and the workers pull it.
    await h.guard(rt.destinations.put(applySpec(destinationId, { url: `${receiver.url}${pathOf(capacity)}`, eventTypes: [EVENT_TYPE], policy: POLICY, lane: 'dedicated' }, undefined, now)));
    const [topic] = await h.guard(rt.pubsub.createTopic(lane.topic.name));
    const [sub] = await h.guard(topic.createSubscription(`${lane.topic.name}-bench-pull`, { ackDeadlineSeconds: 60, messageRetentionDuration: { seconds: 3600 } }));
    subscriptions.push(sub.name);
    // Recovery: a producer of half the target instead (below), so turns go unused once the receiver answers unless the deferred backlog fills them.
    if (options.hangSeconds > 0) continue;
    const backlog = Math.ceil(Math.min(capacity, HERALD_MAX_RATE) * options.seconds * 1.25) + options.workers * options.maxMessages;
    h.progress(`${label}: publishing ${backlog} events onto ${lane.topic.name}`);
    await publishBacklog(rt.pubsub, capacity, backlog, runId, h, rt.names.prefix);
  }
  h.progress(`${label}: starting ${options.workers} workers and the retry pump`, true);
  // The last process runs the retry pump and pulls nothing, as the pump is a function of its own
  // in production. Run inside a delivering worker, it took that worker's lane messages: the
  // emulator gave it half of what the others got, then none from about 65 s in (a third of
  // the turns unused until the split followed, 74–85/s for 5–9 s at C=150).
  const pumpWorker = options.workers;
  const workers = await h.guard(Promise.all(Array.from({ length: options.workers + 1 }, (_, i) => RateWorker.start(i, env, h))));

  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();
  const started = epochNow();
  workers.forEach((w, i) => w.send({ type: 'start', subscriptions: i === pumpWorker ? [] : subscriptions, maxMessages: options.maxMessages, ...(i === pumpWorker ? { pumpIntervalMs: options.pumpIntervalMs } : {}) }));
  // With --hang, the measured run starts when the receiver answers again (its log starts afresh then).
  const t0 = started + options.hangSeconds * 1000;
  const end = t0 + options.seconds * 1000;
  let hanging = options.hangSeconds > 0;
  const hangLogs = new Map(capacities.map((c) => [c, receiver.log(pathOf(c))]));
  const producers = hanging ? capacities.map((c) => produce(rt.pubsub, c, recoveryLoad(c), started, end, runId, h, rt.names.prefix)) : [];
  for (let s = 1; epochNow() < end; s++) {
    await sleep(Math.max(0, Math.min(end, started + s * 1000) - epochNow()), h.signal);
    if (hanging && epochNow() >= t0) {
      hanging = false;
      for (const c of capacities) receiver.route(pathOf(c), throttleAt(c, options));
      h.progress(`${label}: the receiver answers again, accepting C/s; measuring ${options.seconds} s`, true);
    }
    for (const w of workers) w.send({ type: 'status' });
    const last = epochNow() - performance.timeOrigin;
    const parts = capacities.map((c) => {
      const log = receiver.log(pathOf(c));
      let ok = 0;
      let throttled = 0;
      for (let i = log.length - 1; i >= 0 && log[i]!.at > last - 1000; i--) {
        if (log[i]!.status === 429) throttled++;
        else if (log[i]!.status >= 200 && log[i]!.status < 300) ok++;
      }
      const rates = workers.map((w) => w.latest?.rates[destinationOf(c)]).filter((r): r is number => r !== undefined);
      return `C=${c}: ${ok}/s ok, ${throttled} 429${rates.length ? `, rate ${round(Math.max(...rates), 1)}` : ''}`;
    });
    const inFlight = workers.reduce((n, w) => n + (w.latest?.inFlight ?? 0), 0);
    const brought = workers.reduce((n, w) => n + Object.values(w.latest?.broughtForward ?? {}).reduce((a, b) => a + b, 0), 0);
    const clock = hanging ? `hanging ${Math.round((epochNow() - started) / 1000)}/${options.hangSeconds} s` : `${Math.round((epochNow() - t0) / 1000)}/${options.seconds} s`;
    h.progress(`${clock} — ${parts.join(' | ')} — ${inFlight} in flight${brought ? `, ${brought} brought forward` : ''}`);
  }
  loopDelay.disable();
  const produced = await h.guard(Promise.all(producers));
  h.progress(`${label}: ${options.seconds} s done; collecting the workers' logs`, true);
  const reports = await h.guard(Promise.all(workers.map((w) => w.stop())));

  const leases = reports.flatMap((r) => r.leases);
  const counterWrites = reports.flatMap((r) => r.counterWrites);
  const recordWrites = reports.flatMap((r) => r.recordWrites);
  const attemptStarts = reports.flatMap((r) => r.attemptStarts);
  const leaseErrors = reports.reduce((n, r) => n + r.leaseErrors, 0);
  const analyses = capacities.map((capacity) =>
    analyseRate({
      capacity,
      destinationId: destinationOf(capacity),
      t0,
      seconds: options.seconds,
      requests: receiver.log(pathOf(capacity)).map((r) => ({ ...r, at: r.at + performance.timeOrigin })),
      leases,
      leaseErrors,
      counterWrites,
      recordWrites,
      attemptStarts,
      path: pathOf(capacity),
    }),
  );
  const recoveries = options.hangSeconds > 0
    ? capacities.map((capacity, i) =>
        analyseRecovery({
          target: Math.min(capacity, HERALD_MAX_RATE),
          t0,
          seconds: options.seconds,
          duringHang: produced[i]!.filter((p) => p.at < t0).map((p) => p.id),
          hangRequests: hangLogs.get(capacity)!,
          requests: receiver.log(pathOf(capacity)).map((r) => ({ ...r, at: r.at + performance.timeOrigin })),
        }),
      )
    : undefined;
  const pump = reports.find((r) => r.pump !== undefined)?.pump;
  const outcomes: Record<string, OutcomeCounts> = {};
  for (const r of reports) for (const [d, o] of Object.entries(r.outcomes)) outcomes[d] = sumOutcomes(outcomes[d] ?? emptyOutcomes(), o);
  const broughtForward: Record<string, number> = {};
  for (const r of reports) for (const [d, n] of Object.entries(r.broughtForward)) broughtForward[d] = (broughtForward[d] ?? 0) + n;
  const problems: string[] = [];
  for (const r of reports) {
    for (const f of r.firstFailures) problems.push(`worker ${r.worker}: ${f}`);
    for (const e of r.logs.firstErrors) problems.push(`worker ${r.worker} logged: ${e}`);
  }
  return {
    analyses,
    ...(recoveries ? { recoveries } : {}),
    outcomes,
    broughtForward,
    ...(pump ? { pump } : {}),
    // Over the worker's whole life (start-up included), as a share of one core.
    workerCpuPercent: reports.map((r) => round((r.cpuMicros / 1000 / r.uptimeMs) * 100, 0)!),
    workerLoopDelayMs: reports.map((r) => r.loopDelayMs),
    benchLoopDelayMs: { p99: round(loopDelay.percentile(99) / 1e6), max: round(loopDelay.max / 1e6) },
    problems: problems.slice(0, 10),
  };
}

// ---------------------------------------------------------------- output

function every(values: readonly (number | undefined)[], step: number, how: 'mean' | 'last'): string {
  const out: string[] = [];
  for (let i = 0; i < values.length; i += step) {
    const chunk = values.slice(i, i + step).filter((v): v is number => v !== undefined);
    if (chunk.length === 0) out.push('—');
    else out.push(String(how === 'mean' ? round(chunk.reduce((s, v) => s + v, 0) / chunk.length, 1) : chunk[chunk.length - 1]));
  }
  return out.join(' ');
}

const pct = (v: number | undefined) => (v === undefined ? undefined : `${round(v * 100, 2)} %`);

function formatRun(a: RateAnalysis, o: OutcomeCounts | undefined, broughtForward: number, options: RateOptions, recovery: RecoveryAnalysis | undefined): string {
  const { retryAfter, hangSeconds } = options;
  const t = a.targets;
  const rd = a.rateDoc;
  const rows: unknown[][] = [
    ['requests / delivered (2xx) / 429 / other', `${a.requests} / ${a.accepted} / ${a.throttled} / ${a.otherStatuses}`],
    [`seconds until delivered/s (sliding 1 s) first ≥ 80 % of ${a.target}`, a.reachSeconds],
    [`steady state (s ${a.steady.fromSecond}–${a.steady.toSecond}): delivered/s`, a.steady.acceptedPerSecond],
    [`  ÷ min(C, 100) = ${a.target}`, a.steady.ratio],
    ['  requests/s (429s included)', a.steady.requestsPerSecond],
    ['  share of 429s', pct(a.steady.throttledShare)],
    ['share of 429s, whole run', pct(a.overallThrottledShare)],
    ['most delivered in any 1 s window', a.peakAcceptedIn1s],
    ['most requests (429s included) in any 1 s window', a.peakRequestsIn1s],
    ["  most attempts started in any 1 s window (workers' clocks)", a.peakAttemptStartsIn1s],
    ['rate-control doc: lease writes (all workers)', rd?.writes],
    ['  most writes in any 1 s window', rd?.maxIn1s],
    ['  mean writes/s while written', rd?.meanPerSecond],
    ['  shortest gap between two writes, ms', rd?.minGapMs],
    ['  controller rate at the end, events/s', rd?.rateAtEnd],
    [`hottest success-rate counter doc (${a.counterDocs} docs): writes / max in 1 s / mean/s`, a.hottestCounter ? `${a.hottestCounter.writes} / ${a.hottestCounter.maxIn1s} / ${a.hottestCounter.meanPerSecond ?? '—'}` : undefined],
    ['hottest delivery record: writes / max in 1 s', a.hottestRecord ? `${a.hottestRecord.writes} / ${a.hottestRecord.maxIn1s}` : undefined],
    ['duplicate deliveries (an event accepted twice)', a.duplicateAccepts],
    [
      'workers: attempts by decision; deferred; duplicate; errors',
      o ? `${Object.entries(o.attempted).map(([k, v]) => `${k} ${v}`).join(', ') || 'none'}; deferred ${o.deferred}; duplicate ${o.duplicate}; errors ${o.errors}` : undefined,
    ],
    ['deferred deliveries brought forward (turns going unused)', broughtForward],
    ...(recovery
      ? [
          [`events published while the receiver hung (${recoveryLoad(a.capacity)}/s) / attempted then (timed out) / deferred`, `${recovery.publishedDuringHang} / ${recovery.attemptedDuringHang} / ${recovery.backlog}`],
          ['  deferred ones delivered in the run', recovery.backlogDelivered],
          ['  seconds until the last of them was delivered', recovery.drainedSeconds ?? 'not all were'],
          ['  (at the 1/s they were deferred at: seconds)', recovery.atMinimumRateSeconds],
          [`  delivered/s from reaching 80 % until then ÷ ${a.target}`, recovery.drainingRatio],
        ]
      : []),
  ];
  return [
    '',
    `C = ${a.capacity}/s (receiver: sliding 1 s window, 429 above it, ${retryAfter === undefined ? 'no Retry-After' : `Retry-After: ${retryAfter}`}); Herald target ${a.target}/s; ${a.seconds} s` +
      (hangSeconds > 0 ? `, measured from when the receiver answered again after hanging ${hangSeconds} s` : ''),
    '',
    table(['', `C=${a.capacity}`], rows),
    '',
    `  delivered/s, 5 s means:  ${every(a.perSecond.accepted, 5, 'mean')}`,
    `  429/s, 5 s means:        ${every(a.perSecond.throttled, 5, 'mean')}`,
    `  controller rate every 5 s: ${rd ? every(rd.rates, 5, 'last') : '—'}`,
    '',
    `  Targets: reach 80 % ≤ ${t.reach.limit} s: ${t.reach.measured ?? 'never'} — ${mark(t.reach.met)}; ` +
      (recovery
        ? `delivered while the backlog lasted ≥ ${RATE_TARGETS.steadyRatio} of ${a.target}/s: ${recovery.drainingRatio ?? '—'} — ${mark(recoveryMet(recovery))} (backlog of ${recovery.backlog} ${recovery.drainedSeconds === undefined ? 'NOT all delivered' : `delivered ${recovery.drainedSeconds} s after the receiver answered; ${recovery.atMinimumRateSeconds} s at 1/s`}); `
        : `steady ≥ ${t.steady.limit}: ${t.steady.measured} — ${mark(t.steady.met)}; `) +
      `429 share ≤ ${RATE_TARGETS.throttledShare * 100} %: ${pct(t.throttledShare.measured) ?? 'no requests in the steady half'} — ${mark(t.throttledShare.met)};`,
    `           peak delivered ≤ ${t.peak.limit}/s: ${t.peak.measured} — ${mark(t.peak.met)} (requests incl. 429s: ${t.peak.attempts} — ${mark(t.peak.attemptsMet)});`,
    `           hottest doc (${t.hottestDoc.doc ?? '—'}) ≤ ${t.hottestDoc.limit} write/s: mean ${t.hottestDoc.meanPerSecond ?? '—'} — ${mark(t.hottestDoc.meanMet)}, most in any 1 s window ${t.hottestDoc.maxIn1s ?? '—'} (a burst: Firestore's limit is the sustained rate)`,
  ].join('\n');
}

// ---------------------------------------------------------------- main

export async function runRateBench(argv: string[], h: BenchHarness): Promise<number> {
  const options = parseRateOptions(argv);
  const began = performance.now();
  const runId = randomBytes(4).toString('hex');
  const emulators = await h.emulators();
  const own = emulators.started.pubsub || emulators.started.firestore;
  if (!own) await h.guard(Promise.all([purgeProject(RATE_PROJECT), clearFirestore(emulators, RATE_PROJECT)]));
  h.addCleanup(`deleting project ${RATE_PROJECT}'s topics, subscriptions and documents`, async () => {
    if (h.emulatorsAlive(emulators)) await Promise.all([purgeProject(RATE_PROJECT), clearFirestore(emulators, RATE_PROJECT)]);
  });

  const receiver = await new ScriptedReceiver().start();
  h.addCleanup('stopping the receiver', () => receiver.stop());
  const token = (kind: string) => `herald_${kind}_${randomBytes(18).toString('base64url')}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PUBSUB_EMULATOR_HOST: emulators.pubsubHost,
    FIRESTORE_EMULATOR_HOST: emulators.firestoreHost,
    METADATA_SERVER_DETECTION: 'none',
    HERALD_PROJECT_ID: RATE_PROJECT,
    HERALD_TOPIC_PREFIX: 'herald',
    HERALD_TIME_SCALE: '1',
    HERALD_ALLOW_LOOPBACK: 'true',
    HERALD_LOG_LEVEL: 'INFO',
    HERALD_ADMIN_TOKEN: token('admin'),
    HERALD_INGEST_TOKEN: token('ingest'),
    // createRuntime needs one; no push subscription is ever made (the lanes here are pulled).
    HERALD_PUSH_BASE_URL: 'http://127.0.0.1:9',
  };
  const rt = createRuntime(loadConfig(env), { log: createLogger({ level: 'ERROR', write: (line) => h.note(line) }) });
  h.addCleanup('closing the bench runtime', () => rt.close());

  h.note(
    `rate: C = ${options.capacities.join(', ')}; ${options.seconds} s each, ${options.sequential ? 'one after the other' : 'all at once'}; ${options.workers} workers, ` +
      `flow control ${options.maxMessages} messages per subscription; policy ${POLICY}; retry pump every ${options.pumpIntervalMs} ms in a process of its own`,
  );
  const groups = options.sequential ? options.capacities.map((c) => [c]) : [options.capacities];
  const results: GroupResult[] = [];
  for (const group of groups) results.push(await runGroup(group, options, { h, env, rt, receiver, runId }));

  const runSeconds = round((performance.now() - began) / 1000);
  h.endProgress();
  const out: string[] = [
    '',
    `Adaptive rate control: ${options.workers} worker processes (Herald runtimes, HERALD_TIME_SCALE=1) pulling each destination's lane, ` +
      `flow control ${options.maxMessages}/subscription; policy ${POLICY}; ${options.sequential ? 'capacities one after the other' : 'capacities in parallel'}` +
      (options.hangSeconds > 0 ? `; recovery: each receiver first held every request 6 s for ${options.hangSeconds} s (every attempt timed out), then accepted C/s` : ''),
  ];
  const runs = results.flatMap((g) =>
    g.analyses.map((a, j) => ({
      ...a,
      outcomes: g.outcomes[destinationOf(a.capacity)] ?? emptyOutcomes(),
      broughtForward: g.broughtForward[destinationOf(a.capacity)] ?? 0,
      ...(g.recoveries?.[j] ? { recovery: g.recoveries[j] } : {}),
    })),
  );
  for (const r of runs) out.push(formatRun(r, r.outcomes, r.broughtForward, options, r.recovery));
  const summary = runs.map((r) => {
    const { recovery } = r;
    const ratio = recovery ? recoveryMet(recovery) : r.targets.steady.met;
    return [
      `C=${r.capacity}`,
      r.reachSeconds ?? 'never',
      ...(recovery ? [recovery.drainingRatio ?? '—', recovery.drainedSeconds === undefined ? `${recovery.backlogDelivered} of ${recovery.backlog}` : `${recovery.backlog} in ${recovery.drainedSeconds} s`] : [r.steady.ratio]),
      pct(r.steady.throttledShare),
      r.peakAcceptedIn1s,
      r.targets.hottestDoc.meanPerSecond,
      r.targets.hottestDoc.maxIn1s,
      [r.targets.reach.met, ratio, r.targets.throttledShare.met, r.targets.peak.met, r.targets.hottestDoc.meanMet].every(Boolean) ? 'all MET' : 'NOT all met',
    ];
  });
  const hang = options.hangSeconds > 0;
  out.push(
    '',
    `Summary (targets: ≤ 60 s; ≥ 0.9${hang ? ' while the backlog lasted, and all of it delivered' : ''}; ≤ 5 %; ≤ 105; ≤ 1 write/s):`,
    '',
    table(['', 's to 80 %', ...(hang ? ['while backlog ÷ target', 'deferred backlog delivered'] : ['steady ÷ target']), '429 share', 'peak/1 s', 'hottest doc writes/s (mean)', '(most in 1 s)', ''], summary),
  );
  for (const [i, g] of results.entries()) {
    out.push(
      '',
      `Workers${groups.length > 1 ? ` (run ${i + 1})` : ''} and the pump process (last): CPU ${g.workerCpuPercent.join(' / ')} % of a core; event-loop delay p99 / max ${g.workerLoopDelayMs.map((d) => `${d.p99 ?? '—'}/${d.max ?? '—'}`).join(', ')} ms; retry pump ${g.pump ? `${g.pump.rounds} rounds, ${g.pump.due} due, ${g.pump.sent} sent to lanes` : '—'}; ` +
        `bench process (receiver) event-loop delay p99 ${g.benchLoopDelayMs.p99 ?? '—'} ms, max ${g.benchLoopDelayMs.max ?? '—'} ms`,
    );
    for (const p of g.problems) out.push(`  ${p}`);
  }
  out.push('', `Run took ${runSeconds} s.`, '');
  process.stdout.write(`${out.join('\n')}\n`);
  const report = {
    bench: 'rate',
    emulators: { reused: !own, pubsub: emulators.pubsubHost, firestore: emulators.firestoreHost },
    settings: { ...options, policy: POLICY, timeScale: 1, receiver: 'sliding 1 s window' },
    runs: runs.map(({ perSecond, ...r }) => ({ ...r, perSecond })),
    workers: results.map((g) => ({ cpuPercent: g.workerCpuPercent, loopDelayMs: g.workerLoopDelayMs, pump: g.pump, benchLoopDelayMs: g.benchLoopDelayMs, problems: g.problems })),
    runSeconds,
  };
  process.stdout.write(`${JSON.stringify(report)}\n`);
  if (runs.some((r) => r.accepted === 0)) throw new BenchFailure('a destination received no delivery at all');
  return 0;
}
