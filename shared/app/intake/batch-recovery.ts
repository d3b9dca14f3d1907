import { splitDestinationId } from '../../domain/ids';
import { ownedCounts } from '../../domain/intake/intake-ownership';
import { addTallies, EMPTY_TALLY, IntakeTally, sameTally, tallyOf } from '../../domain/intake/intake-tally';
import { ExpectedDelivery, expectedDeliveries, expectedInRuns, IntakeBatch, recoveredRecord, Routing } from '../../domain/intake/intake';
import { forEachLimited } from '../support/for-each-limited';
import { ReconcileDeps } from './reconcile-deps';
import { LaneActivity } from './lane-activity';
import { RoundBudget } from './round-budget';

/** Deliveries per run: read together, created together, then the batch's progress written (a write per this many). */
export const RUN_RECORDS = 250;
/** Creates in flight at once per batch (CONCURRENCY batches at a time). */
const CREATE_CONCURRENCY = 32;

export type DestinationsFor = Routing;

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
  // Every destination's lane still moving: wait, without an aggregation (the round's found records
  // missing: under a backlog each batch's would, and each costs a scan of every record's index
  // entries on the emulator). One complete already is removed in a later round.
  if (activity && (await Promise.all(plan.destinationIds.map((id) => activity.busy(id)))).every(Boolean)) return { recovered, outcome: 'postponed' };
  // The common case costs an aggregation: the expected records, and only they, carry this batch's
  // id. A batch with progress kept is known to be short: on from there at once.
  if (batch.progress === undefined && sameTally(await deps.deliveries.tallyFromIntake(batch.id, plan.destinationIds, plan.tally), plan.tally)) return { recovered, outcome: 'done', exact: true };
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
  /** The deliveries it counts, per account: the records it owns (domain/intake/intake-ownership.ts). */
  deliveries: Record<string, number>;
  /** Its events another batch counts (indexes into its events). */
  resent: number[];
  /** Records carrying a never-journaled intake's id that it counts (ReconciledBatch.adopted). */
  adopted: string[];
}

/**
 * What a finished batch counts: its expected deliveries, and every event, when they were found
 * exactly (`exact`) or all carry its id by now. Else, on this rare path, who owns each record
 * (domain/intake/intake-ownership.ts): a read per record for the intake it carries, then whether
 * those other intakes were journaled, and whether a record of one that never was is adopted already.
 */
export async function countedOnRemoval(
  deps: Pick<ReconcileDeps, 'deliveries' | 'intake'>,
  plan: BatchPlan,
  destinationsFor: DestinationsFor,
  exact: boolean,
  /** Records batches of this round adopt (delivery id → batch): removed in one commit, two batches of a round must not both adopt one. */
  roundAdopted: Map<string, string> = new Map(),
): Promise<BatchCounts> {
  // Exact, or all found carrying its id now (the reconciler's own recoveries do): one aggregation, no read per record.
  if (exact || sameTally(await deps.deliveries.tallyFromIntake(plan.batch.id, plan.destinationIds, plan.tally), plan.tally)) return { deliveries: plan.byAccount, resent: [], adopted: [] };
  const expected = expectedDeliveries(plan.batch, destinationsFor);
  const intakeOf = await deps.deliveries.intakesOf(expected.map((e) => e.deliveryId));
  const others = [...new Set(intakeOf.values())].filter((id) => id !== plan.batch.id);
  const journaled = others.length > 0 ? await deps.intake.journaled(others) : new Set<string>();
  const orphans = expected.filter((e) => { const id = intakeOf.get(e.deliveryId); return id !== undefined && id !== plan.batch.id && !journaled.has(id); });
  const adoptedBy = orphans.length > 0 ? await deps.intake.adoptedBy(orphans.map((e) => e.deliveryId)) : new Map<string, string>();
  // No await from here to the claims: batches of the round counted at once see each other's.
  for (const e of orphans) {
    const by = roundAdopted.get(e.deliveryId);
    if (by !== undefined && !adoptedBy.has(e.deliveryId)) adoptedBy.set(e.deliveryId, by);
  }
  const owned = ownedCounts(plan.batch.id, expected, { intakeOf, journaled, adoptedBy }, Object.keys(plan.byAccount));
  for (const id of owned.adopted) roundAdopted.set(id, plan.batch.id);
  const expects = new Set(expected.map((e) => e.event));
  return {
    deliveries: owned.deliveries,
    resent: plan.batch.events.flatMap((event, i) => (expects.has(event) && owned.resentEvents.has(event) ? [i] : [])),
    adopted: owned.adopted,
  };
}
