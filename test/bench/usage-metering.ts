/**
 * What usage metering (docs/usage.md) adds to a run of the cost phase or the steady-rate phase:
 * the Firestore writes of the `usage` documents (as billed: the meter on the client's RPCs),
 * and the CPU time of the metering itself (every count goes through runtime.counters.meter, a
 * sum in memory: cost-stack.ts times each call) as a share of Herald's CPU over the run. Its
 * flush is one document per (account, day) in commits the counters make anyway: its writes are
 * counted here, its share of those commits' CPU is not measured apart.
 */
import { COLLECTIONS } from '../../shared/firestore-schema';
import { CostCounters } from './cost-counters';
import { OpsByCollection } from './firestore-meter';
import { round, table } from './stats';

/** The bounds (issue 57): per delivered event, and of Herald's CPU. */
export const USAGE_METERING_TARGETS = { writesPerEvent: 0.01, cpuShare: 0.02 };

export interface UsageMetering {
  /** `usage` documents written, per delivered event. */
  writesPerEvent?: number;
  /** Metering calls per delivered event (an accepted event, a delivery, an attempt, a delivered). */
  metersPerEvent?: number;
  /** CPU in metering per delivered event, µs. */
  cpuMicrosPerEvent?: number;
  /** Of Herald's CPU over the run (raw, idle included). */
  cpuShare?: number;
}

/** From a run's counter delta (after − before), its Firestore writes by collection, its delivered events and Herald's CPU over it, µs. */
export function usageMetering(delta: Pick<CostCounters, 'usage'>, wire: OpsByCollection, delivered: number, cpuMicros: number): UsageMetering {
  if (delivered <= 0) return {};
  return {
    writesPerEvent: round((wire[COLLECTIONS.usage]?.writes ?? 0) / delivered, 4),
    metersPerEvent: round(delta.usage.meters / delivered, 2),
    cpuMicrosPerEvent: round(delta.usage.meterMicros / delivered, 2),
    ...(cpuMicros > 0 ? { cpuShare: round(delta.usage.meterMicros / cpuMicros, 4) } : {}),
  };
}

/** The section of the report: a row per run, and the bounds judged on the scale-1 run (the cost runs' flushes are 1000 × too frequent). */
export function formatUsageMetering(rows: { name: string; metering?: UsageMetering; judged: boolean }[]): string {
  const t = USAGE_METERING_TARGETS;
  const judged = rows.filter((r) => r.judged && r.metering?.writesPerEvent !== undefined);
  const met = judged.length > 0 && judged.every((r) => (r.metering!.writesPerEvent ?? Infinity) <= t.writesPerEvent && (r.metering!.cpuShare ?? Infinity) <= t.cpuShare);
  const pct = (v: number | undefined) => (v === undefined ? undefined : `${(v * 100).toFixed(2)} %`);
  return [
    '',
    'Usage metering (docs/usage.md): the `usage` documents\' writes and the CPU of counting (runtime.counters.meter, timed in Herald\'s process):',
    '',
    table(
      ['run', 'usage writes / event', 'meter calls / event', 'meter CPU µs / event', 'share of Herald CPU'],
      rows.map((r) => [r.name, r.metering?.writesPerEvent, r.metering?.metersPerEvent, r.metering?.cpuMicrosPerEvent, pct(r.metering?.cpuShare)]),
    ),
    `Target: ≤ ${t.writesPerEvent} usage writes per event and ≤ ${t.cpuShare * 100} % of Herald's CPU, judged at HERALD_TIME_SCALE=1 (${judged.map((r) => r.name).join(', ') || 'no such run'}): ${met ? 'MET' : 'NOT MET'}`,
    '  (at HERALD_TIME_SCALE=1000 the suspension check, which flushes first, runs about every 100 ms: those runs flush, and write usage documents, more often than Herald at scale 1)',
  ].join('\n');
}
