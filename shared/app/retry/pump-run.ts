import { Logger } from '../../ports/clock';
import { BatcherDeps, BatcherReport, runBatcher } from '../delivery/batcher';
import { PumpDeps, PumpEnd, PumpReport, runPump } from './pump';
import { reconcileBacklog } from '../intake/reconcile';
import { ReconcileDeps, ReconcileReport } from '../intake/reconcile-deps';
import { repairStalledKeys } from '../ordering/ordered-delivery';

export interface PumpRunDeps {
  pump: PumpDeps;
  reconcile: ReconcileDeps;
  /** The batcher, run beside the pump for the run's window (app/delivery/batcher.ts); absent: not run. */
  batcher?: BatcherDeps;
  log: Logger;
}

export interface PumpRunOptions {
  /** How long the run keeps going (0: one round of each). */
  runMs: number;
  intervalMs: number;
  /** runPump's `hold`: poll to the end even when nothing falls due. */
  hold: boolean;
  /** Work that goes before the retry pump's rounds (the purge of deleted accounts), beside the reconciler. */
  before?: () => Promise<void>;
  onRound?: (r: PumpReport) => void;
}

export interface PumpRunReport extends PumpReport {
  ended: PumpEnd;
  /** Absent when the reconciler failed (logged; the next run tries again). */
  reconciled?: ReconcileReport;
  /** How long the reconciler's rounds took. */
  reconcileMs: number;
  batcher?: BatcherReport;
}

/** Ordered keys whose head stalled (app/ordering/ordered-delivery.ts): looked at once a run; a failure is logged, the next run looks again. */
export async function repairKeys(deps: Pick<PumpRunDeps, 'pump' | 'log'>): Promise<void> {
  const { keys } = deps.pump;
  if (!keys) return;
  try {
    await repairStalledKeys({ ...deps.pump, keys }, 2 * deps.pump.claimTtlMs);
  } catch (e) {
    deps.log.warn('could not look for stalled ordered keys; the next run looks again', { error: (e as Error).message });
  }
}

/**
 * One scheduled pump run: the reconciler's rounds and the batcher beside the retry pump's, not before them. A
 * large recovery (50,000 records) takes many bounded rounds, and due retries are claimed from
 * the run's first moment all the same; the reconciler used to go first and a recovery longer
 * than the run left the retries waiting a whole minute or more. What the reconciler recovers is
 * due at once: a pump that ended early (nothing was due yet) goes again for what is left of the run.
 */
export async function pumpRun(deps: PumpRunDeps, options: PumpRunOptions): Promise<PumpRunReport> {
  const started = Date.now();
  const left = () => Math.max(0, options.runMs - (Date.now() - started));
  let reconcileMs = 0;
  const reconciling = reconcileBacklog(deps.reconcile, options.runMs)
    .catch((e: unknown) => {
      deps.log.error('reconciler failed; the next run tries again', { error: (e as Error).message });
      return undefined;
    })
    .finally(() => (reconcileMs = Date.now() - started));
  // Batched destinations' events are pulled while the run goes on anyway (its instance is billed
  // for it), and after that for as long as they come: an idle batch lane then ends it.
  const batching = deps.batcher ? runBatcher(deps.batcher, { untilMs: options.runMs }) : undefined;
  await Promise.all([options.before?.(), repairKeys(deps)]);
  const pumpOptions = { intervalMs: options.intervalMs, hold: options.hold, ...(options.onRound ? { onRound: options.onRound } : {}) };
  let pumped = await runPump(deps.pump, { ...pumpOptions, untilMs: left() }).done;
  const reconciled = await reconciling;
  if (pumped.ended === 'idle' && (reconciled?.recovered ?? 0) > 0 && left() > 0) {
    const more = await runPump(deps.pump, { ...pumpOptions, untilMs: left() }).done;
    pumped = { due: pumped.due + more.due, sent: pumped.sent + more.sent, skipped: pumped.skipped + more.skipped, abandoned: pumped.abandoned + more.abandoned, queued: pumped.queued + more.queued, ended: more.ended };
  }
  if (!options.hold) batching?.endWhenIdle();
  const batcher = await batching?.done;
  return { ...pumped, ...(reconciled ? { reconciled } : {}), reconcileMs, ...(batcher ? { batcher } : {}) };
}
