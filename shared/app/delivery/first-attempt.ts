import { mayMeetRecovered } from '../../domain/intake/intake';
import { DeliveryRecord } from '../../domain/retry/delivery';
import { resultFields } from '../../domain/delivery/attempt-request';
import { firstRecord, isOwnWrite } from '../../domain/delivery/delivery-record';
import { Transition } from '../../domain/retry/delivery-state';
import { AfterRedelivery, afterRedeliveredSend, readsBeforeFirstSend, RedeliveredSend, writtenBefore } from '../../domain/delivery/redelivered-push';
import { NO_HISTORY } from '../../domain/retry/retry-decision';
import { UnrecordedSend } from '../../domain/delivery/unrecorded-sends';
import { afterOutcome, attempt, AttemptRecords, logged, reported } from './attempt';
import { DeliverDeps, DeliverOutcome, RECORD_RETRY, Target } from './delivery-context';
import { retryOnOverload } from '../support/overload-retry';
import { createRecord, landed } from './record-create';
import { errorMessage } from '../../domain/error-message';
import { pushVerdict, RecordError } from './push-verdict';

/**
 * The first attempt reads nothing and writes at most one document: no claim is written
 * before it (docs/delivery-guarantees.md). Its record is created only if there is none: one found
 * there means this push was a redelivery (a lost ack, a producer's resend, a lane message later
 * than the reconciler) or ran beside a copy, and the send made anyway is settled against it
 * (redelivered): a duplicate recorded on a DELIVERED delivery, a waiting retry DELIVERED by its
 * success; never a second dead letter or a step backwards. A success that ends together with
 * others on this instance is instead a member of their group (DeliveryStore.addDelivered: a
 * share of one write), unchecked: a redelivery sent again is then found twice and every view
 * shows it once, a duplicate (domain/delivery/grouped-outcomes.ts).
 *
 * A push that production Pub/Sub says is a redelivery (`deliveryAttempt` > 1; the emulator
 * sends none), or of an event its producer says it resends (`Herald-Resend`), reads first
 * instead, before its turn (DeliveryLimiter: BeforeTurn), and is skipped when the record
 * exists: for that rare push one read costs less than a duplicate.
 *
 * A deferral costs the write alone: the record is created only if there is none, which is
 * the duplicate check (a throttled destination's whole backlog passes through here, one
 * deferral per event), nor a success grouped on this instance (in memory, no read): beside it
 * the deferral's record would stand, and the pump send the event again.
 */
export async function firstAttempt(deps: DeliverDeps, t: Target, deliveryAttempt: number | undefined): Promise<DeliverOutcome> {
  // Sent already by this instance, on an earlier push whose record write failed: recorded now, not sent again.
  const unrecorded = deps.unrecorded.take(t.id, deps.clock.now().getTime());
  if (unrecorded) return recordUnrecorded(deps, t, unrecorded);
  return attempt(deps, t, firstRecords(deps, t, deliveryAttempt));
}

/** How a first attempt's record is written: created, only if there is none. */
function firstRecords(deps: DeliverDeps, t: Target, deliveryAttempt: number | undefined): AttemptRecords {
  const { publishedAt } = t;
  const found: { record?: DeliveryRecord } = {};
  const beforeTurn = readsBeforeFirstSend(deliveryAttempt, t.resent)
    ? async () => {
        found.record = await deps.deliveries.get(t.id);
        return found.record === undefined;
      }
    : undefined;
  // The record, as whatever happens makes it: built here alone.
  const recordOf = (next: Transition, at: Date) => firstRecord(t, publishedAt, at, next);
  // Set while a send is under way: called once its success is in the group commit's queue.
  let expected: () => void = () => undefined;
  return {
    gate: beforeTurn ? { beforeTurn } : {},
    skipped: () => {
      const existing = found.record!;
      // DELIVERED, DEAD or QUEUED: done. PENDING or IN_FLIGHT: the retry engine owns it.
      deps.log.info(`duplicate lane message skipped: the delivery is ${existing.status}`, { ...t.ids, status: existing.status, deliveryAttempt });
      return { kind: 'duplicate', deliveryId: t.id, status: existing.status };
    },
    // The state machine marks it rate-deferred or backed off.
    unattempted: (next) => {
      const at = deps.clock.now();
      return recordUnattempted(deps, t, recordOf(next, at), at);
    },
    around: async (work) => {
      // A success joins the next group commit; one under way is waited for a moment by the others.
      expected = deps.deliveries.expectDelivered?.() ?? (() => undefined);
      try {
        return await work();
      } finally {
        expected();
      }
    },
    history: NO_HISTORY,
    publishedAt: () => publishedAt,
    record: (sent) => {
      const { result, decision, detail, at } = sent;
      return recordAttempted(deps, t, { ...sent, record: recordOf({ type: 'attempted', at, result, decision, detail }, at) }, expected);
    },
  };
}

/** A first attempt's outcome, created (`expected`: called before a success is grouped). */
function recordAttempted(deps: DeliverDeps, t: Target, sent: UnrecordedSend, expected: () => void): Promise<{ record: DeliveryRecord } | { ended: DeliverOutcome }> {
  const { record } = sent;
  // A success goes with the other outcomes this instance commits meanwhile: alone, a document of
  // its own, created only if none exists; among others, a group member, unchecked (a redelivery
  // sent again is then found twice and shown once, a duplicate). A failure is never created
  // beside a grouped success. A write that failed (its reply perhaps lost) is tried again checked,
  // a success too: what landed is then found (createRecord), never copied into a second group.
  const group: { id?: string } = {};
  // Late, the reconciler may have made a record of its own meanwhile: the success is then created checked too.
  const late = deps.reconcileGraceMs !== undefined && mayMeetRecovered(sent.publishedAt, deps.clock.now().getTime(), deps.reconcileGraceMs);
  const write =
    record.status === 'DELIVERED' && !late
      ? async () => {
          const adding = deps.deliveries.addDelivered(record, t.bundle?.linger);
          t.bundle?.in();
          expected();
          const added = await adding;
          if (added.created) group.id = added.group;
          return added.created;
        }
      : undefined;
  const checked = () => deps.deliveries.create(record, { unlessGrouped: true });
  // A late success is kept from the reconciler's record by the create itself, and from this instance's own group copy by memory.
  const lateSuccess = record.status === 'DELIVERED' && late ? () => deps.deliveries.create(record, { unlessGrouped: 'here' }) : undefined;
  return recordSent(deps, t, sent, write ?? lateSuccess ?? checked, group, checked);
}

/**
 * A send made on an earlier push of this delivery, on this instance, whose record could not be
 * written then (UnrecordedSends): written now, alone and checked, and ended as that push would
 * have ended it. Nothing is sent: the destination got the event once for every push of it
 * this instance took. A record found there (another instance's send, recorded) settles this
 * send against it, as a redelivery's send is settled.
 */
async function recordUnrecorded(deps: DeliverDeps, t: Target, unrecorded: UnrecordedSend): Promise<DeliverOutcome> {
  deps.log.info('lane message redelivered after its send could not be recorded: recorded now, not sent again', { ...t.ids, sentAt: unrecorded.at.toISOString() });
  const { record } = unrecorded;
  const write = async () => {
    if (await deps.deliveries.create(record, { unlessGrouped: true })) return true;
    // The earlier push's write may have landed after all, its answer lost: then this is that record.
    return landed(deps.deliveries, record);
  };
  const written = await recordSent(deps, t, unrecorded, write, {});
  if ('ended' in written) return written.ended;
  const { result, decision, at, publishedAt } = unrecorded;
  return afterOutcome(deps, t, { result, decision, at, publishedAt }, written.record);
}

/**
 * A first attempt sent (and counted as it was sent) and recorded (by `write`), to be dead-lettered:
 * a send that finds a record (a redelivery, or a concurrent copy recorded first) publishes no
 * second dead letter. A write that fails leaves the send in this instance's memory
 * (UnrecordedSends) before the push fails: Pub/Sub brings it again, and if it comes here the
 * outcome is recorded without a second send. Nothing is acked before its outcome is written.
 */
async function recordSent(deps: DeliverDeps, t: Target, sent: UnrecordedSend, write: () => Promise<boolean>, group: { id?: string }, again?: () => Promise<boolean>): Promise<{ record: DeliveryRecord } | { ended: DeliverOutcome }> {
  const { record, result, detail, at, publishedAt } = sent;
  let created: boolean;
  try {
    created = await recordAfterSend(deps, record, write, again);
  } catch (e) {
    // A record that stands acks the push: nothing is kept to be recorded on a redelivery.
    if (pushVerdict(e) === 'redeliver') deps.unrecorded.keep(t.id, sent, deps.clock.now().getTime());
    throw e;
  }
  if (created) {
    logged(deps, record, at, group.id);
    return { record };
  }
  return { ended: await redelivered(deps, t, { at, result, detail }, publishedAt) };
}

/**
 * The record of a first push already sent, created only if there is none; a try that failed and
 * landed all the same (its reply lost) is this push's record (createRecord). A create that fails
 * for another reason (after the retries for overload) is looked at once more with a plain read:
 * a record there means the push was a redelivery whose document another transaction holds
 * (on the emulator, one a killed process left open, until its lock times out, about 20 s), and
 * the push is acked (a RecordError whose record stands: push-verdict.ts) rather than failed, which
 * would send it yet again at each try.
 * No record: the failure stands and Pub/Sub brings the push again.
 */
async function recordAfterSend(deps: DeliverDeps, record: DeliveryRecord, write: () => Promise<boolean>, again?: () => Promise<boolean>): Promise<boolean> {
  try {
    return await createRecord(deps.deliveries, record, write, again);
  } catch (e) {
    const existing = await deps.deliveries.get(record.id);
    if (!existing) throw new RecordError(e);
    // This very record, written by a create whose answer was lost: created after all.
    if (isOwnWrite(existing, record)) return true;
    deps.log.warn('a redelivered lane message was sent again; its record could not be written to (held by another transaction), and stands as it was', {
      eventId: record.eventId,
      destinationId: record.destinationId,
      deliveryId: record.id,
      status: existing.status,
      error: errorMessage(e),
    });
    throw new RecordError(e, true);
  }
}

/**
 * A first push was sent and its record was there already: settled against it by the rules of
 * domain/delivery/redelivered-push.ts in one update (a read and a write, on this rare path only).
 * The send was counted when it was made, as every send is, whatever it does to the record; it
 * adds nothing to the log head (the record is in it since it was created).
 */
async function redelivered(deps: DeliverDeps, t: Target, sent: RedeliveredSend, publishedAt: string): Promise<DeliverOutcome> {
  let after: AfterRedelivery | undefined;
  const fields = { ...t.ids, ...resultFields(sent.result) };
  let written: DeliveryRecord | undefined;
  try {
    written = await retryOnOverload(
      () =>
        deps.deliveries.update(t.id, (current) => {
          // Settled already by this send (a commit whose reply was lost, run again): nothing more to write.
          const before = current && writtenBefore(current, after);
          after = before ?? (current ? afterRedeliveredSend(current, sent) : undefined);
          return after?.kind === 'left' || after?.already ? undefined : after?.record;
        }),
      RECORD_RETRY,
    );
  } catch (e) {
    // Acked all the same: the record exists and owns the delivery (DELIVERED, scheduled, DEAD or
    // QUEUED), so nothing can be lost; a push failed here would only be sent once more. Seen on the
    // emulator after a crash: the killed process's open transaction holds the document until its
    // lock times out.
    deps.log.warn('a redelivered lane message was sent again; recording it failed, the delivery record stands as it was', { ...fields, error: errorMessage(e) });
    throw new RecordError(e, true);
  }
  if (!after) {
    // Gone between the create and the update (the destination's deliveries purged): nothing left to settle.
    deps.log.warn('a redelivered lane message was sent; its delivery record has gone since', fields);
    return { kind: 'duplicate', deliveryId: t.id };
  }
  if (after.kind !== 'left' && after.already) written = after.record;
  if (after.kind === 'left' || !written) {
    const status = after.kind === 'left' ? after.status : after.record.status;
    deps.log.info(`redelivered lane message sent again; the ${status} delivery is left as it is: ${after.kind === 'left' ? after.why : 'it changed meanwhile'}`, { ...fields, status });
    return { kind: 'duplicate', deliveryId: t.id, status };
  }
  if (after.kind === 'duplicate') {
    deps.log.info('redelivered lane message sent again: recorded as a duplicate of the DELIVERED delivery', { ...fields, duplicates: written.duplicates?.count });
    return { kind: 'duplicate', deliveryId: t.id, status: written.status };
  }
  reported(deps, t, { result: sent.result, decision: { kind: 'delivered' }, at: sent.at, publishedAt: written.publishedAt ?? publishedAt }, written);
  // This send moved the waiting delivery to DELIVERED (the update's transaction lets one send only): delivered once.
  deps.counters.settled(written.destinationId, written.status, sent.at);
  return { kind: 'attempted', deliveryId: t.id, decision: 'delivered', status: written.status };
}

/**
 * A first delivery put off (deferred by rate control, or backed off from Herald's own overload)
 * without an attempt: its record created (only if there is none, which is the duplicate check).
 * A store failure throws, the push is not acked and comes again: nothing was sent, so nothing is
 * sent twice.
 */
async function recordUnattempted(deps: DeliverDeps, t: Target, record: DeliveryRecord, at: Date): Promise<{ record: DeliveryRecord } | { ended: DeliverOutcome }> {
  // Not beside a success grouped here (no read): the record would stand over it, and the pump send it again.
  if (!(await createRecord(deps.deliveries, record, () => deps.deliveries.create(record, { unlessGrouped: 'here' })))) {
    deps.log.info('duplicate lane message skipped: the delivery is already recorded', t.ids);
    return { ended: { kind: 'duplicate', deliveryId: t.id } };
  }
  logged(deps, record, at);
  return { record };
}
