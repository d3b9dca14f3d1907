import { splitDestinationId } from '../../domain/ids';
import { addTallies, EMPTY_TALLY, IntakeTally, sameTally, tallyOf } from '../../domain/intake/intake-tally';
import { ExpectedDelivery, expectedInRuns, IntakeBatch, recoveredRecord, RoutableDestination } from '../../domain/intake/intake';
import { forEachLimited } from '../support/for-each-limited';
import { ReconcileDeps } from './reconcile-deps';
import { LaneActivity } from './lane-activity';
import { RoundBudget } from './round-budget';

/** Deliveries per run: read together, created together, then the batch's progress written (a write per this many). */
export const RUN_RECORDS = 250;
/** Creates in flight at once per batch (CONCURRENCY batches at a time). */
const CREATE_CONCURRENCY = 32;

export type DestinationsFor = (type: string, account: string) => readonly RoutableDestination[];

/** What a batch's expected deliveries come to, worked out run by run (never held whole). */
export interface BatchPlan {
  batch: IntakeBatch;
  count: number;
  tally: IntakeTally;
  destinationIds: string[];
  /** The expected deliveries per account (a destination's account is its events'): the deliveries the batch counts in usage once they all exist. */
  byAccount: Record<string, number>;
}

export function planOf(batch: IntakeBatch, destinationsFor: DestinationsFor): BatchPlan {
  let tally = EMPTY_TALLY;
  const destinations = new Set<string>();
  const byAccount: Record<string, number> = {};
  for (const run of expectedInRuns(batch, destinationsFor, 0, RUN_RECORDS)) {
    tally = addTallies(tally, tallyOf(run.expected.map((e) => e.deliveryId)));
    for (const e of run.expected) {
      destinations.add(e.destinationId);
      const { account } = splitDestinationId(e.destinationId);
      byAccount[account] = (byAccount[account] ?? 0) + 1;
    }
  }
  return { batch, count: tally.count, tally, destinationIds: [...destinations], byAccount };
}

/**
 * Creates the records a batch is missing, run by run from its kept progress while the round's
 * budget lasts: `postponed` when `activity` says a destination with a missing record is still
 * being delivered to, `unfinished` when the budget ran out first.
 */
export async function recoverMissing(
  deps: ReconcileDeps,
  plan: BatchPlan,
  destinationsFor: DestinationsFor,
  activity: LaneActivity | undefined,
  budget: RoundBudget,
): Promise<{ recovered: number; outcome: 'done' | 'postponed' | 'unfinished'; exact?: true }> {
  const { batch } = plan;
  let recovered = 0;
  if (plan.count === 0) return { recovered, outcome: 'done', exact: true };
  // The common case costs an aggregation: the expected records, and only they, carry this batch's
  // id. A batch with progress kept is known to be short: on from there at once.
  if (batch.progress === undefined && sameTally(await deps.deliveries.tallyFromIntake(batch.id, plan.destinationIds, plan.tally), plan.tally)) return { recovered, outcome: 'done', exact: true };
  // Every destination's lane still moving: wait, without reading the records one by one.
  if (activity && (await Promise.all(plan.destinationIds.map((id) => activity.busy(id)))).every(Boolean)) return { recovered, outcome: 'postponed' };
  // Short, extra records, or a record written by an earlier intake of the same event: look at
  // each, from where an earlier round stopped.
  for (const run of expectedInRuns(batch, destinationsFor, batch.progress ?? 0, RUN_RECORDS)) {
    const started = budget.startRun();
    if (!started) return { recovered, outcome: 'unfinished' };
    budget.take(run.expected.length);
    const found = await deps.deliveries.existing(run.expected.map((e) => e.deliveryId));
    const missing = run.expected.filter((x) => !found.has(x.deliveryId));
    budget.giveBack(found.size);
    if (activity && missing.length > 0) {
      const busy = await Promise.all([...new Set(missing.map((m) => m.destinationId))].map((id) => activity.busy(id)));
      if (busy.some(Boolean)) {
        budget.giveBack(missing.length);
        return { recovered, outcome: 'postponed' };
      }
    }
    // Taken in order: once the deadline stops them, those before the first not taken are all created.
    let cut: ExpectedDelivery | undefined;
    await forEachLimited(missing, CREATE_CONCURRENCY, async (e) => {
      if (cut) return;
      if (!started.first && !budget.inTime()) cut = e;
      else if (await createRecovered(deps, e, batch)) recovered++;
    });
    if (cut) {
      const upTo = batch.events.indexOf(cut.event, run.start);
      if (upTo > run.start) await deps.intake.progress(batch.id, upTo);
      return { recovered, outcome: 'unfinished' };
    }
    // Every event before run.end has its records now: a later round (or process) starts there.
    if (run.end < batch.events.length) await deps.intake.progress(batch.id, run.end);
  }
  return { recovered, outcome: 'done' };
}

/** Creates one recovered record unless one exists: a first attempt recorded meanwhile wins, and nothing is sent twice by this. */
async function createRecovered(deps: ReconcileDeps, e: ExpectedDelivery, batch: IntakeBatch): Promise<boolean> {
  const record = recoveredRecord(e, batch, deps.clock.now());
  if (!(await deps.deliveries.create(record, { unlessGrouped: true }))) return false;
  if (record.publishedAt !== undefined) deps.logHead?.created(record.destinationId, record.id, record.publishedAt, deps.clock.now());
  deps.log.warn('an accepted event never reached its destination\'s lane or was never attempted: recovered, PENDING for the retry pump', {
    eventId: record.eventId,
    eventSource: record.eventSource,
    destinationId: record.destinationId,
    deliveryId: record.id,
    intake: batch.id,
    acceptedAt: batch.acceptedAt,
  });
  return true;
}

/** What a finished batch counts in usage beside its events (domain/intake/intake-usage.ts ReconciledBatch). */
export interface BatchCounts {
  /** The deliveries its intake created, per account: the records that carry its id. */
  deliveries: Record<string, number>;
  /** Its events another intake accepted first (indexes into its events): counted with that one. */
  resent: number[];
}

/**
 * What a finished batch counts: its expected deliveries, and every event, when they were found
 * exactly (`exact`) or all carry its id by now; else the records that carry its id (a read each, on this rare path), and as
 * resent the events that expected deliveries of which none carries it — every one was created by
 * an earlier intake of the same event, a producer's resend after an answer it never got, whose
 * first try was journaled too and is counted with its own batch.
 */
export async function countedOnRemoval(deps: Pick<ReconcileDeps, 'deliveries'>, plan: BatchPlan, destinationsFor: DestinationsFor, exact: boolean): Promise<BatchCounts> {
  // Exact, or all found carrying its id now (the reconciler's own recoveries do): one aggregation, no read per record.
  if (exact || sameTally(await deps.deliveries.tallyFromIntake(plan.batch.id, plan.destinationIds, plan.tally), plan.tally)) return { deliveries: plan.byAccount, resent: [] };
  const own = await deps.deliveries.fromIntake(plan.batch.id, plan.destinationIds);
  const deliveries: Record<string, number> = Object.fromEntries(Object.keys(plan.byAccount).map((account) => [account, 0]));
  for (const id of own) {
    const { account } = splitDestinationId(id.slice(0, id.indexOf('.')));
    if (account in deliveries) deliveries[account]! += 1;
  }
  const hasOwn = new Map<unknown, boolean>();
  for (const run of expectedInRuns(plan.batch, destinationsFor, 0, RUN_RECORDS)) for (const e of run.expected) hasOwn.set(e.event, (hasOwn.get(e.event) ?? false) || own.has(e.deliveryId));
  return { deliveries, resent: plan.batch.events.flatMap((event, i) => (hasOwn.get(event) === false ? [i] : [])) };
}
