/**
 * The cost phase's Herald: a local stack in a process of its own (forked by cost.ts), so that
 * process.cpuUsage() here is Herald's alone — the receiver and the load generator stay in the
 * bench process. It counts, without touching Herald's code:
 *   - Firestore reads, writes and deletes by collection as billed, from a meter on the
 *     Firestore client's RPCs (firestore-meter.ts), and as the stores count them themselves
 *     (the adapter's OperationCounter, runtime.firestoreOps);
 *   - retry pump rounds, by wrapping deliveries.due (each round is two queries);
 *   - success-rate counter writes, each with its document id and time, by wrapping
 *     FirestoreCounterStore.prototype.add (the runtime's DestinationCounters keep their store private, so
 *     the class is the seam); they are in the Firestore writes too. What asked for each flush
 *     (the timer, a delivery's flushIfDue, the suspension check) comes from wrapping
 *     runtime.counters.flush and reading its caller off the stack;
 *   - function invocations and their wall time, from a listener on the stack's HTTP server
 *     (every push to /route and /deliver and every /ingest request goes through it);
 *   - messages published and their bytes, by wrapping the runtime's bus;
 *   - delivery records written, by status (to tell when every event is DELIVERED);
 *   - log lines at INFO and above and their bytes, through Herald's own JSON logger;
 *   - the crash backstop: intake journal writes, batches reconciled, the reconciler's empty polls.
 * The parent asks for a snapshot of the counters over IPC and subtracts two of them.
 *
 * Settings come from the environment the parent passes (HERALD_*, *_EMULATOR_HOST).
 */
// A default import would do too; this form makes plain that the real module is patched.
// eslint-disable-next-line @typescript-eslint/no-require-imports
import http = require('node:http');
import { performance } from 'node:perf_hooks';
import { FirestoreCounterStore } from '../../shared/adapters/firestore/counters';
import { DestinationCounters } from '../../shared/app/destinations/destination-counters';
import { createLogger } from '../../shared/log';
import { LocalStack, startLocalStack } from '../../apps/local/stack';
import { Logger } from '../../shared/ports/clock';
import { FUNCTION_NAMES, FunctionName, lanePrefixes } from '../../shared/topology';
import { ChildMessage, COUNTED_STATUSES, CostCounters, FunctionCount, ParentMessage, TOPIC_KINDS, TopicKind } from './cost-counters';
import { messageBytes } from '../../shared/domain/usage/cost-model';
import { CounterWrite } from './counter-writes';
import { FirestoreMeter, meterFirestore } from './firestore-meter';

const send = (message: ChildMessage, then?: () => void) => (process.send ? process.send(message, undefined, {}, () => then?.()) : then?.());

const fnCount = (): FunctionCount => ({ requests: 0, errors: 0, wallMs: 0, soloBilledMs: 0 });
const meter = new FirestoreMeter();
const counters: Omit<CostCounters, 'cpuMicros' | 'firestore' | 'wire'> = {
  pump: { rounds: 0, emptyRounds: 0, found: 0 },
  checks: { runs: 0, idleRuns: 0, active: 0, folded: 0 },
  functions: Object.fromEntries([...FUNCTION_NAMES, 'other'].map((f) => [f, fnCount()])) as CostCounters['functions'],
  published: Object.fromEntries(TOPIC_KINDS.map((k) => [k, { messages: 0, bytes: 0, dataBytes: 0 }])) as CostCounters['published'],
  pulled: { messages: 0, bytes: 0, dataBytes: 0 },
  recorded: Object.fromEntries(COUNTED_STATUSES.map((s) => [s, 0])) as CostCounters['recorded'],
  ownRecords: 0,
  groupedRecords: 0,
  logs: { lines: 0, bytes: 0, warnings: 0, errors: 0 },
  rates: { writes: 0, flushes: 0 },
  backstop: { journalWrites: 0, journalEvents: 0, batchesRemoved: 0, emptyPolls: 0 },
  usage: { meters: 0, meterMicros: 0 },
};
const problems: string[] = [];
/** Every counter document write, in the order the flushes completed: entry i is the (i+1)th counted write. */
const counterLog: CounterWrite[] = [];
/** What asked for the latest flush: a flush's write is issued right after its call (later only while an earlier commit is still in flight). */
let lastFlushVia = 'unknown';

function flushCaller(stack: string): string {
  if (stack.includes('flushIfDue')) return 'after a delivery';
  if (stack.includes('checkThresholds')) return 'suspension check';
  if (/\bclose\b/.test(stack)) return 'shutdown';
  if (/runtime\.ts/.test(stack)) return 'timer';
  return 'other';
}

/** Notes who calls runtime.counters.flush (the timer, flushIfDue and the check all call it on the instance). */
function watchFlushCallers(stack: LocalStack): void {
  const counters = stack.runtime.counters;
  const flush = counters.flush.bind(counters);
  counters.flush = () => {
    lastFlushVia = flushCaller(new Error().stack ?? '');
    return flush();
  };
}

/**
 * Counts the success-rate counter writes: each committed flush writes one document per delta,
 * with the id FirestoreCounterStore gives it. A flush that fails writes nothing (and is retried
 * with the next one), as the adapter's own OperationCounter counts.
 */
function watchCounterWrites(): void {
  const add = FirestoreCounterStore.prototype.add;
  FirestoreCounterStore.prototype.add = async function (this: FirestoreCounterStore, deltas, shard, mark, usage) {
    const at = performance.timeOrigin + performance.now();
    const via = lastFlushVia;
    // Every argument passed on: the flush's mark and its usage documents are part of what a flush writes.
    await add.call(this, deltas, shard, mark, usage);
    if (deltas.length === 0) return;
    counters.rates.flushes++;
    counters.rates.writes += deltas.length;
    for (const d of deltas) counterLog.push({ doc: `${d.destinationId}~${d.bucketStart}~${shard}`, at, via });
  };
}

/** Counts the suspension check's runs (every instance's counters: the class is the seam), and those that found nothing active. */
function watchChecks(): void {
  const foldRecent = DestinationCounters.prototype.foldRecent;
  DestinationCounters.prototype.foldRecent = async function (this: DestinationCounters) {
    const run = await foldRecent.call(this);
    counters.checks.runs++;
    if (run.active.length === 0) counters.checks.idleRuns++;
    counters.checks.active += run.active.length;
    counters.checks.folded += run.folded;
    return run;
  };
}

/** Herald's own logger at INFO, writing nowhere but counting what it would write. */
function countingLogger(): Logger {
  return createLogger({
    level: 'INFO',
    write: (line) => {
      counters.logs.lines++;
      counters.logs.bytes += Buffer.byteLength(line) + 1;
      const severity = /^\{"severity":"(\w+)"/.exec(line)?.[1];
      if (severity === 'WARNING') counters.logs.warnings++;
      if (severity === 'ERROR') {
        counters.logs.errors++;
        if (problems.length < 5) problems.push(line.slice(0, 400));
      }
    },
  });
}

/** The next server http.createServer makes (the stack's own, made first thing), with a timing listener on it. */
function watchNextServer(): void {
  const createServer = http.createServer;
  http.createServer = ((...args: Parameters<typeof http.createServer>) => {
    http.createServer = createServer;
    const server = createServer(...args);
    server.prependListener('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
      const began = performance.now();
      const name = (req.url ?? '/').split(/[/?]/)[1] ?? '';
      const count = counters.functions[(FUNCTION_NAMES as readonly string[]).includes(name) ? (name as FunctionName) : 'other'];
      res.once('close', () => {
        const ms = performance.now() - began;
        count.requests++;
        count.wallMs += ms;
        count.soloBilledMs += Math.max(1, Math.ceil(ms / 100)) * 100;
        if (!res.writableFinished || res.statusCode < 200 || res.statusCode > 299) count.errors++;
      });
    });
    return server;
  }) as typeof http.createServer;
}

/** Times usage metering's share of the work (every count goes through runtime.counters.meter; its flush rides the counter commits). */
function watchMetering(stack: LocalStack): void {
  const runtimeCounters = stack.runtime.counters;
  const meterUsage = runtimeCounters.meter.bind(runtimeCounters);
  runtimeCounters.meter = (account, at, counts) => {
    // CPU time, not wall time: on a busy machine a call preempted midway would count the wait for its core.
    const began = process.cpuUsage();
    meterUsage(account, at, counts);
    const spent = process.cpuUsage(began);
    counters.usage.meterMicros += spent.user + spent.system;
    counters.usage.meters++;
  };
}

function instrument(stack: LocalStack): void {
  watchMetering(stack);
  const { bus, deliveries, topology, names } = stack.runtime;
  const kindOf = (topic: string): TopicKind =>
    topic === topology.topics.events.name
      ? 'events'
      : topic === topology.topics.deadLetter.name
        ? 'deadLetter'
        : lanePrefixes(names).some((prefix) => topic.startsWith(prefix))
          ? 'lane'
          : 'other';
  const publish = bus.publish.bind(bus);
  bus.publish = async (topic, message) => {
    const id = await publish(topic, message);
    const count = counters.published[kindOf(topic)];
    count.messages++;
    count.bytes += messageBytes(message.data, message.attributes);
    count.dataBytes += message.data.byteLength;
    return id;
  };
  const batchLane = stack.runtime.batchLane;
  const pull = batchLane.pull.bind(batchLane);
  batchLane.pull = async (max) => {
    const got = await pull(max);
    for (const m of got) {
      counters.pulled.messages++;
      counters.pulled.bytes += messageBytes(m.message.data, m.message.attributes);
      counters.pulled.dataBytes += m.message.data.byteLength;
    }
    return got;
  };
  const recorded = (status: string | undefined) => {
    if (status !== undefined && status in counters.recorded) counters.recorded[status as keyof CostCounters['recorded']]++;
  };
  const create = deliveries.create.bind(deliveries);
  const viaCreate = new WeakSet<object>();
  deliveries.create = async (record, options) => {
    viaCreate.add(record);
    const created = await create(record, options);
    if (created) {
      recorded(record.status);
      counters.ownRecords++;
    }
    return created;
  };
  const addDelivered = deliveries.addDelivered.bind(deliveries);
  // A lone outcome is created as a document of its own (the store calls create with it: counted there); one among others is grouped.
  deliveries.addDelivered = async (record, options) => {
    const added = await addDelivered(record, options);
    if (added.created && !viaCreate.has(record)) {
      recorded(record.status);
      counters.groupedRecords++;
    }
    return added;
  };
  const update = deliveries.update.bind(deliveries);
  deliveries.update = async (id, decide) => {
    const written = await update(id, decide);
    recorded(written?.status);
    return written;
  };
  // The backstop: the journal's writes, the reconciler's removals and its empty polls.
  const intake = stack.runtime.intake;
  const add = intake.add.bind(intake);
  intake.add = async (batch) => {
    await add(batch);
    counters.backstop.journalWrites++;
    counters.backstop.journalEvents += batch.events.length;
  };
  const remove = intake.remove.bind(intake);
  intake.remove = async (batches) => {
    await remove(batches);
    counters.backstop.batchesRemoved += batches.length;
  };
  const dueBatches = intake.due.bind(intake);
  intake.due = async (...args) => {
    const batches = await dueBatches(...args);
    if (batches.length === 0) counters.backstop.emptyPolls++;
    return batches;
  };
  const owed = deliveries.deadLettersOwed.bind(deliveries);
  deliveries.deadLettersOwed = async (...args) => {
    const ids = await owed(...args);
    if (ids.length === 0) counters.backstop.emptyPolls++;
    return ids;
  };
  const due = deliveries.due.bind(deliveries);
  deliveries.due = async (...args) => {
    const ids = await due(...args);
    counters.pump.rounds++;
    if (ids.length === 0) counters.pump.emptyRounds++;
    counters.pump.found += ids.length;
    return ids;
  };
}

function snapshot(stack: LocalStack): CostCounters {
  const cpu = process.cpuUsage();
  const ops = stack.runtime.firestoreOps;
  return structuredClone({ cpuMicros: cpu.user + cpu.system, firestore: { reads: ops.reads, writes: ops.writes, deletes: ops.deletes }, wire: meter.byCollection, ...counters });
}

async function main(): Promise<void> {
  const pubsubHost = process.env.PUBSUB_EMULATOR_HOST;
  const firestoreHost = process.env.FIRESTORE_EMULATOR_HOST;
  if (!pubsubHost || !firestoreHost) throw new Error('PUBSUB_EMULATOR_HOST and FIRESTORE_EMULATOR_HOST must name running emulators');
  watchNextServer();
  watchCounterWrites();
  watchChecks();
  meterFirestore(meter);
  const stack = await startLocalStack({ port: 0, emulators: { pubsubHost, firestoreHost }, log: countingLogger(), onProgress: () => undefined });
  instrument(stack);
  watchFlushCallers(stack);
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= stack.stop({ purge: true }).catch((e: unknown) => void process.stderr.write(`[bench] cost stack: stopping failed: ${(e as Error).message}\n`)));
  process.on('message', (message: ParentMessage) => {
    if (message.type === 'snapshot') {
      const log = message.counterLogFrom === undefined ? {} : { counterLog: counterLog.slice(message.counterLogFrom) };
      send({ type: 'snapshot', seq: message.seq, counters: snapshot(stack), problems: [...problems], ...log });
    }
    else if (message.type === 'stop') void stop().then(() => send({ type: 'stopped' }, () => process.exit(0)));
  });
  // The bench went away without saying stop (killed, say): leave nothing running.
  process.on('disconnect', () => void stop().then(() => process.exit(0)));
  process.on('SIGINT', () => undefined); // The parent handles Ctrl-C and says stop.
  send({
    type: 'ready',
    url: stack.url,
    adminToken: stack.config.adminToken,
    ingestToken: stack.config.ingestToken,
    eventsTopic: stack.runtime.topology.topics.events.name,
    timeScale: stack.config.timeScale,
    pumpIntervalMs: stack.config.pumpIntervalMs,
    rateFlushMs: stack.config.rateFlushMs,
    counterBucketMs: stack.runtime.counters.options.bucketMs,
  });
}

main().catch((e: unknown) => {
  send({ type: 'failed', message: e instanceof Error ? (e.stack ?? e.message) : String(e) }, () => process.exit(1));
});
