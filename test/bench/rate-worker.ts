/**
 * One delivering worker of `npm run bench -- rate`: a Herald runtime (createRuntime with the
 * emulators' environment the bench passes) that pulls from the destinations' lane topics
 * through shared pull subscriptions (competing consumers: Pub/Sub hands each message to one
 * worker) and runs Herald's `deliverPush` on each message, as the `deliver` function does
 * for a push, acking when it returns and nacking when it throws.
 *
 * It logs, for the bench to analyse, without touching Herald's code: each lease of a rate
 * controller document (wrapping the runtime's RateLeaseStore instance, which its
 * DeliveryLimiter calls), each success-rate counter document write (FirestoreCounterStore's
 * prototype: the runtime's DestinationCounters keep their store private) and each delivery record
 * write (the runtime's DeliveryStore instance), and when each HTTP attempt started (the
 * runtime's HttpSender instance): Herald's own pacing, apart from the receiver's clock.
 */
import { appendFileSync, writeFileSync } from 'node:fs';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { FirestoreCounterStore } from '../../shared/adapters/firestore/counters';
import { DeliverOutcome } from '../../shared/app/delivery/deliver';
import { runPump } from '../../shared/app/retry/pump';
import { loadConfig } from '../../shared/config';
import { createLogger } from '../../shared/log';
import { createRuntime, pumpDeps, Runtime } from '../../shared/runtime/runtime';
import { deliverDeps } from '../../shared/runtime/delivery-deps';
import { consumeLane, LaneConsumer } from './lane-pull';
import { DocWrite, emptyOutcomes, LeaseLog, OutcomeCounts, ParentMessage, WorkerMessage, WorkerReport, WorkerStart, WorkerStatus } from './rate-protocol';

const WORKER = Number(process.env.BENCH_WORKER ?? 0);
const now = () => performance.timeOrigin + performance.now();
const send = (message: WorkerMessage, then?: () => void) => (process.send ? process.send(message, undefined, {}, () => then?.()) : then?.());

const outcomes: Record<string, OutcomeCounts> = {};
const leases: LeaseLog[] = [];
const counterWrites: DocWrite[] = [];
const recordWrites: DocWrite[] = [];
const attemptStarts: DocWrite[] = [];
const logs = { warnings: 0, errors: 0, firstErrors: [] as string[] };
const firstFailures: string[] = [];
let leaseErrors = 0;
let consumers: LaneConsumer[] = [];
const pump = { rounds: 0, due: 0, sent: 0 };
const broughtForward: Record<string, number> = {};
const loopDelay = monitorEventLoopDelay({ resolution: 10 });
let runsPump = false;

const outcomesOf = (destinationId: string) => (outcomes[destinationId] ??= emptyOutcomes());

function count(destinationId: string, outcome: DeliverOutcome): void {
  const o = outcomesOf(destinationId);
  if (outcome.kind === 'attempted') o.attempted[outcome.decision] = (o.attempted[outcome.decision] ?? 0) + 1;
  else o[outcome.kind]++;
}

/** Herald's own logger: counts warnings and errors, keeps the first errors; BENCH_HERALD_LOG=path appends its lines to path-<worker>. */
function countingLogger() {
  const file = process.env.BENCH_HERALD_LOG;
  return createLogger({
    level: 'INFO',
    write: (line) => {
      if (file) appendFileSync(`${file}-${WORKER}`, `${line}\n`);
      const severity = /^\{"severity":"(\w+)"/.exec(line)?.[1];
      if (severity === 'WARNING') logs.warnings++;
      if (severity === 'ERROR') {
        logs.errors++;
        if (logs.firstErrors.length < 5) logs.firstErrors.push(line.slice(0, 400));
      }
    },
  });
}

function instrument(rt: Runtime): void {
  const store = rt.rateLeases;
  const lease = store.lease.bind(store);
  store.lease = async (destinationId, request) => {
    const asked = now();
    try {
      const granted = await lease(destinationId, request);
      const at = now();
      leases.push({ destinationId, at, tookMs: Math.round(at - asked), backlog: request.backlog, rate: granted.rate, holders: granted.grids.at(-1)?.holders.length ?? 0, spanMs: granted.spanMs });
      return granted;
    } catch (e) {
      leaseErrors++;
      throw e;
    }
  };
  const add = FirestoreCounterStore.prototype.add;
  FirestoreCounterStore.prototype.add = async function (this: FirestoreCounterStore, deltas, shard) {
    await add.call(this, deltas, shard);
    const at = now();
    for (const d of deltas) counterWrites.push({ doc: `${d.destinationId}~${d.bucketStart}~${shard}`, at });
  };
  const { http } = rt;
  const sendHttp = http.send.bind(http);
  http.send = (request) => {
    attemptStarts.push({ doc: new URL(request.url).pathname, at: now() });
    return sendHttp(request);
  };
  const { deliveries } = rt;
  const create = deliveries.create.bind(deliveries);
  deliveries.create = async (record) => {
    const created = await create(record);
    if (created) recordWrites.push({ doc: record.id, at: now() });
    return created;
  };
  const rateDeferred = deliveries.rateDeferred.bind(deliveries);
  deliveries.rateDeferred = async (destinationId, limit) => {
    const ids = await rateDeferred(destinationId, limit);
    broughtForward[destinationId] = (broughtForward[destinationId] ?? 0) + ids.length;
    return ids;
  };
  const update = deliveries.update.bind(deliveries);
  deliveries.update = async (id, decide) => {
    const written = await update(id, decide);
    if (written) recordWrites.push({ doc: id, at: now() });
    return written;
  };
}

function status(rt: Runtime): Omit<WorkerStatus, 'type'> {
  const rates: Record<string, number> = {};
  for (const id of Object.keys(outcomes)) {
    const r = rt.limiter.rateOf(id);
    if (r !== undefined) rates[id] = r;
  }
  return { worker: WORKER, outcomes: structuredClone(outcomes), inFlight: consumers.reduce((n, c) => n + c.inFlight(), 0), rates, broughtForward: { ...broughtForward }, ...(runsPump ? { pump: { ...pump } } : {}) };
}

function consume(rt: Runtime, start: WorkerStart): { stop(): Promise<void> } {
  const deps = deliverDeps(rt);
  loopDelay.enable();
  consumers = start.subscriptions.map((name) =>
    consumeLane(rt.pubsub, name, start.maxMessages, deps, {
      onOutcome: count,
      onFailure: (destinationId, e) => {
        if (destinationId !== '?') outcomesOf(destinationId).errors++;
        if (firstFailures.length < 5) firstFailures.push(e.message);
      },
    }),
  );
  let pumpLoop: ReturnType<typeof runPump> | undefined;
  if (start.pumpIntervalMs !== undefined) {
    runsPump = true;
    pumpLoop = runPump(pumpDeps(rt), {
      intervalMs: start.pumpIntervalMs,
      onRound: (r) => {
        pump.rounds++;
        pump.due += r.due;
        pump.sent += r.sent;
      },
    });
  }
  return {
    async stop() {
      await Promise.allSettled([...consumers.map((c) => c.close()), pumpLoop?.stop()]);
    },
  };
}

async function main(): Promise<void> {
  if (!process.env.PUBSUB_EMULATOR_HOST || !process.env.FIRESTORE_EMULATOR_HOST) throw new Error('PUBSUB_EMULATOR_HOST and FIRESTORE_EMULATOR_HOST must name running emulators');
  const rt = createRuntime(loadConfig(process.env), { log: countingLogger() });
  instrument(rt);
  let consumer: { stop(): Promise<void> } | undefined;
  process.on('message', (m: ParentMessage) => {
    if (m.type === 'start') consumer = consume(rt, m);
    else if (m.type === 'status') send({ type: 'status', ...status(rt) });
    else if (m.type === 'stop') {
      // BENCH_DUMP=path: this worker's raw lease and attempt logs, for a closer look.
      if (process.env.BENCH_DUMP) writeFileSync(`${process.env.BENCH_DUMP}-${WORKER}.json`, JSON.stringify({ leases, attemptStarts }));
      // Stop pulling and report at once: what is still in flight comes after the measured window.
      const report: WorkerReport = {
        type: 'report',
        ...status(rt),
        leases,
        leaseErrors,
        counterWrites,
        recordWrites,
        attemptStarts,
        logs,
        firstFailures,
        cpuMicros: (({ user, system }) => user + system)(process.cpuUsage()),
        uptimeMs: process.uptime() * 1000,
        loopDelayMs: { p99: Math.round(loopDelay.percentile(99) / 1e6), max: Math.round(loopDelay.max / 1e6) },
      };
      void Promise.race([consumer?.stop(), new Promise((r) => setTimeout(r, 3000))]).finally(() => send(report, () => process.exit(0)));
    }
  });
  process.on('disconnect', () => process.exit(0));
  process.on('SIGINT', () => undefined); // The bench handles Ctrl-C and says stop.
  send({ type: 'ready', worker: WORKER });
}

main().catch((e: unknown) => {
  send({ type: 'failed', message: e instanceof Error ? (e.stack ?? e.message) : String(e) }, () => process.exit(1));
});
