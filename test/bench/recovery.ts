/**
 * `npm run bench -- recovery [--records 50000]`: a large recovery by the reconciler (issue 36).
 *
 * Herald's local stack in this process, F destinations taking one event type, and intake
 * batches (500 events each, as ingest's journal writes them at most) whose delivery records
 * were never created: `records` missing records in all, as a lane lost for a while would leave.
 * Then scheduled pump runs (runSeconds=0: one reconciler round beside one retry pump round), a
 * retry falling due before each. Printed per round: records created, Firestore reads, writes and
 * deletes (billed, the reconciler's alone),
 * the round's time, and the retry pump's delay (from the run's start to the end of its first
 * round, which sent the retry). At the end: every record created exactly once, the journal empty.
 */
import { performance } from 'node:perf_hooks';
import { pumpRun } from '../../shared/app/retry/pump-run';
import { ReconcileDeps } from '../../shared/app/intake/reconcile-deps';
import { LocalStack, startLocalStack } from '../../apps/local/stack';
import { FirestoreDeliveryStore } from '../../shared/adapters/firestore/deliveries/delivery-store';
import { FirestoreIntakeStore } from '../../shared/adapters/firestore/intake';
import { OperationCounter } from '../../shared/adapters/firestore/stores';
import { deliveryId } from '../../shared/domain/retry/delivery';
import { DAY_MS } from '../../shared/domain/delivery/delivery-retention';
import { eventKey, HeraldEvent } from '../../shared/domain/events/event';
import { INTAKE_BATCH_EVENTS, IntakeBatch } from '../../shared/domain/intake/intake';
import { createLogger } from '../../shared/log';
import { createRuntime, pumpDeps, Runtime } from '../../shared/runtime/runtime';
import { reconcileDeps } from '../../shared/runtime/intake-deps';
import { countedDeliveries, dueRetry } from '../support/recovery';
import { ArrivalCounter } from './fanout';
import { clearFirestore, purgeProject } from './housekeeping';
import { BenchFailure, BenchHarness, flagsOf, intOption } from './harness';
import { round, table } from './stats';

export const RECOVERY_HELP = `Usage: npm run bench -- recovery [options]
  --records N        missing delivery records to recover (BENCH_RECOVERY_RECORDS; 50000)
  --fanout F         destinations each event was meant for (BENCH_RECOVERY_FANOUT; 10)
  --round-records R  a round's record budget (BENCH_RECOVERY_ROUND_RECORDS; the reconciler's default, 5000)
  --round-ms T       a round's time budget (BENCH_RECOVERY_ROUND_MS; the reconciler's default, 10000)
  --max-rounds M     give up after M rounds (BENCH_RECOVERY_MAX_ROUNDS; 200)`;

/** A project of its own each run: a run's leftovers (an interrupted one's) never meet the next one's secrets key. */
const PROJECT = `herald-bench-recovery-${Date.now().toString(36)}`;

export interface RecoveryOptions {
  records: number;
  fanout: number;
  roundRecords?: number;
  roundMs?: number;
  maxRounds: number;
  /** Aborted (Ctrl-C): no further round starts. */
  signal?: AbortSignal;
}

export interface RecoveryRound {
  round: number;
  created: number;
  reads: number;
  writes: number;
  deletes: number;
  /** The reconciler's round. */
  ms: number;
  /** From the run's start to the end of the retry pump's first round (which sent the due retry). */
  retryDelayMs: number;
  retrySent: boolean;
}

export interface RecoveryReport {
  records: number;
  batches: number;
  rounds: RecoveryRound[];
  /** Records created exactly once / more than once. */
  createdOnce: number;
  createdTwice: number;
  journalEmpty: boolean;
  seconds: number;
}

const event = (type: string, id: string): HeraldEvent => ({ attributes: { specversion: '1.0', id, source: '/herald-bench-recovery', type }, data: Buffer.from(`{"n":"${id}"}`) });

/** Where the phase runs: a stack to register through, and the runtime that journals and runs the rounds (a LocalStack alone: its own). */
export interface RecoveryTarget {
  stack: Pick<LocalStack, 'url' | 'config'>;
  /**
   * Asked for once the destinations are registered. A local stack's own runtime works, but its
   * retry pump loop then delivers what is recovered in the same process, and the rounds share
   * the CPU with those deliveries; the recovery bench stops the stack and gives a runtime of its own.
   */
  runtime: () => Promise<Runtime>;
}

/**
 * The phase (the scale bench may call it too): registers `fanout` destinations (and one for the
 * retries) answering at `receiverUrl`, journals the batches, and runs rounds until the journal
 * holds none of them.
 */
export async function runRecoveryPhase(on: RecoveryTarget | LocalStack, receiverUrl: string, options: RecoveryOptions, note: (line: string) => void): Promise<RecoveryReport> {
  const target: RecoveryTarget = 'stack' in on ? on : { stack: on, runtime: async () => on.runtime };
  const { stack } = target;
  const tag = Date.now().toString(36);
  const recoveryType = `com.example.recovery.${tag}`;
  const retryType = `com.example.recovery-retry.${tag}`;
  const admin = { authorization: `Bearer ${stack.config.adminToken}`, 'content-type': 'application/json' };
  const register = async (name: string, eventType: string): Promise<string> => {
    const res = await fetch(`${stack.url}/admin/destinations/${name}`, { method: 'PUT', headers: admin, body: JSON.stringify({ url: `${receiverUrl}/${name}`, eventTypes: [eventType] }) });
    if (res.status !== 201) throw new BenchFailure(`registering ${name}: ${res.status} ${await res.text()}`);
    return ((await res.json()) as { id: string }).id;
  };
  const destinations: string[] = [];
  for (let i = 0; i < options.fanout; i++) destinations.push(await register(`recovery-${tag}-${i}`, recoveryType));
  const retryDestination = await register(`recovery-${tag}-retry`, retryType);
  const rt = await target.runtime();

  // Accepted after the destinations existed (they are owed these events), never routed.
  await new Promise((r) => setTimeout(r, 20));
  const events = Math.ceil(options.records / options.fanout);
  const first = Date.now();
  const batches: IntakeBatch[] = [];
  for (let start = 0, b = 0; start < events; start += INTAKE_BATCH_EVENTS, b++) {
    const n = Math.min(INTAKE_BATCH_EVENTS, events - start);
    batches.push({ id: `i-${first}-${tag}-${String(b).padStart(4, '0')}`, acceptedAt: new Date(first + b).toISOString(), events: Array.from({ length: n }, (_, e) => event(recoveryType, `${tag}-${start + e}`)) });
  }
  for (const b of batches) await rt.intake.add(b);
  const expected = batches.flatMap((b) => b.events.flatMap((e) => destinations.map((d) => deliveryId(d, eventKey(e.attributes)))));
  note(`recovery: ${expected.length} missing records in ${batches.length} intake batches (${events} events × ${options.fanout} destinations)`);
  // Past the reconciler's grace (HERALD_RECONCILE_AFTER_MS=1000 on this stack).
  await new Promise((r) => setTimeout(r, 1_100));

  // The reconciler's stores count into a counter of their own: the runtime's counter has the pump's too.
  const ops = new OperationCounter();
  const { wrapped: deliveries, creates } = countedDeliveries(new FirestoreDeliveryStore(rt.firestore, ops, { retentionMs: rt.config.deliveryRetentionDays * DAY_MS, now: () => rt.clock.now() }));
  const reconcile: ReconcileDeps = {
    ...reconcileDeps(rt),
    deliveries,
    intake: new FirestoreIntakeStore(rt.firestore, ops),
    ...(options.roundRecords !== undefined ? { roundRecords: options.roundRecords } : {}),
    ...(options.roundMs !== undefined ? { roundMs: options.roundMs } : {}),
  };
  // One claim a round: the retry (the oldest due).
  const pump = { ...pumpDeps(rt), batchSize: 1 };
  const ours = new Set(batches.map((b) => b.id));
  const left = async () => (await rt.intake.due(new Date(Date.now() + 3_600_000), 1_000)).filter((b) => ours.has(b.id)).length;

  const rounds: RecoveryRound[] = [];
  const started = performance.now();
  for (let r = 1; r <= options.maxRounds && !options.signal?.aborted; r++) {
    await rt.deliveries.put(dueRetry(retryDestination, event(retryType, `${tag}-retry-${r}`), Date.now()));
    const before = { ...ops };
    const runStart = performance.now();
    let retryDelayMs = -1;
    const report = await pumpRun({ pump, reconcile, log: rt.log }, { runMs: 0, intervalMs: 100, hold: false, onRound: () => (retryDelayMs = retryDelayMs < 0 ? performance.now() - runStart : retryDelayMs) });
    rounds.push({
      round: r,
      created: report.reconciled?.recovered ?? 0,
      reads: ops.reads - before.reads,
      writes: ops.writes - before.writes,
      deletes: ops.deletes - before.deletes,
      ms: report.reconcileMs,
      retryDelayMs: Math.round(retryDelayMs),
      retrySent: report.sent >= 1,
    });
    const last = rounds[rounds.length - 1]!;
    note(`round ${r}: ${last.created} created, ${last.reads} reads, ${last.writes} writes, ${last.ms} ms; retry pump's round done after ${last.retryDelayMs} ms`);
    if ((await left()) === 0) break;
  }
  const seconds = (performance.now() - started) / 1000;
  const counts = expected.map((id) => creates.get(id) ?? 0);
  return {
    records: expected.length,
    batches: batches.length,
    rounds,
    createdOnce: counts.filter((n) => n === 1).length,
    createdTwice: counts.filter((n) => n > 1).length,
    journalEmpty: (await left()) === 0,
    seconds,
  };
}

export function formatRecoveryReport(report: RecoveryReport): string {
  const rows = report.rounds.map((r) => [String(r.round), String(r.created), String(r.reads), String(r.writes), String(r.deletes), String(r.ms), String(r.retryDelayMs), r.retrySent ? 'yes' : 'NO']);
  const maxMs = Math.max(...report.rounds.map((r) => r.ms));
  const maxDelay = Math.max(...report.rounds.map((r) => r.retryDelayMs));
  const reads = report.rounds.reduce((n, r) => n + r.reads, 0);
  const writes = report.rounds.reduce((n, r) => n + r.writes, 0);
  return [
    `Recovery of ${report.records} missing records (${report.batches} intake batches): ${report.rounds.length} rounds, ${round(report.seconds, 1)} s`,
    table(['round', 'created', 'reads', 'writes', 'deletes', 'round ms', 'retry pump delay ms', 'retry sent'], rows),
    `longest round ${maxMs} ms; longest retry pump delay ${maxDelay} ms; ${round(reads / Math.max(1, report.records), 2)} reads and ${round(writes / Math.max(1, report.records), 2)} writes per record`,
    `created exactly once: ${report.createdOnce}/${report.records}; more than once: ${report.createdTwice}; journal empty: ${report.journalEmpty ? 'yes' : 'NO'}`,
  ].join('\n');
}

export async function runRecoveryBench(args: string[], harness: BenchHarness): Promise<number> {
  const flags = flagsOf(args);
  const options: RecoveryOptions = {
    records: intOption('--records', flags['--records'], 'BENCH_RECOVERY_RECORDS', 50_000, 1),
    fanout: intOption('--fanout', flags['--fanout'], 'BENCH_RECOVERY_FANOUT', 10, 1),
    maxRounds: intOption('--max-rounds', flags['--max-rounds'], 'BENCH_RECOVERY_MAX_ROUNDS', 200, 1),
    signal: harness.signal,
  };
  if (flags['--round-records'] !== undefined || process.env.BENCH_RECOVERY_ROUND_RECORDS) options.roundRecords = intOption('--round-records', flags['--round-records'], 'BENCH_RECOVERY_ROUND_RECORDS', 5_000, 1);
  if (flags['--round-ms'] !== undefined || process.env.BENCH_RECOVERY_ROUND_MS) options.roundMs = intOption('--round-ms', flags['--round-ms'], 'BENCH_RECOVERY_ROUND_MS', 10_000, 1);
  const emulators = await harness.emulators();
  const counter = await ArrivalCounter.started(harness);
  const log = createLogger({ level: 'ERROR', write: () => undefined });
  const stack = await startLocalStack({
    port: 0,
    emulators,
    env: { ...process.env, HERALD_PROJECT_ID: PROJECT, HERALD_LOG_LEVEL: 'WARNING', HERALD_RECONCILE_INTERVAL_MS: '600000', HERALD_RECONCILE_AFTER_MS: '1000' },
    log,
    onProgress: () => undefined,
  });
  let stopped: Promise<void> | undefined;
  const stop = () => (stopped ??= stack.stop());
  harness.addCleanup('herald', stop);
  harness.addCleanup('the project', () => Promise.all([purgeProject(PROJECT), clearFirestore(emulators, PROJECT)]).then(() => undefined));
  // Registered through the stack; then its loops and servers stop, and the rounds run on a
  // runtime of their own: nothing delivers the recovered records meanwhile, the rounds have the process.
  const runtime = async () => {
    await stop();
    const rt = createRuntime(stack.config, { log });
    harness.addCleanup('the rounds runtime', () => rt.close());
    return rt;
  };
  const report = await runRecoveryPhase({ stack, runtime }, counter.url, options, harness.note);
  process.stdout.write(`${formatRecoveryReport(report)}\n`);
  return report.createdOnce === report.records && report.journalEmpty && report.rounds.every((r) => r.retrySent) ? 0 : 1;
}
