import { transition } from '../../domain/retry/delivery-state';
import { addTallies, EMPTY_TALLY, sameTally } from '../../domain/intake/intake-tally';
import { IntakeBatch, mayWaitForLanes, RoutableDestination, skipAfterPostponed } from '../../domain/intake/intake';
import { eventAccount } from '../../domain/access/account';
import { sendDeadLetter } from '../lanes/dead-letter';
import { forEachLimited } from '../support/for-each-limited';
import { ReconcileDeps, ReconcileReport } from './reconcile-deps';
import { LaneActivity } from './lane-activity';
import { RoundBudget } from './round-budget';
import { BatchCounts, countedOnRemoval, DestinationsFor, planOf, recoverMissing } from './batch-recovery';
import { inReconcileSpan } from '../tracing/spans';
import { DestinationFilters, UNCOUNTED_FILTERS } from '../destinations/destination-filters';
import type { HeraldEvent } from '../../domain/events/event';

const CONCURRENCY = 4;
/** A round's budget, well inside the pump run it shares (PUMP_RUN_SECONDS, 55 s): several rounds fit in one. */
export const ROUND_MS = 10_000;
export const ROUND_RECORDS = 5_000;
/** Batches a round takes while a recovery is behind (ReconcilerState.behind): a round works about this many. */
const BEHIND_BATCHES = 2 * CONCURRENCY;
const DEAD_LETTER_GRACE_MS = 60_000;
/** How long a round waits at its end for the Event types catalogue (app/destinations/event-type-samples.ts) it started. */
const CATALOGUE_WAIT_MS = 10_000;

type LanedDestination = RoutableDestination & { lane?: string; batch?: object; filter?: string };

/**
 * The destinations each (account, type) of the batches goes to, taken while the directory holds
 * their accounts: a few per pair, where the expected deliveries are events × fan-out. And the
 * lanes of each (`lanesOf`), for telling a late delivery from a lost one.
 */
function targetsOf(batches: readonly IntakeBatch[], matching: (type: string, account: string) => readonly LanedDestination[], lanesOf?: ReconcileDeps['lanesOf'], filters: Pick<DestinationFilters, 'takes'> = UNCOUNTED_FILTERS, exists: (id: string) => boolean = () => true): { destinationsFor: DestinationsFor; lanes: Map<string, readonly string[]> } {
  const targets = new Map<string, RoutableDestination[]>();
  const lanes = new Map<string, readonly string[]>();
  // Of the destinations a batch lane took events for by reference, those that still exist (asked now, while their accounts are held).
  const existing = new Set(batches.flatMap((b) => Object.keys(b.refs ?? {})).filter(exists));
  for (const batch of batches) {
    for (const event of batch.events) {
      const account = eventAccount(event.attributes);
      const key = `${account}\n${event.attributes.type}`;
      if (targets.has(key)) continue;
      const found = matching(event.attributes.type, account);
      // A filtering destination expects only the events its filter takes: routing created nothing for the others.
      targets.set(key, found.map((d) => ({ id: d.id, eventTypes: d.eventTypes, createdAt: d.createdAt, ...(d.filter !== undefined ? { takes: (e: HeraldEvent) => filters.takes(d, e) } : {}) })));
      if (lanesOf) for (const d of found) if (!lanes.has(d.id)) lanes.set(d.id, lanesOf(d));
    }
  }
  const destinationsFor: DestinationsFor = Object.assign((type: string, account: string) => targets.get(`${account}\n${type}`) ?? [], { exists: (id: string) => existing.has(id) });
  return { destinationsFor, lanes };
}

/** How many batches the next round takes. */
function batchesTaken(deps: ReconcileDeps): number {
  return deps.state.behind ? Math.min(deps.batchLimit, BEHIND_BATCHES) : deps.batchLimit;
}

/**
 * The backstop behind Pub/Sub: what ingest accepted is matched, once its grace has passed,
 * against the delivery records it should have led to, and a delivery with no record is
 * created PENDING (the retry pump sends it); a DEAD delivery whose dead letter is still owed
 * gets it. Whatever Pub/Sub or a dying process did with the messages, an accepted event ends
 * with a record for every destination it was meant for.
 *
 * Cost, per round of up to `batchLimit` intake batches (each of one or many events): the query
 * that finds them (one read per batch), one aggregation over the round's batch ids (one read
 * per 1,000 records; domain/intake/intake-tally.ts: their count and the sum of their ids' hashes, so
 * extra records cannot stand for missing ones) and one request that deletes them (one delete
 * per batch). Only when that tally differs from the expected one is each batch tallied on its
 * own, and only a batch that still differs reads its expected records one by one.
 *
 * A large recovery (a lane lost for an hour: 50,000 records) is worked in runs of whole events
 * (RUN_RECORDS deliveries each), their missing records created CREATE_CONCURRENCY at a time,
 * and bounded per round: no run starts past `roundMs` or once `roundRecords` records were
 * created. The batch keeps its progress (one write per run), so the next round — in this
 * process or another, after a kill — goes on from there; it is deleted only once every record exists.
 *
 * One round, bounded (ReconcileDeps.roundMs, roundRecords) and never past `until` (epoch ms,
 * Date.now()) when given.
 */
export const reconcileOnce = (deps: ReconcileDeps, until = Infinity) => inReconcileSpan(() => reconcileRound(deps, until));

async function reconcileRound(deps: ReconcileDeps, until: number): Promise<ReconcileReport> {
  const report: ReconcileReport = { batches: 0, postponed: 0, expected: 0, recovered: 0, deadLetters: 0 };
  const budget = new RoundBudget(Math.min(until, Date.now() + (deps.roundMs ?? ROUND_MS)), deps.roundRecords ?? ROUND_RECORDS);
  let unfinished = 0;
  const now = deps.clock.now().getTime();
  if (deps.state.skip && deps.state.skip.until <= now) delete deps.state.skip;
  const batches = await deps.intake.due(new Date(now - deps.graceMs), batchesTaken(deps), deps.state.skip?.through);
  const catalogued = batches.length > 0 ? deps.catalogue?.observe(batches) : undefined;
  if (batches.length > 0) {
    const accounts = batches.flatMap((b) => b.events.map((e) => eventAccount(e.attributes)));
    const { destinationsFor, lanes } = await deps.directory.withAccounts(accounts, (matching, exists) => targetsOf(batches, matching, deps.lanesOf, deps.filters, exists));
    const planned = batches.map((batch) => planOf(batch, destinationsFor));
    const owed = planned.reduce((n, p) => n + p.count, 0);
    const ids = batches.map((b) => b.id).sort();
    // The common case costs one aggregation for the whole round: the records of these batches
    // are exactly those expected. Anything else (short, extra records, or a record written by an
    // earlier intake of the same event) is looked at batch by batch.
    // While a recovery is behind, it would differ: straight to the batches.
    const expected = planned.map((p) => p.tally).reduce(addTallies, EMPTY_TALLY);
    const complete = owed > 0 && !deps.state.behind && sameTally(await deps.deliveries.tallyFromIntakes(ids, expected), expected);
    const done: string[] = [];
    /** Each finished batch's deliveries per account and resent events, counted in usage with its removal. */
    const counted = new Map<string, BatchCounts>();
    const adopted = new Map<string, string>();
    const postponed: string[] = [];
    if (complete || owed === 0) {
      done.push(...ids);
      for (const p of planned) counted.set(p.batch.id, { deliveries: p.byAccount, resent: [], adopted: [] });
      report.expected += owed;
    } else {
      const activity = new LaneActivity(deps, now, lanes);
      await forEachLimited(planned, CONCURRENCY, async (plan) => {
        const { batch } = plan;
        if (!budget.open()) {
          unfinished++;
          return;
        }
        const result = await recoverMissing(deps, plan, destinationsFor, mayWaitForLanes(batch.acceptedAt, now, deps.graceMs) ? activity : undefined, budget);
        report.recovered += result.recovered;
        deps.metrics?.add('recovered', result.recovered);
        if (result.outcome === 'postponed') {
          report.postponed++;
          postponed.push(batch.acceptedAt);
          return;
        }
        if (result.outcome === 'unfinished') {
          unfinished++;
          return;
        }
        report.expected += plan.count;
        counted.set(batch.id, await countedOnRemoval(deps, plan, destinationsFor, result.exact === true, adopted));
        done.push(batch.id);
      });
    }
    if (done.length > 0) await deps.intake.remove(batches.filter((b) => done.includes(b.id)).map((b) => ({ ...b, deliveries: counted.get(b.id)?.deliveries ?? {}, resent: counted.get(b.id)?.resent ?? [], adopted: counted.get(b.id)?.adopted ?? [] })));
    report.batches = done.length;
    const skip = skipAfterPostponed(deps.state.skip, postponed, now, deps.graceMs);
    if (skip) deps.state.skip = skip;
  }
  // Bounded: a catalogue write that hangs finishes in the background, never holding the round.
  if (catalogued) await Promise.race([catalogued, new Promise((r) => setTimeout(r, Math.min(CATALOGUE_WAIT_MS, budget.msLeft())).unref())]);
  // A dead letter is published a moment after its record is written: one owed for a minute was dropped.
  report.deadLetters = await sendOwedDeadLetters(deps, new Date(deps.clock.now().getTime() - Math.min(deps.graceMs, DEAD_LETTER_GRACE_MS)));
  if (unfinished > 0) report.unfinished = unfinished;
  if (unfinished > 0) deps.state.behind = true;
  else delete deps.state.behind;
  if (report.batches > 0 || report.postponed > 0 || report.deadLetters > 0 || unfinished > 0) deps.log.debug('reconciler round', { ...report });
  return report;
}

/** Dead letters whose publish did not happen (the process died, Pub/Sub failed) since before `cutoff`. */
async function sendOwedDeadLetters(deps: ReconcileDeps, cutoff: Date): Promise<number> {
  const ids = await deps.deliveries.deadLettersOwed(cutoff, deps.batchLimit);
  let sent = 0;
  await forEachLimited(ids, CONCURRENCY, async (id) => {
    const record = await deps.deliveries.get(id);
    if (record?.status !== 'DEAD' || record.deadLetterDueAt === undefined) return;
    if (!record.event) {
      // Nothing to publish (a record that never held its event): the mark goes, or it would come back every round.
      await deps.deliveries.update(id, (current) => {
        const next = current && transition(current, { type: 'dead-lettered' });
        return next?.ok ? next.state : undefined;
      });
      deps.log.error('a DEAD delivery owes a dead letter but holds no event to put in it', { eventId: record.eventId, destinationId: record.destinationId, deliveryId: id });
      return;
    }
    if (await sendDeadLetter(deps, record.event, record)) {
      sent++;
      deps.log.warn('an owed dead letter was published by the reconciler', { eventId: record.eventId, destinationId: record.destinationId, deliveryId: record.id });
    }
  });
  return sent;
}

/**
 * Reconciler rounds while there is more (a full or unfinished round that got somewhere) and
 * `untilMs` has not passed, each bounded by its budget and by `untilMs` (0: one round, bounded
 * by its own budget). The scheduled pump runs it beside the retry pump (app/retry/pump-run.ts), not before it.
 */
export async function reconcileBacklog(deps: ReconcileDeps, untilMs: number): Promise<ReconcileReport> {
  const start = Date.now();
  const end = start + (untilMs > 0 ? untilMs : (deps.roundMs ?? ROUND_MS));
  const total: ReconcileReport = { batches: 0, postponed: 0, expected: 0, recovered: 0, deadLetters: 0 };
  for (;;) {
    const taken = batchesTaken(deps);
    const round = await reconcileOnce(deps, end);
    for (const k of ['batches', 'postponed', 'expected', 'recovered', 'deadLetters'] as const) total[k] += round[k];
    if (round.unfinished) total.unfinished = round.unfinished;
    else delete total.unfinished;
    const more = round.batches + round.postponed >= taken || round.deadLetters >= deps.batchLimit || (round.unfinished ?? 0) > 0;
    const moved = round.batches > 0 || round.recovered > 0 || round.deadLetters > 0;
    if (!more || !moved || untilMs <= 0 || Date.now() >= end) return total;
  }
}
