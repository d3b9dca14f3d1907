/**
 * The suspension check with many destinations active all hour: an hour of minute counters
 * written for each (scale-busy-hour.ts), the last destination in sort order failing every
 * attempt, then the check run by an instance of its own (a fresh runtime, as the scheduled
 * function is), once and then each next minute until a run reads no more than the target per
 * active destination (at most MAX_RUNS): its reads per active destination (the last run is the
 * steady state), its time, and whether the failing one was judged and suspended. A first run
 * catches up at most 1,000 rollups or 20 s of them (DestinationCounters.foldRecent); where a
 * catch-up read is slow (the emulator scans the collection: ~1 s each at 20,000 destinations)
 * the next runs finish it, and the runs it took are printed.
 */
import { checkThresholds } from '../../shared/app/delivery/suspend-and-reactivate';
import { Runtime } from '../../shared/runtime/runtime';
import { suspensionDeps } from '../../shared/runtime/delivery-deps';
import { writeBusyHour } from './scale-busy-hour';
import { Measured, Probe } from './scale-probe';
import { round } from './stats';

export const SUSPENSION_READS_PER_ACTIVE_MAX = 3;
/** Runs at most: the first, and the next minutes' until one is steady. */
const MAX_RUNS = 6;

export interface SuspensionRun {
  run: Measured;
  /** Destinations the check judged (active, with a threshold): these and any others the run left active (delivery runs, phase 2). */
  checked: number;
  suspended: string[];
  readsPerActive: number;
}

export interface SuspensionPhase {
  active: number;
  lastInSortOrder: string;
  busyHourSeconds: number;
  runs: SuspensionRun[];
  /** The failing destination at the end of the sort order was suspended by a run. */
  lastJudged: boolean;
}

/** `writer`: the runtime whose counters write the hour (a deliver instance's part); `checker`: a fresh runtime for the check. */
export async function suspensionPhase(writer: Runtime, checker: Runtime, probe: Probe, active: readonly string[], note: (line: string) => void): Promise<SuspensionPhase> {
  const sorted = [...active].sort();
  const last = sorted.at(-1)!;
  note(`suspension check: an hour of counters for ${active.length} destinations (${last}, last in sort order, failing every attempt)`);
  const busy = await writeBusyHour(writer, sorted, { failing: new Set([last]), note });
  const runs: SuspensionRun[] = [];
  // A run folds the minutes ended a few seconds before it (foldWaitMs): the scheduled handler waits for that, and so does this.
  const settle = () => new Promise((resolve) => setTimeout(resolve, checker.counters.foldWaitMs(Date.now())));
  // The hour goes on: this minute's attempts, written as a deliver instance writes them.
  const keepBusy = async () => {
    const now = new Date();
    for (const id of sorted) for (let n = 0; n < 20; n++) writer.counters.record(id, id === last ? 'failure' : 'success', now, undefined, 50);
    await writer.counters.flush();
  };
  for (let i = 0; i < MAX_RUNS && (i < 2 || runs.at(-1)!.readsPerActive > SUSPENSION_READS_PER_ACTIVE_MAX); i++) {
    if (i >= 1) {
      // The steady state is the next minute's run: what the minute before the last run left, folded.
      await keepBusy();
      const nextMinute = Math.ceil(Date.now() / writer.counters.options.bucketMs) * writer.counters.options.bucketMs;
      note(`suspension check: waiting ${Math.round((nextMinute - Date.now()) / 1000)} s for the next minute's run`);
      await new Promise((resolve) => setTimeout(resolve, nextMinute - Date.now() + 1_000));
      await keepBusy();
    }
    await settle();
    const { value: report, m } = await probe.measure(`suspension check, run ${i + 1}`, () => checkThresholds(suspensionDeps(checker)), checker.firestoreOps);
    runs.push({ run: m, checked: report.checked, suspended: report.suspended, readsPerActive: round(m.reads / Math.max(1, report.checked), 2)! });
    note(`suspension check run ${i + 1}: ${m.reads} reads, ${m.ms} ms, ${report.checked} judged, suspended: ${report.suspended.join(', ') || 'none'}`);
  }
  return { active: active.length, lastInSortOrder: last, busyHourSeconds: busy.seconds, runs, lastJudged: runs.some((r) => r.suspended.includes(last)) };
}
