/**
 * `npm run bench -- isolation`: does a destination that times out on every request slow a
 * healthy one down? (issue 5)
 *
 * Herald's local stack in this process (functions on one HTTP server, the emulators' push
 * subscriptions calling it, the retry pump in-process), project herald-bench-isolation, and a
 * loopback receiver with two destinations: A answers only after 6 s (Herald's attempt timeout
 * is 5 s: every attempt times out), B answers 204 at once. B's policy is event-platform; A's
 * eventarc by default (every failure retried from 10 s on, never suspended for its success
 * rate: A keeps timing out all run long; event-platform would suspend it after 50 attempts).
 * Events go in through POST /ingest, one per request, paced.
 *
 * Priming, unmeasured: a throwaway destination W times out as A will, beside B's events,
 * then W and its deliveries are deleted. Without it phase 2 was the first to run a failing
 * destination's code (timeouts, the pump's claims, retries through the lane), and paid the
 * JIT compilation of it in the emulators' JVMs (their compiler threads took 10-30 % of a
 * core in bursts) and in Node, which no baseline phase paid.
 *
 * Each phase: A's events first for a few seconds (phases 1 and 2), warm-up events to B
 * (unmeasured: lanes, connections and B's rate controller past its slow start), then N
 * events to B at R/s: B's publish-to-receipt latency (POST /ingest sent → the receiver has
 * the request).
 *   Phase 0: B and nothing else.
 *   Phases 1a and 1b: B, beside A's events at R/s with no destination A — "without A". A's
 *   events go through ingest and routing all the same, so that phase 2 differs from them by
 *   destination A alone (sending them only in phase 2 measured A's producer's traffic on
 *   this one machine, not A). The two runs' difference is the noise the target is read
 *   against; phase 0 against them shows what the extra traffic costs.
 *   Phase 2: A registered, timing out on every request — "with A".
 * Target: B's p99 with A within 10 % of B's p99 alone (1a and 1b pooled), printed with the
 * interval chance alone moves that ratio in (a block bootstrap over whole seconds).
 * --a-healthy is the control: A answers at once, so phase 2 shows A's deliveries' cost.
 *
 * The emulator pushes a lane with only a couple of requests in flight per subscription, so
 * A's lane, pushed, holds at most two 5 s attempts at a time. With --a-pull N, A's push
 * subscription is replaced by a pull consumer in Herald's process that runs deliverPush
 * on up to N messages at once, as Pub/Sub push on GCP would once its window has grown: A then
 * keeps many attempts (and rate-slot waits) in flight beside B's.
 */
import { randomBytes } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { createLogger } from '../../shared/log';
import { COLLECTIONS } from '../../shared/firestore-schema';
import { deliverDeps } from '../../shared/runtime/delivery-deps';
import { DEFAULT_LANE_SHARDS, laneTopology, shardOf } from '../../shared/topology';
import { LocalStack, startLocalStack } from '../../apps/local/stack';
import { ingestSender } from './cost';
import { BenchFailure, BenchHarness, intOption, mark } from './harness';
import { clearFirestore, purgeProject } from './housekeeping';
import { Interrupted, Send, sleep } from './load';
import { consumeLane, LaneConsumer } from './lane-pull';
import { Behaviour, ScriptedReceiver } from './scripted-receiver';
import { bootstrapRatio, distribution, Distribution, round, table } from './stats';

export const ISOLATION_PROJECT = 'herald-bench-isolation';
const A = { id: 'iso-a', path: '/iso-a', type: 'com.example.bench.isolation.a' } as const;
/**
 * B and W share A's first-attempt lane (destinations share lanes: topology.ts), the hardest
 * case for isolation: ids picked for it with the default shard count.
 */
const onShardOfA = (stem: string): string => {
  for (let n = 0; ; n++) if (shardOf(`${stem}-${n}`, DEFAULT_LANE_SHARDS) === shardOf(A.id, DEFAULT_LANE_SHARDS)) return `${stem}-${n}`;
};
const B = { id: onShardOfA('iso-b'), path: '/iso-b', type: 'com.example.bench.isolation.b' } as const;
/** The priming stage's throwaway destination: times out as A does, deleted before phase 0. */
const W = { id: onShardOfA('iso-w'), path: '/iso-w', type: 'com.example.bench.isolation.w' } as const;
/** A's receiver answers after this long: past Herald's 5 s attempt timeout. */
const A_DELAY_MS = 6000;
const MAX_IN_FLIGHT = 64;
/** The issue's target: B's p99 with A at most this much above B's p99 alone. */
export const ISOLATION_TARGET = 0.1;

export const ISOLATION_HELP = `Usage: npm run bench -- isolation [options]

Destination A times out on every request (its receiver answers after ${A_DELAY_MS / 1000} s; Herald's
attempt timeout is 5 s); B answers 204 at once. B's publish-to-receipt latency, alone and with A.
  --events N        measured events to B per phase (BENCH_ISOLATION_EVENTS; 1200: a p99 of 300 moves by
                    half between two identical phases, one stall decides it)
  --rate R          events/s to each destination, paced (BENCH_ISOLATION_RATE; 20)
  --warmup N        unmeasured events to B first (BENCH_ISOLATION_WARMUP; 60)
  --lead S          seconds A's events run before B's in phase 2 (BENCH_ISOLATION_LEAD; 5)
  --stall-timeout S give up when nothing arrives for S seconds (BENCH_STALL_TIMEOUT; 30)
  --prime S         before phase 0, S seconds of a throwaway destination W that times out as A does
                    (and is pulled as A is, with --a-pull), beside B's events; then W and its
                    deliveries are deleted (BENCH_ISOLATION_PRIME; 40; 0 = none). Phase 2 is the first to run the code of a failing destination (timeouts,
                    the retry pump's claims, retries through the lane): without priming it pays the
                    emulators' and Node's JIT compilation of it, which phases 0-1b never did
  --a-pull N        replace A's push subscription by a pull consumer in Herald's process holding up
                    to N messages (deliverPush on each, as the deliver function does): A then has
                    up to N attempts in flight, as Pub/Sub push allows on GCP, where the emulator's push
                    keeps only a couple in flight per subscription (BENCH_ISOLATION_A_PULL; 0 = push)
  --a-healthy       a control run: A answers 204 at once (BENCH_ISOLATION_A_HEALTHY=true), so phase 2
                    measures what A's deliveries cost B when none fails
  --a-policy P      A's delivery policy (BENCH_ISOLATION_A_POLICY; eventarc: every timeout retried from
                    10 s on, and no threshold suspension, so A keeps timing out for the whole run;
                    event-platform would suspend A after 50 failed attempts). B: event-platform.
Herald's own log lines (INFO and up; DEBUG with BENCH_HERALD_LOG_LEVEL=DEBUG) are appended to the file
BENCH_HERALD_LOG names, if set. BENCH_DUMP=path appends each phase's raw times (B's events sent and
arrived, A's requests) to that file.

Reuses the emulators named by PUBSUB_EMULATOR_HOST / FIRESTORE_EMULATOR_HOST, else starts its own.`;

interface IsolationOptions {
  /** A's delivery policy (a preset name). */
  aPolicy: string;
  /** A control run: A answers 204 at once, so phase 2 shows A's load without its failures. */
  aHealthy: boolean;
  events: number;
  aPull: number;
  rate: number;
  warmup: number;
  leadSeconds: number;
  stallMs: number;
  primeSeconds: number;
}

function parseIsolationOptions(argv: string[]): IsolationOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      events: { type: 'string' },
      rate: { type: 'string' },
      warmup: { type: 'string' },
      lead: { type: 'string' },
      'stall-timeout': { type: 'string' },
      prime: { type: 'string' },
      'a-pull': { type: 'string' },
      'a-policy': { type: 'string' },
      'a-healthy': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(`${ISOLATION_HELP}\n`);
    process.exit(0);
  }
  return {
    aPolicy: values['a-policy'] ?? process.env.BENCH_ISOLATION_A_POLICY ?? 'eventarc',
    aHealthy: values['a-healthy'] ?? process.env.BENCH_ISOLATION_A_HEALTHY === 'true',
    events: intOption('events', values.events, 'BENCH_ISOLATION_EVENTS', 1200, 1),
    aPull: intOption('a-pull', values['a-pull'], 'BENCH_ISOLATION_A_PULL', 0, 0),
    rate: intOption('rate', values.rate, 'BENCH_ISOLATION_RATE', 20, 1),
    warmup: intOption('warmup', values.warmup, 'BENCH_ISOLATION_WARMUP', 60, 0),
    leadSeconds: intOption('lead', values.lead, 'BENCH_ISOLATION_LEAD', 5, 0),
    stallMs: intOption('stall-timeout', values['stall-timeout'], 'BENCH_STALL_TIMEOUT', 30, 1) * 1000,
    primeSeconds: intOption('prime', values.prime, 'BENCH_ISOLATION_PRIME', 40, 0),
  };
}

/** A paced stream of single-event POST /ingest requests: event i is sent at t0 + i/rate. */
class PacedStream {
  readonly sent = new Map<string, number>();
  readonly ingestMs: number[] = [];
  errors = 0;
  firstError?: string;
  maxBehindMs = 0;
  private stopped = false;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly send: Send,
    private readonly rate: number,
  ) {}

  /** Sends `ids` (or, with `forever`, ids from `idFor` until stopped); resolves when the last is sent. */
  async run(idFor: (i: number) => string, count: number, signal: AbortSignal): Promise<void> {
    const interval = 1000 / this.rate;
    const t0 = performance.now();
    for (let i = 0; i < count && !this.stopped; ) {
      if (signal.aborted) throw new Interrupted('interrupted');
      const now = performance.now();
      const due = Math.min(count, Math.floor((now - t0) / interval) + 1);
      while (i < due && this.inFlight.size < MAX_IN_FLIGHT && !this.stopped) {
        this.maxBehindMs = Math.max(this.maxBehindMs, now - (t0 + i * interval));
        const id = idFor(i++);
        const at = performance.now();
        this.sent.set(id, at);
        const p: Promise<void> = this.send([id]).then(
          () => void this.ingestMs.push(performance.now() - at),
          (e: unknown) => {
            this.errors++;
            this.firstError ??= (e as Error).message;
          },
        );
        this.inFlight.add(p);
        void p.finally(() => this.inFlight.delete(p));
      }
      if (i < count) await sleep(Math.max(1, t0 + i * interval - performance.now()), signal);
    }
    await Promise.all(this.inFlight);
  }

  stop(): void {
    this.stopped = true;
  }
}

interface PhaseResult {
  name: string;
  events: number;
  delivered: number;
  latencies: number[];
  latencyMs: Distribution;
  ingestMs: Distribution;
  sendErrors: number;
  maxBehindMs?: number;
  duplicates: number;
  /** Phase 2: A's side. */
  a?: { sent: number; requests: number; peakInFlight?: number; outcomes?: Record<string, number> };
  /** This process's event-loop delay during the phase (Herald, the receiver and the sender share it), ms. */
  loopDelayMs?: { p99?: number; max?: number };
  problem?: string;
}

/** Deletes a destination's delivery records (the priming stage's W: its retries must not run on into the phases). */
async function deleteDeliveriesOf(stack: LocalStack, destinationId: string): Promise<void> {
  const db = stack.runtime.firestore;
  const { docs } = await db.collection(COLLECTIONS.deliveries).where('destinationId', '==', destinationId).get();
  const writer = db.bulkWriter();
  for (const d of docs) void writer.delete(d.ref);
  await writer.close();
}

/** Waits until every id in `sent` arrived at `path` (or nothing new came for stallMs); returns the latencies. */
async function arrivals(receiver: ScriptedReceiver, path: string, sent: Map<string, number>, options: { stallMs: number; signal: AbortSignal; progress: (l: string) => void; label: string }): Promise<{ latencies: number[]; firstArrival: ReadonlyMap<string, number>; duplicates: number; problem?: string }> {
  let seen = -1;
  let lastChange = performance.now();
  for (;;) {
    const got = new Set(receiver.log(path).filter((r) => r.id !== undefined && sent.has(r.id)).map((r) => r.id!));
    if (got.size !== seen) lastChange = performance.now();
    seen = got.size;
    options.progress(`${options.label}: ${got.size}/${sent.size} arrived`);
    if (got.size >= sent.size) break;
    if (performance.now() - lastChange > options.stallMs) {
      return { latencies: [], firstArrival: new Map(), duplicates: 0, problem: `stalled: ${got.size}/${sent.size} arrived, nothing new for ${options.stallMs / 1000} s` };
    }
    await sleep(200, options.signal);
  }
  const first = new Map<string, number>();
  let duplicates = 0;
  for (const r of receiver.log(path)) {
    if (r.id === undefined || !sent.has(r.id)) continue;
    if (first.has(r.id)) duplicates++;
    else first.set(r.id, r.at);
  }
  // In send order: the bootstrap draws whole seconds of them.
  return { latencies: [...sent].filter(([id]) => first.has(id)).map(([id, at]) => first.get(id)! - at), firstArrival: first, duplicates };
}

export async function runIsolationBench(argv: string[], h: BenchHarness): Promise<number> {
  const options = parseIsolationOptions(argv);
  const began = performance.now();
  const runId = randomBytes(4).toString('hex');
  const emulators = await h.emulators();
  const own = emulators.started.pubsub || emulators.started.firestore;
  if (!own) await h.guard(Promise.all([purgeProject(ISOLATION_PROJECT), clearFirestore(emulators, ISOLATION_PROJECT)]));

  const receiver = await new ScriptedReceiver().start();
  h.addCleanup('stopping the receiver', () => receiver.stop());
  const logs = { warnings: 0, errors: 0, firstErrors: [] as string[] };
  const heraldLog = process.env.BENCH_HERALD_LOG;
  const heraldLevel = process.env.BENCH_HERALD_LOG_LEVEL === 'DEBUG' ? 'DEBUG' : 'INFO';
  h.note(`starting Herald (local stack)${heraldLog ? `; its log lines go to ${heraldLog}` : ''}`);
  const stack: LocalStack = await h.guard(
    startLocalStack({
      port: 0,
      emulators: { pubsubHost: emulators.pubsubHost, firestoreHost: emulators.firestoreHost },
      env: { ...process.env, HERALD_PROJECT_ID: ISOLATION_PROJECT, HERALD_ALLOW_LOOPBACK: 'true', HERALD_LOG_LEVEL: heraldLevel, HERALD_TIME_SCALE: '1' },
      log: createLogger({
        level: heraldLevel,
        write: (line) => {
          if (heraldLog) appendFileSync(heraldLog, `${line}\n`);
          const severity = /^\{"severity":"(\w+)"/.exec(line)?.[1];
          if (severity === 'WARNING') logs.warnings++;
          if (severity === 'ERROR') {
            logs.errors++;
            if (logs.firstErrors.length < 5) logs.firstErrors.push(line.slice(0, 400));
          }
        },
      }),
      onProgress: () => undefined,
    }),
  );
  h.addCleanup(`stopping Herald and deleting project ${ISOLATION_PROJECT}'s topics, subscriptions and documents`, async () => {
    const alive = h.emulatorsAlive(emulators);
    await stack.stop({ purge: alive });
    if (alive) await clearFirestore(emulators, ISOLATION_PROJECT);
  });
  const aBehaviour: Behaviour = options.aHealthy ? { kind: 'ok' } : { kind: 'slow', delayMs: A_DELAY_MS };
  const admin = async (method: 'PUT' | 'DELETE', id: string, body?: unknown) => {
    const res = await h.guard(
      fetch(`${stack.url}/admin/destinations/${id}`, {
        method,
        headers: { authorization: `Bearer ${stack.config.adminToken}`, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(30_000),
      }),
    );
    if (![200, 201, 204].includes(res.status)) throw new Error(`${method} /admin/destinations/${id} answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
  };
  const register = async (d: typeof A | typeof B | typeof W) => {
    const behaviour: Behaviour = d === A ? aBehaviour : d === W ? { kind: 'slow', delayMs: A_DELAY_MS } : { kind: 'ok' };
    receiver.route(d.path, behaviour);
    // A pulled destination needs a lane of its own to pull from.
    const lane = d !== B && options.aPull > 0 ? { lane: 'dedicated' } : {};
    await admin('PUT', d.id, { url: `${receiver.url}${d.path}`, eventTypes: [d.type], policy: d === B ? 'event-platform' : options.aPolicy, ...lane });
  };
  await register(B);
  // A's path answers (slowly) from the start; A itself is registered only before phase 2.
  receiver.route(A.path, aBehaviour);
  let aConsumer: LaneConsumer | undefined;
  const aOutcomes: Record<string, number> = {};
  /** Replaces a destination's push subscription by a pull consumer in this process holding up to --a-pull messages. */
  // A pulled lane's deliveries wait for a turn, then for their receiver: let them end before what follows.
  const pulledDrainMs = deliverDeps(stack.runtime).maxRateWaitMs + stack.config.deliveryTimeoutMs + 1000;
  const pullLane = async (id: string, hooks: Parameters<typeof consumeLane>[4] = {}) => {
    const rt = stack.runtime;
    const lane = laneTopology(id, rt.names);
    await h.guard(rt.pubsub.subscription(lane.subscription.name).delete());
    const [sub] = await h.guard(rt.pubsub.topic(lane.topic.name).createSubscription(`${lane.topic.name}-bench-pull`, { ackDeadlineSeconds: 60 }));
    return { consumer: consumeLane(rt.pubsub, sub.name, options.aPull, deliverDeps(rt), hooks), subscription: sub };
  };
  const registerA = async () => {
    await register(A);
    if (options.aPull === 0) return;
    const { consumer } = await pullLane(A.id, {
      onOutcome: (_, o) => void (aOutcomes[o.kind] = (aOutcomes[o.kind] ?? 0) + 1),
      onFailure: () => void (aOutcomes.error = (aOutcomes.error ?? 0) + 1),
    });
    aConsumer = consumer;
    // Its deliveries may each wait a turn and an attempt: longer than a cleanup step's usual limit.
    h.addCleanup("closing A's pull consumer", () => consumer.close(pulledDrainMs), pulledDrainMs + 1000);
  };
  const ingest = `${stack.url}/ingest`;
  const sendB = ingestSender(ingest, stack.config.ingestToken, B.type);
  const sendA = ingestSender(ingest, stack.config.ingestToken, A.type);
  const idFor = (label: string) => (i: number) => `${runId}-${label}-${i}`;
  const wait = (label: string, path: string, sent: Map<string, number>) => arrivals(receiver, path, sent, { stallMs: options.stallMs, signal: h.signal, progress: h.progress, label });
  h.note(`isolation: ${options.events} events to B per phase at ${options.rate}/s (after ${options.warmup} warm-up events); phase 2 adds A at ${options.rate}/s from ${options.leadSeconds} s before`);

  const phase = async (name: string, tag: string, aTraffic: boolean): Promise<PhaseResult> => {
    let a: PacedStream | undefined;
    let aRun: Promise<void> | undefined;
    const aFrom = receiver.log(A.path).length;
    const outcomesFrom = { ...aOutcomes };
    const loop = monitorEventLoopDelay({ resolution: 10 });
    loop.enable();
    if (aTraffic) {
      a = new PacedStream(sendA, options.rate);
      aRun = a.run(idFor(`${tag}-a`), Number.MAX_SAFE_INTEGER, h.signal);
      h.progress(`${name}: A's events alone for ${options.leadSeconds} s`);
      await sleep(options.leadSeconds * 1000, h.signal);
    }
    try {
      if (options.warmup > 0) {
        const warm = new PacedStream(sendB, options.rate);
        await warm.run(idFor(`${tag}-warm`), options.warmup, h.signal);
        const w = await wait(`${name}: B warm-up`, B.path, warm.sent);
        if (w.problem) throw new BenchFailure(`${name}: B's warm-up ${w.problem}`);
      }
      const b = new PacedStream(sendB, options.rate);
      await b.run(idFor(`${tag}-b`), options.events, h.signal);
      const got = await wait(`${name}: B`, B.path, b.sent);
      h.progress(`${name}: B ${got.latencies.length}/${options.events} arrived${got.problem ? ` — ${got.problem}` : ''}`, true);
      const aLog = receiver.log(A.path).slice(aFrom);
      // BENCH_DUMP=path: each of B's events (sent, arrived; ms on this process's clock) and A's requests, for a closer look.
      if (process.env.BENCH_DUMP) {
        const events = [...b.sent].map(([id, at]) => [round(at), round(got.firstArrival.get(id) ?? Number.NaN)]);
        appendFileSync(process.env.BENCH_DUMP, `${JSON.stringify({ phase: name, timeOrigin: performance.timeOrigin, events, aRequests: aLog.map((r) => round(r.at)) })}\n`);
      }
      return {
        name,
        events: options.events,
        delivered: got.latencies.length,
        latencies: got.latencies,
        latencyMs: distribution(got.latencies),
        ingestMs: distribution(b.ingestMs),
        sendErrors: b.errors,
        maxBehindMs: round(b.maxBehindMs),
        loopDelayMs: { p99: round(loop.percentile(99) / 1e6), max: round(loop.max / 1e6) },
        duplicates: got.duplicates,
        ...(a
          ? {
              a: {
                sent: a.sent.size,
                requests: aLog.length,
                ...(aConsumer ? { peakInFlight: aConsumer.peakInFlight(), outcomes: Object.fromEntries(Object.entries(aOutcomes).map(([k, v]) => [k, v - (outcomesFrom[k] ?? 0)])) } : {}),
              },
            }
          : {}),
        ...(got.problem ? { problem: got.problem } : b.errors ? { problem: `${b.errors} POST /ingest failed: ${b.firstError}` } : {}),
      };
    } finally {
      loop.disable();
      a?.stop();
      await aRun;
    }
  };

  // Priming (unmeasured): W times out as A will, beside B's events, so that the code of a
  // failing destination has run (and been compiled, in the emulators' JVMs and in Node)
  // before anything is measured; then W goes, with its lane and its deliveries.
  if (options.primeSeconds > 0) {
    h.progress(`priming: a destination timing out, beside B, for ${options.primeSeconds} s`);
    await register(W);
    const pulled = options.aPull > 0 ? await pullLane(W.id) : undefined;
    const w = new PacedStream(ingestSender(ingest, stack.config.ingestToken, W.type), options.rate);
    const b = new PacedStream(sendB, options.rate);
    const count = options.primeSeconds * options.rate;
    await Promise.all([w.run(idFor('prime-w'), count, h.signal), b.run(idFor('prime-b'), count, h.signal)]);
    if (pulled) {
      await pulled.consumer.close(pulledDrainMs);
      await h.guard(pulled.subscription.delete());
    }
    // Its deliveries still to send become DEAD (a plain DELETE refuses while there are any).
    await admin('DELETE', `${W.id}?deliveries=dead`);
    // Attempts under way end (the attempt timeout), then W's records go.
    await sleep(stack.config.deliveryTimeoutMs + 1000, h.signal);
    await h.guard(deleteDeliveriesOf(stack, W.id));
    // W's own warnings and errors (its timeouts; its records abandoned once it was deleted) are not the phases'.
    Object.assign(logs, { warnings: 0, errors: 0, firstErrors: [] });
    h.progress('priming done', true);
  }

  // Phase 0: nothing but B. Phases 1a and 1b: A's events too, but no destination A — the
  // same ingest and routing as phase 2, so that phase 2 differs only by A being there. Two of
  // them: their difference is the noise the 10 % target has to be read against.
  const quiet = await phase('phase 0 (B, no other traffic)', 'p0', false);
  const alone1 = await phase("phase 1a (B alone; A's events, no destination A)", 'p1a', true);
  const alone2 = await phase('phase 1b (the same again)', 'p1b', true);
  await registerA();
  const withA = await phase('phase 2 (B with A registered and timing out)', 'p2', true);
  const alone: PhaseResult = {
    name: 'B alone (1a and 1b together)',
    events: alone1.events + alone2.events,
    delivered: alone1.delivered + alone2.delivered,
    latencies: [...alone1.latencies, ...alone2.latencies],
    latencyMs: distribution([...alone1.latencies, ...alone2.latencies]),
    ingestMs: distribution([]),
    sendErrors: alone1.sendErrors + alone2.sendErrors,
    duplicates: alone1.duplicates + alone2.duplicates,
  };
  const ratioOf = (k: keyof Distribution, a: PhaseResult, b: PhaseResult) => {
    const x = a.latencyMs[k];
    const y = b.latencyMs[k];
    return x !== undefined && y ? round(x / y, 3) : undefined;
  };
  const ratioP99 = ratioOf('p99', withA, alone);
  const ratioP50 = ratioOf('p50', withA, alone);
  const noiseP99 = ratioOf('p99', alone2, alone1);
  const trafficP99 = ratioOf('p99', alone, quiet);
  const interval = bootstrapRatio(withA.latencies, alone.latencies, 99, { block: options.rate });
  const met = ratioP99 !== undefined && ratioP99 <= 1 + ISOLATION_TARGET;
  const runSeconds = round((performance.now() - began) / 1000);
  const measured = [quiet, alone1, alone2, withA];

  h.endProgress();
  const phases = [quiet, alone1, alone2, alone, withA];
  const col = (f: (p: PhaseResult) => unknown) => phases.map(f);
  const onlyWithA = (v: unknown) => [undefined, undefined, undefined, undefined, v, undefined];
  const rows: unknown[][] = [
    ['B delivered', ...col((p) => `${p.delivered}/${p.events}`), undefined],
    ...(['p50', 'p90', 'p99', 'max', 'mean'] as const).map((k) => [`B latency ${k}, ms`, ...col((p) => p.latencyMs[k]), k === 'max' || k === 'mean' ? undefined : ratioOf(k, withA, alone)]),
    ['POST /ingest p50 / p99, ms', ...col((p) => (p === alone ? undefined : `${p.ingestMs.p50 ?? '—'} / ${p.ingestMs.p99 ?? '—'}`)), undefined],
    ['sender furthest behind its pace, ms', ...col((p) => p.maxBehindMs), undefined],
    ['event-loop delay p99 / max, ms (Herald, receiver and sender share the process)', ...col((p) => (p.loopDelayMs ? `${p.loopDelayMs.p99 ?? '—'} / ${p.loopDelayMs.max ?? '—'}` : undefined)), undefined],
    ['B duplicates', ...col((p) => p.duplicates), undefined],
    ["A's events sent / requests A's receiver got", ...col((p) => (p.a ? `${p.a.sent} / ${p.a.requests}` : undefined)), undefined],
    ...(withA.a?.peakInFlight !== undefined ? [["A: most lane messages in Herald's hands at once (pulled)", ...onlyWithA(withA.a.peakInFlight)]] : []),
    ...(withA.a?.outcomes ? [['A: deliverPush outcomes (pulled)', ...onlyWithA(Object.entries(withA.a.outcomes).map(([k, v]) => `${k} ${v}`).join(', '))]] : []),
  ];
  const out = [
    '',
    `Isolation: B (204 at once) with no other traffic (0); beside A's events with no destination A (1a, 1b); beside A registered, ${options.aHealthy ? 'answering 204 at once (--a-healthy: a control run)' : `answering after ${A_DELAY_MS / 1000} s`}`,
    `  ${options.aHealthy ? '' : '(Herald times out at 5 s) '}(2). ${options.rate} events/s to each, paced, one per POST /ingest; ${options.events} measured events to B per phase after ${options.warmup} warm-up;`,
    "  latency = POST /ingest sent → receiver has the request; Herald's local stack in this process;",
    `  primed with ${options.primeSeconds} s of a destination timing out (deleted before phase 0); A's policy ${options.aPolicy}, B's event-platform; A's lane ${options.aPull > 0 ? `pulled in Herald's process, up to ${options.aPull} messages at once` : "pushed by the emulator (Herald's own push subscription)"}`,
    '',
    table(['', 'B, quiet (0)', 'B alone (1a)', 'B alone (1b)', 'B alone (1a+1b)', 'B with A (2)', '2 ÷ (1a+1b)'], rows),
    '',
    `Target: B's p99 with A within ${ISOLATION_TARGET * 100} % of B alone: ${alone.latencyMs.p99 ?? '—'} → ${withA.latencyMs.p99 ?? '—'} ms (×${ratioP99 ?? '—'}) — ${mark(met)}`,
    `  (chance alone moves this ratio between ${interval?.low ?? '—'} and ${interval?.high ?? '—'}: 90 % of ratios of whole seconds of each phase resampled;`,
    `   B alone twice: p99 1b ÷ 1a = ${noiseP99 ?? '—'}, the run-to-run noise of this p99;`,
    `   A's events, routed to no one, against none: p99 (1a+1b) ÷ 0 = ${trafficP99 ?? '—'}, the cost of the extra traffic on this one machine)`,
    `Herald logs: ${logs.warnings} warnings, ${logs.errors} errors${logs.firstErrors.length ? `\n  ${logs.firstErrors.join('\n  ')}` : ''}`,
    ...measured.flatMap((p) => (p.problem ? [`INCOMPLETE ${p.name}: ${p.problem}`] : [])),
    '',
    `Run took ${runSeconds} s.`,
    '',
  ];
  process.stdout.write(`${out.join('\n')}\n`);
  const report = {
    bench: 'isolation',
    emulators: { reused: !own, pubsub: emulators.pubsubHost, firestore: emulators.firestoreHost },
    settings: { ...options, aDelayMs: A_DELAY_MS, attemptTimeoutMs: stack.config.deliveryTimeoutMs, bPolicy: 'event-platform' },
    phases: measured.map(({ latencies: _, ...p }) => p),
    alone: { events: alone.events, delivered: alone.delivered, latencyMs: alone.latencyMs },
    ratio: { p50: ratioP50, p99: ratioP99, p99Interval: interval, noiseP99, trafficP99 },
    target: { limit: 1 + ISOLATION_TARGET, measured: ratioP99, met },
    logs,
    runSeconds,
  };
  process.stdout.write(`${JSON.stringify(report)}\n`);
  return measured.some((p) => p.problem) ? 1 : 0;
}
