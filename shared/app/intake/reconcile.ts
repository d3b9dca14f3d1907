import { DeliveryLogHead } from '../destinations/delivery-log-head';
import { transition } from '../../domain/retry/delivery-state';
import { addTallies, EMPTY_TALLY, IntakeTally, sameTally, tallyOf } from '../../domain/intake/intake-tally';
import { ExpectedDelivery, expectedInRuns, IntakeBatch, laneMoving, mayWaitForLanes, recoveredRecord, RoutableDestination, SkipPostponed, skipAfterPostponed } from '../../domain/intake/intake';
import { eventAccount } from '../../domain/access/account';
import { laneBehind } from '../../domain/intake/lane-backlog';
import { Clock, DeliveryStore, IntakeStore, LaneMarks, Logger, MessageBus, RateLeaseStore } from '../../ports';
import { sendDeadLetter } from '../lanes/dead-letter';
import { DestinationDirectory } from '../destinations/destination-directory';
import { forEachLimited } from '../support/for-each-limited';
import { EventTypeCatalogue } from '../destinations/event-type-samples';
import { errorMessage } from '../../domain/error-message';

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
 */
export interface ReconcileDeps {
  intake: IntakeStore;
  deliveries: DeliveryStore;
  directory: DestinationDirectory;
  bus: MessageBus;
  deadLetterTopic: string;
  clock: Clock;
  log: Logger;
  /** A batch is reconciled once it is this old: longer than Pub/Sub takes to deliver it when all is well. */
  graceMs: number;
  /** Batches (and owed dead letters) taken per round. */
  batchLimit: number;
  /** Each destination's rate controller: when a sender last leased tells whether its lane is moving. */
  rateLeases: RateLeaseStore;
  /**
   * When each lane was last seen behind (domain/intake/lane-backlog.ts), and a destination's lanes: a
   * destination under the unleased allowance leases nothing, and on a shared lane backed up by
   * its neighbours its missing record is late, not lost. Absent: rate leases alone.
   */
  laneMarks?: LaneMarks;
  lanesOf?: (destination: { id: string; lane?: string; batch?: object }) => string[];
  /** Kept between rounds (one per process). */
  state: ReconcilerState;
  /** A recovered record goes into its destination's log head (domain/delivery/recent-log.ts) as deliver's do. */
  logHead?: Pick<DeliveryLogHead, 'created'>;
  /** The Event types page, kept from the batches each round reads (it never rejects, nor fails the round). */
  catalogue?: Pick<EventTypeCatalogue, 'observe'>;
  /** A round starts no run of recovery after this long (ms); default ROUND_MS. */
  roundMs?: number;
  /** Nor once it has created this many records; default ROUND_RECORDS. */
  roundRecords?: number;
}

export interface ReconcilerState {
  /**
   * Batches postponed (their lanes still moving) are left alone until `until` (epoch ms): the
   * rounds before then look only at batches accepted after `through`, rather than read the
   * same postponed batches again each round while the lanes drain.
   */
  skip?: SkipPostponed;
  /**
   * The last round ran out of budget with batches unfinished: the next takes only
   * BEHIND_BATCHES, the oldest (those it will work on), rather than read 100 whole batches each
   * round of a long recovery.
   */
  behind?: boolean;
}

export interface ReconcileReport {
  /** Intake batches reconciled (and removed). */
  batches: number;
  /** Batches left for a later round: their missing deliveries are for destinations still being delivered to. */
  postponed: number;
  /** Deliveries they should have led to. */
  expected: number;
  /** Of those, found without a record and created PENDING. */
  recovered: number;
  /** Owed dead letters published. */
  deadLetters: number;
  /** Batches the round's budget left part-way or untouched (their progress kept): the next round goes on. Absent when none. */
  unfinished?: number;
}

const CONCURRENCY = 4;
/** A round's budget, well inside the pump run it shares (PUMP_RUN_SECONDS, 55 s): several rounds fit in one. */
export const ROUND_MS = 10_000;
export const ROUND_RECORDS = 5_000;
/** Deliveries per run: read together, created together, then the batch's progress written (a write per this many). */
export const RUN_RECORDS = 250;
/** Batches a round takes while a recovery is behind (ReconcilerState.behind): a round works about this many. */
const BEHIND_BATCHES = 2 * CONCURRENCY;
/** Creates in flight at once per batch (CONCURRENCY batches at a time). */
const CREATE_CONCURRENCY = 32;
const DEAD_LETTER_GRACE_MS = 60_000;
/** How long a round waits at its end for the Event types catalogue (app/destinations/event-type-samples.ts) it started. */
const CATALOGUE_WAIT_MS = 10_000;
/** Whether destinations are being delivered to now, read once per round from their rate controllers. */
class LaneActivity {
  private readonly seen = new Map<string, Promise<boolean>>();
  private marks?: Promise<Map<string, number>>;

  constructor(
    private readonly deps: ReconcileDeps,
    private readonly now: number,
    /** The lanes of each destination of the round. */
    private readonly lanes: ReadonlyMap<string, readonly string[]>,
  ) {}

  busy(destinationId: string): Promise<boolean> {
    let busy = this.seen.get(destinationId);
    if (!busy) {
      busy = this.laneBehind(destinationId).then(
        async (behind) => behind || laneMoving(Object.values((await this.deps.rateLeases.peek(destinationId))?.holders ?? {}), this.now, this.deps.graceMs),
      );
      this.seen.set(destinationId, busy);
    }
    return busy;
  }

  /** Whether one of the destination's lanes was seen behind lately: every lane of the round read at once, the first time one is asked. */
  private async laneBehind(destinationId: string): Promise<boolean> {
    const { laneMarks } = this.deps;
    if (!laneMarks) return false;
    this.marks ??= laneMarks.read([...new Set([...this.lanes.values()].flat())]).catch((e: unknown) => {
      this.deps.log.warn('reading lane marks failed; the round judges lanes by rate leases alone', { error: errorMessage(e) });
      return new Map<string, number>();
    });
    const marks = await this.marks;
    return (this.lanes.get(destinationId) ?? []).some((lane) => laneBehind(marks.get(lane), this.now, this.deps.graceMs));
  }
}

/**
 * What a round may still do: a run starts only before the deadline (Date.now(), epoch ms) and
 * while fewer than `records` are taken. A run takes its records as it starts (before its first
 * await, so batches worked side by side cannot all pass the check at once) and gives back those
 * it finds: a round creates at most one run more than `records`. No create starts past the
 * deadline either: a run cut short keeps its progress up to the first event whose record was
 * not attempted, and the round ends within a create's time of its deadline — or of its first
 * run, which always goes whole (a round always moves the recovery on).
 */
class RoundBudget {
  private taken = 0;
  private runs = 0;

  constructor(
    private readonly deadline: number,
    private readonly records: number,
  ) {}

  /**
   * Whether a run may start (counted when it does). A round's first run always may: a round whose
   * reads alone outlast its budget (an overloaded process) still moves the recovery on.
   */
  startRun(): { first: boolean } | undefined {
    if (this.runs > 0 && !(this.inTime() && this.taken < this.records)) return undefined;
    return { first: this.runs++ === 0 };
  }

  /** Whether any run may still start (without starting one). */
  open(): boolean {
    return this.runs === 0 || (this.inTime() && this.taken < this.records);
  }

  inTime(): boolean {
    return Date.now() < this.deadline;
  }

  msLeft(): number {
    return Math.max(0, this.deadline - Date.now());
  }

  take(records: number): void {
    this.taken += records;
  }

  giveBack(records: number): void {
    this.taken -= records;
  }
}

type DestinationsFor = (type: string, account: string) => readonly RoutableDestination[];
type LanedDestination = RoutableDestination & { lane?: string; batch?: object };

/**
 * The destinations each (account, type) of the batches goes to, taken while the directory holds
 * their accounts: a few per pair, where the expected deliveries are events × fan-out. And the
 * lanes of each (`lanesOf`), for telling a late delivery from a lost one.
 */
function targetsOf(batches: readonly IntakeBatch[], matching: (type: string, account: string) => readonly LanedDestination[], lanesOf?: ReconcileDeps['lanesOf']): { destinationsFor: DestinationsFor; lanes: Map<string, readonly string[]> } {
  const targets = new Map<string, RoutableDestination[]>();
  const lanes = new Map<string, readonly string[]>();
  for (const batch of batches) {
    for (const event of batch.events) {
      const account = eventAccount(event.attributes);
      const key = `${account}\n${event.attributes.type}`;
      if (targets.has(key)) continue;
      const found = matching(event.attributes.type, account);
      targets.set(key, found.map((d) => ({ id: d.id, eventTypes: d.eventTypes, createdAt: d.createdAt })));
      if (lanesOf) for (const d of found) if (!lanes.has(d.id)) lanes.set(d.id, lanesOf(d));
    }
  }
  return { destinationsFor: (type, account) => targets.get(`${account}\n${type}`) ?? [], lanes };
}

/** What a batch's expected deliveries come to, worked out run by run (never held whole). */
interface BatchPlan {
  batch: IntakeBatch;
  count: number;
  tally: IntakeTally;
  destinationIds: string[];
}

function planOf(batch: IntakeBatch, destinationsFor: DestinationsFor): BatchPlan {
  let tally = EMPTY_TALLY;
  const destinations = new Set<string>();
  for (const run of expectedInRuns(batch, destinationsFor, 0, RUN_RECORDS)) {
    tally = addTallies(tally, tallyOf(run.expected.map((e) => e.deliveryId)));
    for (const e of run.expected) destinations.add(e.destinationId);
  }
  return { batch, count: tally.count, tally, destinationIds: [...destinations] };
}

/** How many batches the next round takes. */
function batchesTaken(deps: ReconcileDeps): number {
  return deps.state.behind ? Math.min(deps.batchLimit, BEHIND_BATCHES) : deps.batchLimit;
}

/**
 * One round, bounded (ReconcileDeps.roundMs, roundRecords) and never past `until` (epoch ms,
 * Date.now()) when given.
 */
export async function reconcileOnce(deps: ReconcileDeps, until = Infinity): Promise<ReconcileReport> {
  const report: ReconcileReport = { batches: 0, postponed: 0, expected: 0, recovered: 0, deadLetters: 0 };
  const budget = new RoundBudget(Math.min(until, Date.now() + (deps.roundMs ?? ROUND_MS)), deps.roundRecords ?? ROUND_RECORDS);
  let unfinished = 0;
  const now = deps.clock.now().getTime();
  if (deps.state.skip && deps.state.skip.until <= now) delete deps.state.skip;
  const batches = await deps.intake.due(new Date(now - deps.graceMs), batchesTaken(deps), deps.state.skip?.through);
  const catalogued = batches.length > 0 ? deps.catalogue?.observe(batches) : undefined;
  if (batches.length > 0) {
    const accounts = batches.flatMap((b) => b.events.map((e) => eventAccount(e.attributes)));
    const { destinationsFor, lanes } = await deps.directory.withAccounts(accounts, (matching) => targetsOf(batches, matching, deps.lanesOf));
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
    const postponed: string[] = [];
    if (complete || owed === 0) {
      done.push(...ids);
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
        done.push(batch.id);
      });
    }
    if (done.length > 0) await deps.intake.remove(done);
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

/**
 * Creates the records a batch is missing, run by run from its kept progress while the round's
 * budget lasts: `postponed` when `activity` says a destination with a missing record is still
 * being delivered to, `unfinished` when the budget ran out first.
 */
async function recoverMissing(
  deps: ReconcileDeps,
  plan: BatchPlan,
  destinationsFor: DestinationsFor,
  activity: LaneActivity | undefined,
  budget: RoundBudget,
): Promise<{ recovered: number; outcome: 'done' | 'postponed' | 'unfinished' }> {
  const { batch } = plan;
  let recovered = 0;
  if (plan.count === 0) return { recovered, outcome: 'done' };
  // The common case costs an aggregation: the expected records, and only they, carry this batch's
  // id. A batch with progress kept is known to be short: on from there at once.
  if (batch.progress === undefined && sameTally(await deps.deliveries.tallyFromIntake(batch.id, plan.destinationIds, plan.tally), plan.tally)) return { recovered, outcome: 'done' };
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
