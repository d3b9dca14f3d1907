import { DeliveryLogHead } from './delivery-log-head';
import { transition } from '../domain/delivery-state';
import { sameTally, tallyOf } from '../domain/intake-tally';
import { ExpectedDelivery, expectedDeliveries, IntakeBatch, laneMoving, mayWaitForLanes, recoveredRecord, SkipPostponed, skipAfterPostponed } from '../domain/intake';
import { Clock, DeliveryStore, IntakeStore, Logger, MessageBus, RateLeaseStore } from '../ports';
import { sendDeadLetter } from './dead-letter';
import { DestinationDirectory } from './destination-directory';
import { forEachLimited } from './for-each-limited';
import { EventTypeCatalogue } from './event-type-samples';

/**
 * The backstop behind Pub/Sub: what ingest accepted is matched, once its grace has passed,
 * against the delivery records it should have led to, and a delivery with no record is
 * created PENDING (the retry pump sends it); a DEAD delivery whose dead letter is still owed
 * gets it. Whatever Pub/Sub or a dying process did with the messages, an accepted event ends
 * with a record for every destination it was meant for.
 *
 * Cost, per round of up to `batchLimit` intake batches (each of one or many events): the query
 * that finds them (one read per batch), one aggregation over the round's batch ids (one read
 * per 1,000 records; domain/intake-tally.ts: their count and the sum of their ids' hashes, so
 * extra records cannot stand for missing ones) and one request that deletes them (one delete
 * per batch). Only when that tally differs from the expected one is each batch tallied on its
 * own, and only a batch that still differs reads its expected records one by one.
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
  /** Kept between rounds (one per process). */
  state: ReconcilerState;
  /** A recovered record goes into its destination's log head (domain/recent-log.ts) as deliver's do. */
  logHead?: Pick<DeliveryLogHead, 'created'>;
  /** The Event types page, kept from the batches each round reads (it never rejects, nor fails the round). */
  catalogue?: Pick<EventTypeCatalogue, 'observe'>;
}

export interface ReconcilerState {
  /**
   * Batches postponed (their lanes still moving) are left alone until `until` (epoch ms): the
   * rounds before then look only at batches accepted after `through`, rather than read the
   * same postponed batches again each round while the lanes drain.
   */
  skip?: SkipPostponed;
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
}

const CONCURRENCY = 4;
const DEAD_LETTER_GRACE_MS = 60_000;
/** How long a round waits at its end for the Event types catalogue (app/event-type-samples.ts) it started. */
const CATALOGUE_WAIT_MS = 10_000;
/** Whether destinations are being delivered to now, read once per round from their rate controllers. */
class LaneActivity {
  private readonly seen = new Map<string, Promise<boolean>>();

  constructor(
    private readonly deps: ReconcileDeps,
    private readonly now: number,
  ) {}

  busy(destinationId: string): Promise<boolean> {
    let busy = this.seen.get(destinationId);
    if (!busy) {
      busy = this.deps.rateLeases.peek(destinationId).then((doc) => laneMoving(Object.values(doc?.holders ?? {}), this.now, this.deps.graceMs));
      this.seen.set(destinationId, busy);
    }
    return busy;
  }
}

export async function reconcileOnce(deps: ReconcileDeps): Promise<ReconcileReport> {
  const report: ReconcileReport = { batches: 0, postponed: 0, expected: 0, recovered: 0, deadLetters: 0 };
  const now = deps.clock.now().getTime();
  if (deps.state.skip && deps.state.skip.until <= now) delete deps.state.skip;
  const batches = await deps.intake.due(new Date(now - deps.graceMs), deps.batchLimit, deps.state.skip?.through);
  const catalogued = batches.length > 0 ? deps.catalogue?.observe(batches) : undefined;
  if (batches.length > 0) {
    const index = await deps.directory.current();
    const planned = batches.map((batch) => ({ batch, expected: expectedDeliveries(batch, (type, account) => index.matching(type, account)) }));
    const owed = planned.reduce((n, p) => n + p.expected.length, 0);
    const ids = batches.map((b) => b.id).sort();
    // The common case costs one aggregation for the whole round: the records of these batches
    // are exactly those expected. Anything else (short, extra records, or a record written by an
    // earlier intake of the same event) is looked at batch by batch.
    const complete = owed > 0 && sameTally(await deps.deliveries.tallyFromIntakes(ids), tallyOf(planned.flatMap((p) => p.expected.map((e) => e.deliveryId))));
    const done: string[] = [];
    const postponed: string[] = [];
    if (complete || owed === 0) {
      done.push(...ids);
      report.expected += owed;
    } else {
      const activity = new LaneActivity(deps, now);
      await forEachLimited(planned, CONCURRENCY, async ({ batch, expected }) => {
        const recovered = await recoverMissing(deps, batch, expected, mayWaitForLanes(batch.acceptedAt, now, deps.graceMs) ? activity : undefined);
        if (recovered === 'postponed') {
          report.postponed++;
          postponed.push(batch.acceptedAt);
          return;
        }
        report.expected += expected.length;
        report.recovered += recovered;
        done.push(batch.id);
      });
    }
    if (done.length > 0) await deps.intake.remove(done);
    report.batches = done.length;
    const skip = skipAfterPostponed(deps.state.skip, postponed, now, deps.graceMs);
    if (skip) deps.state.skip = skip;
  }
  // Bounded: a catalogue write that hangs finishes in the background, never holding the round.
  if (catalogued) await Promise.race([catalogued, new Promise((r) => setTimeout(r, CATALOGUE_WAIT_MS).unref())]);
  // A dead letter is published a moment after its record is written: one owed for a minute was dropped.
  report.deadLetters = await sendOwedDeadLetters(deps, new Date(deps.clock.now().getTime() - Math.min(deps.graceMs, DEAD_LETTER_GRACE_MS)));
  if (report.batches > 0 || report.postponed > 0 || report.deadLetters > 0) deps.log.debug('reconciler round', { ...report });
  return report;
}

/**
 * Creates the records a batch is missing; resolves how many, or `postponed` when `activity`
 * says a destination with a missing record is still being delivered to.
 */
async function recoverMissing(deps: ReconcileDeps, batch: IntakeBatch, expected: readonly ExpectedDelivery[], activity: LaneActivity | undefined): Promise<number | 'postponed'> {
  if (expected.length === 0) return 0;
  const destinationIds = [...new Set(expected.map((e) => e.destinationId))];
  // The common case costs an aggregation: the expected records, and only they, carry this batch's id.
  if (sameTally(await deps.deliveries.tallyFromIntake(batch.id, destinationIds), tallyOf(expected.map((e) => e.deliveryId)))) return 0;
  // Every destination's lane still moving: wait, without reading the records one by one.
  if (activity && (await Promise.all(destinationIds.map((id) => activity.busy(id)))).every(Boolean)) return 'postponed';
  // Short, extra records, or a record written by an earlier intake of the same event: look at each.
  const found = await deps.deliveries.existing(expected.map((e) => e.deliveryId));
  const missing = expected.filter((x) => !found.has(x.deliveryId));
  if (activity) {
    const busy = await Promise.all([...new Set(missing.map((m) => m.destinationId))].map((id) => activity.busy(id)));
    if (busy.some(Boolean)) return 'postponed';
  }
  let recovered = 0;
  for (const e of missing) {
    const record = recoveredRecord(e, batch, deps.clock.now());
    // Create-if-absent: a first attempt recorded meanwhile wins, and nothing is sent twice by this.
    if (await deps.deliveries.create(record, { unlessGrouped: true })) {
      recovered++;
      if (record.publishedAt !== undefined) deps.logHead?.created(record.destinationId, record.id, record.publishedAt, deps.clock.now());
      deps.log.warn('an accepted event never reached its destination\'s lane or was never attempted: recovered, PENDING for the retry pump', {
        eventId: record.eventId,
        eventSource: record.eventSource,
        destinationId: record.destinationId,
        deliveryId: record.id,
        intake: batch.id,
        acceptedAt: batch.acceptedAt,
      });
    }
  }
  return recovered;
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

/** Reconciler rounds until one is not full or `untilMs` has passed (one round at least): the scheduled pump's first step. */
export async function reconcileBacklog(deps: ReconcileDeps, untilMs: number): Promise<ReconcileReport> {
  const start = Date.now();
  const total: ReconcileReport = { batches: 0, postponed: 0, expected: 0, recovered: 0, deadLetters: 0 };
  for (;;) {
    const round = await reconcileOnce(deps);
    for (const k of Object.keys(total) as (keyof ReconcileReport)[]) total[k] += round[k];
    if ((round.batches + round.postponed < deps.batchLimit && round.deadLetters < deps.batchLimit) || round.batches === 0 || Date.now() - start >= untilMs) return total;
  }
}
