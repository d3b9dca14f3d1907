/**
 * What usage metering (docs/usage.md) adds to a run of the cost phase or the steady-rate phase:
 * the Firestore writes of the `usage` documents (as billed: the meter on the client's RPCs),
 * and the CPU time of the metering itself (every count goes through runtime.counters.meter, a
 * sum in memory: cost-stack.ts takes the process's CPU time around each call) as a share of
 * Herald's CPU over the run. Its flush is one document per (account, day) in commits the
 * counters make anyway: its writes are counted here, its share of those commits' CPU is not
 * measured apart.
 *
 * A process writes an account's usage document once per flush (HERALD_RATE_FLUSH_MS, 1 s) at
 * most, whatever the traffic: writes per event are writes per second over events per second.
 * A run on a busy machine delivers slower than it sends, so its writes per event are judged at
 * the issue's rate, 100 events/s: its writes per second ÷ 100.
 */
import { MemoryCounterStore } from '../../shared/adapters/memory/counter-store';
import { DestinationCounters } from '../../shared/app/destinations/destination-counters';
import { COLLECTIONS } from '../../shared/firestore-schema';
import { createLogger } from '../../shared/log';
import { systemClock } from '../../shared/ports/clock';
import { CostCounters } from './cost-counters';
import { OpsByCollection } from './firestore-meter';
import { round, table } from './stats';

/** The bounds (issue 57): per delivered event, and of Herald's CPU. */
export const USAGE_METERING_TARGETS = { writesPerEvent: 0.01, cpuShare: 0.02 };

export interface UsageMetering {
  /** `usage` documents written, per delivered event (at the rate the run delivered). */
  writesPerEvent?: number;
  /** The same per second of the run: one account, one process, so at most one a flush. */
  writesPerSecond?: number;
  /** Per event at 100 events/s: writesPerSecond ÷ 100. */
  writesPerEventAt100?: number;
  /** Metering calls per delivered event (an accepted event, a delivery, an attempt, a delivered). */
  metersPerEvent?: number;
  /** CPU in metering per delivered event, µs. */
  cpuMicrosPerEvent?: number;
  /** Of Herald's CPU over the run (raw, idle included). */
  cpuShare?: number;
  /** Herald's CPU over the run per delivered event, µs (raw). */
  heraldCpuMicrosPerEvent?: number;
}

/**
 * A meter call's own CPU, µs, from a loop of `calls` on a writer of its own (10 accounts, the
 * calls a delivery makes). The in-place timing takes the process's CPU around each call, which
 * on a busy machine also holds what other threads did while the call waited for its core: an
 * upper bound. The loop's figure, times a run's calls per event, is the metering's own cost.
 */
export function meterCallMicros(calls = 200_000): number {
  const writer = new DestinationCounters(new MemoryCounterStore(), systemClock, createLogger({ write: () => undefined }), { bucketMs: 60_000, flushMs: 1000, shard: 0 });
  const at = new Date();
  const run = (n: number) => {
    for (let i = 0; i < n; i++) writer.meter(`account-${i % 10}`, at, i % 2 ? { attempts: { success: 1 }, bytesSent: 1300 } : { deliveries: 1, delivered: 1 });
  };
  run(10_000);
  const began = process.cpuUsage();
  run(calls);
  const spent = process.cpuUsage(began);
  return (spent.user + spent.system) / calls;
}

/** The rate the write bound is stated at, events/s. */
const JUDGED_RATE = 100;

/** From a run's counter delta (after − before), its Firestore writes by collection, its delivered events, Herald's CPU over it (µs) and its length (s). */
export function usageMetering(delta: Pick<CostCounters, 'usage'>, wire: OpsByCollection, delivered: number, cpuMicros: number, seconds: number): UsageMetering {
  if (delivered <= 0) return {};
  const writes = wire[COLLECTIONS.usage]?.writes ?? 0;
  return {
    writesPerEvent: round(writes / delivered, 4),
    ...(seconds > 0 ? { writesPerSecond: round(writes / seconds, 2), writesPerEventAt100: round(writes / seconds / JUDGED_RATE, 4) } : {}),
    metersPerEvent: round(delta.usage.meters / delivered, 2),
    cpuMicrosPerEvent: round(delta.usage.meterMicros / delivered, 2),
    ...(cpuMicros > 0 ? { cpuShare: round(delta.usage.meterMicros / cpuMicros, 4), heraldCpuMicrosPerEvent: round(cpuMicros / delivered, 1) } : {}),
  };
}

/** The metering's own share of a run's CPU: its calls per event at the loop's cost per call. */
const loopShare = (m: UsageMetering | undefined, callMicros: number) =>
  m?.metersPerEvent !== undefined && m.heraldCpuMicrosPerEvent ? (m.metersPerEvent * callMicros) / m.heraldCpuMicrosPerEvent : undefined;

/**
 * The section of the report: a row per run, and the bounds judged on the scale-1 run (the cost
 * runs' flushes are 1000 × too frequent): the writes from its writes per second, the CPU from
 * its calls per event at the loop's cost per call (meterCallMicros), the in-place timing shown beside it.
 */
export function formatUsageMetering(rows: { name: string; metering?: UsageMetering; judged: boolean }[], callMicros: number): string {
  const t = USAGE_METERING_TARGETS;
  const judged = rows.filter((r) => r.judged && r.metering?.writesPerEvent !== undefined);
  const met = judged.length > 0 && judged.every((r) => (r.metering!.writesPerEventAt100 ?? Infinity) <= t.writesPerEvent && (loopShare(r.metering, callMicros) ?? Infinity) <= t.cpuShare);
  const pct = (v: number | undefined) => (v === undefined ? undefined : `${(v * 100).toFixed(2)} %`);
  return [
    '',
    'Usage metering (docs/usage.md): the `usage` documents\' writes and the CPU of counting (runtime.counters.meter, timed in Herald\'s process):',
    '',
    table(
      ['run', 'usage writes / event', 'usage writes / s', `at ${JUDGED_RATE} events/s`, 'meter calls / event', 'Herald CPU µs / event', 'metering share (loop cost)', 'in place: µs / event, share'],
      rows.map((r) => [
        r.name,
        r.metering?.writesPerEvent,
        r.metering?.writesPerSecond,
        r.metering?.writesPerEventAt100,
        r.metering?.metersPerEvent,
        r.metering?.heraldCpuMicrosPerEvent,
        pct(loopShare(r.metering, callMicros)),
        r.metering?.cpuMicrosPerEvent === undefined ? undefined : `${r.metering.cpuMicrosPerEvent}, ${pct(r.metering.cpuShare)}`,
      ]),
    ),
    `A meter call costs ${round(callMicros, 2)} µs of CPU (a loop of 200,000, this process); "in place" is the process's CPU around each call in Herald's, an upper bound on a busy machine (it holds other threads' CPU while the call waits for its core).`,
    `Target: ≤ ${t.writesPerEvent} usage writes per event at ${JUDGED_RATE} events/s (the run's writes per second ÷ ${JUDGED_RATE}) and ≤ ${t.cpuShare * 100} % of Herald's CPU (calls per event at the loop's cost), judged at HERALD_TIME_SCALE=1 (${judged.map((r) => r.name).join(', ') || 'no such run'}): ${met ? 'MET' : 'NOT MET'}`,
    '  (at HERALD_TIME_SCALE=1000 the suspension check, which flushes first, runs once a 1 s counter bucket: those runs flush, and write usage documents, more often than Herald at scale 1)',
  ].join('\n');
}
