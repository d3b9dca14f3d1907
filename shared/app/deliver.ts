import { binaryHeaders } from '../domain/cloudevents-http';
import { fromPubSubMessage, heraldAttribute, malformedAttributes, PushDelivery, toPubSubMessage } from '../domain/cloudevents-pubsub';
import { AttemptResult, DeliveryRecord, deliveryId, describeFailure, HeraldOverload, isSuccess } from '../domain/delivery';
import { DeliveryState, historyOf, transition, Transition, TransitionResult } from '../domain/delivery-state';
import { Destination, deliveryPolicyOf, PolicySettings, rateBoundsOf } from '../domain/destination';
import { INTERNAL_DESTINATION_ID, splitDestinationId } from '../domain/ids';
import { eventAccount, FailurePolicy } from '../domain/account';
import { eventKey, HeraldEvent, matchesType } from '../domain/event';
import { DeliveryPolicy } from '../domain/policy';
import { decide, Decision, NO_HISTORY, withFailureMode } from '../domain/retry-decision';
import { rateOutcome } from '../domain/success-rate';
import { signatureHeaders, USER_AGENT, webhookIdFor } from '../domain/signing';
import { attemptDetail, SentRequest } from '../domain/attempt-detail';
import { signingSecrets } from '../domain/secret-rotation';
import { Clock, DeliveryStore, DestinationStore, HttpSender, Logger, LogFields, MessageBus, TopicPublisher } from '../ports';
import { topicMessage } from '../domain/topic-destination';
import { abandonWithDeadLetter, rejectToDeadLetter, RejectReason, sendDeadLetter } from './dead-letter';
import { overloadBackoffMs } from '../domain/herald-overload';
import { retryOnOverload } from './overload-retry';
import { DestinationDirectory } from './destination-directory';
import { DeliveryLimiter } from './delivery-limiter';
import { queuedBecauseSuspended } from '../domain/suspension';
import { AfterRedelivery, afterRedeliveredSend, readsBeforeFirstSend, RedeliveredSend } from '../domain/redelivered-push';
import { updateUnderClaim } from './claimed-update';
import { headEntryId } from '../domain/grouped-outcomes';
import { RateRecorder } from './rate-recorder';
import { LANE_HANDLING_BUDGET_MS, sharedLaneFor, TopologyNames } from '../topology';
import { suspendDestination } from './suspension';
import { SlowDestinations } from '../domain/slow-destinations';
import { leavesSharedLane, rateWaitLimitMs } from '../domain/lane-admission';
import { LANE_ATTRIBUTES } from './lanes';
import { deadIfDestinationDeleted } from './queued-for-deleted';

export interface DeliverDeps {
  bus: MessageBus;
  deadLetterTopic: string;
  directory: DestinationDirectory;
  destinations: DestinationStore;
  deliveries: DeliveryStore;
  rates: RateRecorder;
  limiter: DeliveryLimiter;
  /** Longest a delivery waits in-process for its rate slot; a later slot defers it (PENDING) to the pump. */
  maxRateWaitMs: number;
  /** The same on a shared lane, whose push slots other destinations share (HERALD_SHARED_LANE_WAIT_MS). */
  sharedLaneWaitMs: number;
  /** Destinations slow now, as this instance saw them: their first attempts leave the shared lanes. */
  slow: SlowDestinations;
  /** Where the retry lanes are (a slow destination's first attempts are handed over to them). */
  names: TopologyNames;
  notificationsTopic: string;
  http: HttpSender;
  /** Pub/Sub-topic destinations: one publish per attempt, in the CloudEvents Pub/Sub binding. */
  topics: TopicPublisher;
  clock: Clock;
  log: Logger;
  policy: PolicySettings;
  /** An account's failure policy (seed 003), for destinations without a failureMode of their own; absent: retry. */
  failurePolicy?: (account: string) => Promise<FailurePolicy>;
}

export type DeliverOutcome =
  | { kind: 'attempted'; deliveryId: string; decision: Decision['kind']; status: DeliveryRecord['status'] }
  | { kind: 'duplicate'; deliveryId: string; status?: DeliveryRecord['status'] }
  | { kind: 'queued'; deliveryId: string }
  | { kind: 'deferred'; deliveryId: string; until: string }
  | { kind: 'handed-over'; deliveryId: string; topic: string }
  | { kind: 'rejected'; reason: RejectReason };

export { LANE_ATTRIBUTES };

/**
 * The record of an attempt already made is written again after a passing overload of
 * Firestore (up to 3 tries over 0.3 s): failing that, the push is redelivered and the
 * destination gets the event twice.
 */
const RECORD_RETRY = { tries: 3, firstPauseMs: 100 };

/**
 * One attempt of one event to one destination, from its lane. A message from `route`
 * is the first attempt; one from the retry pump carries the claim it was sent under.
 * The outcome is recorded before the push is acked; a Herald fault (the store
 * unavailable) throws so Pub/Sub redelivers, which may duplicate an attempt but never
 * loses one.
 */
export async function deliverFromLane(deps: DeliverDeps, push: PushDelivery): Promise<DeliverOutcome> {
  const destinationId = heraldAttribute(push.message, LANE_ATTRIBUTES.destination);
  const parsed = fromPubSubMessage(push.message, push.publishTime);
  if (!destinationId || !INTERNAL_DESTINATION_ID.test(destinationId) || !parsed.ok || malformedAttributes(push.message).length > 0) {
    // Only `route` and the pump publish to lanes, after validating: this is a foreign message.
    await rejectToDeadLetter(deps.bus, deps.deadLetterTopic, push, 'invalid-lane-message', 'lane message without a valid herald-destination attribute or event');
    deps.log.warn('lane message without a valid herald-destination attribute or event: sent to the dead-letter topic', {
      subscription: push.subscription,
      messageId: push.messageId,
      issues: parsed.ok ? [] : parsed.issues,
    });
    return { kind: 'rejected', reason: 'invalid-lane-message' };
  }
  const event = parsed.value;
  const id = deliveryId(destinationId, eventKey(event.attributes));
  const ids = { eventId: event.attributes.id, eventSource: event.attributes.source, destinationId, deliveryId: id };
  const claim = heraldAttribute(push.message, LANE_ATTRIBUTES.claim);
  const publishedAt = heraldAttribute(push.message, LANE_ATTRIBUTES.publishedAt) ?? push.publishTime.toISOString();
  const intake = heraldAttribute(push.message, LANE_ATTRIBUTES.intake);
  const handedOver = heraldAttribute(push.message, LANE_ATTRIBUTES.handedOver) !== undefined;

  const destination = await deps.directory.get(destinationId);
  const unusable = unusableBecause(destination, event);
  if (unusable) {
    // A claimed retry has a record: DEAD, with a dead letter that a replay can send again.
    if (claim !== undefined && (await abandon(deps, id, ids, unusable.message, event))) return { kind: 'rejected', reason: unusable.reason };
    await rejectToDeadLetter(deps.bus, deps.deadLetterTopic, push, unusable.reason, unusable.message);
    deps.log.warn(`${unusable.message}: sent to the dead-letter topic`, { ...ids, messageId: push.messageId, reason: unusable.reason });
    return { kind: 'rejected', reason: unusable.reason };
  }
  const policy = deliveryPolicyOf(destination!, deps.policy);
  const target: Target = { destination: destination!, policy, event, id, ids, ...(intake !== undefined ? { intake } : {}) };
  try {
    if (destination!.status === 'suspended') return await queueUnattempted(deps, target, claim, publishedAt);
    if (claim !== undefined) return await claimedAttempt(deps, target, claim);
    if (!handedOver && leavesSharedLane(target.destination, deps.slow.isSlow(target.destination.id, deps.clock.now().getTime()))) return await handOver(deps, target, publishedAt);
    return await firstAttempt(deps, target, publishedAt, push.deliveryAttempt);
  } finally {
    await deps.rates.flushIfDue();
  }
}

interface Target {
  destination: Destination;
  policy: DeliveryPolicy;
  event: HeraldEvent;
  id: string;
  ids: LogFields;
  /** The intake batch the event came in (ingest's journal), written on the record for the reconciler. */
  intake?: string;
}

function unusableBecause(destination: Destination | undefined, event: HeraldEvent): { reason: RejectReason; message: string } | undefined {
  if (!destination) return { reason: 'destination-deleted', message: 'the destination no longer exists' };
  if (splitDestinationId(destination.id).account !== eventAccount(event.attributes)) {
    return { reason: 'type-unsubscribed', message: `destination ${destination.id} is not of the event's account ${eventAccount(event.attributes)}` };
  }
  if (!matchesType(destination.eventTypes, event.attributes.type)) {
    return { reason: 'type-unsubscribed', message: `destination ${destination.id} no longer subscribes to ${event.attributes.type}` };
  }
  if (!destination.url && !destination.topic) return { reason: 'unsupported-destination', message: `destination ${destination.id} has neither url nor topic` };
  return undefined;
}

/**
 * The first attempt reads nothing and writes at most one document: no claim is written
 * before it (SPEC "Delivery contract"). Its record is created only if there is none: one found
 * there means this push was a redelivery (a lost ack, a producer's resend, a lane message later
 * than the reconciler) or ran beside a copy, and the send made anyway is settled against it
 * (redelivered): a duplicate recorded on a DELIVERED delivery, a waiting retry DELIVERED by its
 * success; never a second dead letter or a step backwards. A success that ends together with
 * others on this instance is instead a member of their group (DeliveryStore.addDelivered: a
 * share of one write), unchecked: a redelivery sent again is then found twice and every view
 * shows it once, a duplicate (domain/grouped-outcomes.ts).
 *
 * A push that production Pub/Sub says is a redelivery (`deliveryAttempt` > 1; the emulator
 * sends none) reads first instead, before its turn (DeliveryLimiter: BeforeTurn), and is
 * skipped when the record exists: for that rare push one read costs less than a duplicate.
 *
 * A deferral costs the write alone: the record is created only if there is none, which is
 * the duplicate check (a throttled destination's whole backlog passes through here, one
 * deferral per event).
 */
async function firstAttempt(deps: DeliverDeps, t: Target, publishedAt: string, deliveryAttempt: number | undefined): Promise<DeliverOutcome> {
  const found: { record?: DeliveryRecord } = {};
  const beforeTurn = readsBeforeFirstSend(deliveryAttempt)
    ? async () => {
        found.record = await deps.deliveries.get(t.id);
        return found.record === undefined;
      }
    : undefined;
  const gate = await deps.limiter.acquire(t.destination.id, rateBoundsOf(t.destination), rateWaitFor(deps, t), beforeTurn ? { beforeTurn } : {});
  if (gate.kind === 'defer') {
    // The state machine marks it rate-deferred.
    return recordUnattempted(deps, t, publishedAt, { type: 'defer', until: new Date(gate.until) }, 'delivery deferred by rate control');
  }
  if (gate.kind === 'skip') {
    const existing = found.record!;
    // DELIVERED, DEAD or QUEUED: settled. PENDING or IN_FLIGHT: the retry engine owns it.
    deps.log.info(`duplicate lane message skipped: the delivery is ${existing.status}`, { ...t.ids, status: existing.status, deliveryAttempt });
    return { kind: 'duplicate', deliveryId: t.id, status: existing.status };
  }
  const at = deps.clock.now();
  // A success joins the next group commit; one under way is waited for a moment by the others.
  const expected = deps.deliveries.expectDelivered?.() ?? (() => undefined);
  try {
    return await attemptedFirst(deps, t, publishedAt, at, expected);
  } finally {
    expected();
  }
}

/** A first attempt past its gate: sent, and its outcome recorded (`expected`: called before a success is grouped). */
async function attemptedFirst(deps: DeliverDeps, t: Target, publishedAt: string, at: Date, expected: () => void): Promise<DeliverOutcome> {
  const { result, sent } = await attempt(deps, t, at);
  if (result.kind === 'herald-overload') {
    const record = firstRecord(t, publishedAt, at, { type: 'back-off', until: backOffUntil(deps) });
    if (!(await retryOnOverload(() => deps.deliveries.create(record), RECORD_RETRY))) return { kind: 'duplicate', deliveryId: t.id };
    logged(deps, record, at);
    return backedOff(deps, t, result, record);
  }
  deps.limiter.report(t.destination.id, result, at);
  const decision = await withFailureModeOf(deps, t, decide(t.policy, NO_HISTORY, result, at, new Date(publishedAt)));
  const detail = detailOf(sent, result, decision, at);
  const record = firstRecord(t, publishedAt, at, { type: 'attempted', at, result, decision, detail });
  // Recorded first, then counted and dead-lettered: a send that finds a record (a redelivery,
  // or a concurrent copy recorded first) neither counts twice nor publishes a second dead letter.
  // A success goes with the other outcomes this instance commits meanwhile: alone, a document of
  // its own, created only if none exists; among others, a group member, unchecked (a redelivery
  // sent again is then found twice and shown once, a duplicate). A failure is never created
  // beside a grouped success.
  let group: string | undefined;
  const write =
    record.status === 'DELIVERED'
      ? async () => {
          const adding = deps.deliveries.addDelivered(record);
          expected();
          const added = await adding;
          if (added.created) group = added.group;
          return added.created;
        }
      : () => deps.deliveries.create(record, { unlessGrouped: true });
  const created = await recordAfterSend(deps, record, write);
  if (created === 'locked') return { kind: 'duplicate', deliveryId: t.id };
  if (!created) return redelivered(deps, t, { at, result, detail }, publishedAt);
  logged(deps, record, at, group);
  countAttempt(deps, t, result, at, publishedAt);
  countSettled(deps, record, at);
  report(deps, t, result, decision, record);
  if (record.status === 'DEAD') await sendDeadLetter(deps, t.event, record);
  await suspendIfDecided(deps, t, decision, record);
  if (record.status === 'QUEUED') await deadIfDestinationDeleted(deps, record);
  return { kind: 'attempted', deliveryId: t.id, decision: decision.kind, status: record.status };
}

/**
 * The record of a first push already sent, created only if there is none. A create that fails
 * for another reason (after the retries for overload) is looked at once more with a plain read:
 * a record there means the push was a redelivery whose document another transaction holds
 * (on the emulator, one a killed process left open, until its lock times out, about 20 s), and
 * the push is acked (`locked`) rather than failed, which would send it yet again at each try.
 * No record: the failure stands and Pub/Sub brings the push again.
 */
async function recordAfterSend(deps: DeliverDeps, record: DeliveryRecord, write: () => Promise<boolean>): Promise<boolean | 'locked'> {
  try {
    return await retryOnOverload(write, RECORD_RETRY);
  } catch (e) {
    const existing = await deps.deliveries.get(record.id);
    if (!existing) throw e;
    // This very record, written by a create whose answer was lost: created after all.
    if (existing.lastAttemptAt === record.lastAttemptAt && existing.attempts === record.attempts) return true;
    deps.log.warn('a redelivered lane message was sent again; its record could not be written to (held by another transaction), and stands as it was', {
      eventId: record.eventId,
      destinationId: record.destinationId,
      deliveryId: record.id,
      status: existing.status,
      error: e instanceof Error ? e.message : String(e),
    });
    return 'locked';
  }
}

/**
 * A first push was sent and its record was there already: settled against it by the rules of
 * domain/redelivered-push.ts in one update (a read and a write, on this rare path only). Only a
 * send that DELIVERED a waiting retry counts, as that retry's attempt would have; it adds
 * nothing to the log head (the record is in it since it was created).
 */
async function redelivered(deps: DeliverDeps, t: Target, send: RedeliveredSend, publishedAt: string): Promise<DeliverOutcome> {
  let after: AfterRedelivery | undefined;
  const fields = { ...t.ids, ...resultFields(send.result) };
  let written: DeliveryRecord | undefined;
  try {
    written = await retryOnOverload(
      () =>
        deps.deliveries.update(t.id, (current) => {
          after = current ? afterRedeliveredSend(current, send) : undefined;
          return after?.kind === 'left' ? undefined : after?.record;
        }),
      RECORD_RETRY,
    );
  } catch (e) {
    // Acked all the same: the record exists and owns the delivery (DELIVERED, scheduled, DEAD or
    // QUEUED), so nothing can be lost; a push failed here would only be sent once more. Seen on the
    // emulator after a crash: the killed process's open transaction holds the document until its
    // lock times out.
    deps.log.warn('a redelivered lane message was sent again; recording it failed, the delivery record stands as it was', { ...fields, error: e instanceof Error ? e.message : String(e) });
    return { kind: 'duplicate', deliveryId: t.id };
  }
  if (!after) {
    // Gone between the create and the update (the destination's deliveries purged): nothing left to settle.
    deps.log.warn('a redelivered lane message was sent; its delivery record has gone since', fields);
    return { kind: 'duplicate', deliveryId: t.id };
  }
  if (after.kind === 'left' || !written) {
    const status = after.kind === 'left' ? after.status : after.record.status;
    deps.log.info(`redelivered lane message sent again; the ${status} delivery is left as it is: ${after.kind === 'left' ? after.why : 'it changed meanwhile'}`, { ...fields, status });
    return { kind: 'duplicate', deliveryId: t.id, status };
  }
  if (after.kind === 'duplicate') {
    deps.log.info('redelivered lane message sent again: recorded as a duplicate of the DELIVERED delivery', { ...fields, duplicates: written.duplicates?.count });
    return { kind: 'duplicate', deliveryId: t.id, status: written.status };
  }
  countAttempt(deps, t, send.result, send.at, written.publishedAt ?? publishedAt);
  report(deps, t, send.result, { kind: 'delivered' }, written);
  return { kind: 'attempted', deliveryId: t.id, decision: 'delivered', status: written.status };
}

/** A retry the pump claimed: attempted only while the claim the message carries is still the record's. */
async function claimedAttempt(deps: DeliverDeps, t: Target, claim: string): Promise<DeliverOutcome> {
  const startedAt = deps.clock.now();
  let refused: string | undefined;
  const started = await deps.deliveries.update(t.id, (current) => {
    if (!current) {
      refused = 'no record';
      return undefined;
    }
    const next = transition(current, { type: 'start', now: startedAt, claimedAt: claim });
    refused = next.ok ? undefined : next.error.message;
    return next.ok ? next.state : undefined;
  });
  if (!started) {
    deps.log.info(`claimed lane message skipped: ${refused ?? 'claim lost'}`, { ...t.ids, claim });
    return { kind: 'duplicate', deliveryId: t.id };
  }
  const gate = await deps.limiter.acquire(t.destination.id, rateBoundsOf(t.destination), rateWaitFor(deps, t), { returning: started.rateDeferred === true });
  if (gate.kind === 'defer') {
    const deferred = await updateUnderClaim(deps.deliveries, t.id, started.claimedAt, { type: 'defer', until: new Date(gate.until) });
    if (!deferred) return { kind: 'duplicate', deliveryId: t.id };
    deps.log.info('delivery deferred by rate control', { ...t.ids, availableAt: deferred.availableAt });
    return { kind: 'deferred', deliveryId: t.id, until: deferred.availableAt! };
  }
  const at = deps.clock.now();
  const { result, sent } = await attempt(deps, t, at);
  if (result.kind === 'herald-overload') {
    const waiting = await updateUnderClaim(deps.deliveries, t.id, started.claimedAt, { type: 'back-off', until: backOffUntil(deps) });
    if (!waiting) return { kind: 'duplicate', deliveryId: t.id };
    return backedOff(deps, t, result, waiting);
  }
  deps.limiter.report(t.destination.id, result, at);
  const publishedAt = started.publishedAt ?? started.firstAttemptAt ?? at.toISOString();
  const decision = await withFailureModeOf(deps, t, decide(t.policy, historyOf(started), result, at, new Date(publishedAt)));
  const outcome = settled(transition(started, { type: 'attempted', at, result, decision, detail: detailOf(sent, result, decision, at) }));
  const record = withEvent(outcome, t.event);
  // Written only if nobody took the claim over while the attempt ran (it expired meanwhile).
  const written = await retryOnOverload(
    () => deps.deliveries.update(t.id, (current) => (current?.status === 'IN_FLIGHT' && current.claimedAt === started.claimedAt ? record : undefined)),
    RECORD_RETRY,
  );
  if (!written) {
    deps.log.warn('the claim was taken over during the attempt (it outlived HERALD_CLAIM_TTL_MS); the newer claim decides', t.ids);
    return { kind: 'duplicate', deliveryId: t.id };
  }
  countAttempt(deps, t, result, at, publishedAt);
  countSettled(deps, record, at);
  report(deps, t, result, decision, record);
  if (record.status === 'DEAD') await sendDeadLetter(deps, t.event, record);
  await suspendIfDecided(deps, t, decision, record);
  if (record.status === 'QUEUED') await deadIfDestinationDeleted(deps, record);
  return { kind: 'attempted', deliveryId: t.id, decision: decision.kind, status: record.status };
}

/**
 * A slow destination's first attempt is not made on its shared lane, where it would hold a
 * push slot its neighbours need for as long as the destination takes: the lane message is
 * published again on the destination's retry lane, marked, and attempted there as a first
 * attempt. One publish, no Firestore write: a slow destination's events cost its lane's
 * neighbours a few milliseconds each. Published before the push is acked, so a failure
 * brings the message again (a crash in between: two first attempts; the later one finds the
 * record when it creates its own and is settled as a redelivery).
 */
async function handOver(deps: DeliverDeps, t: Target, publishedAt: string): Promise<DeliverOutcome> {
  const topic = sharedLaneFor(t.destination.id, 'retry', deps.names);
  const attributes: Record<string, string> = { [LANE_ATTRIBUTES.destination]: t.destination.id, [LANE_ATTRIBUTES.publishedAt]: publishedAt, [LANE_ATTRIBUTES.handedOver]: '1' };
  if (t.intake !== undefined) attributes[LANE_ATTRIBUTES.intake] = t.intake;
  await deps.bus.publish(topic, toPubSubMessage(t.event, attributes));
  deps.log.info('slow destination: delivery handed to the retry lanes, its shared lane kept free', { ...t.ids, topic });
  return { kind: 'handed-over', deliveryId: t.id, topic };
}

/**
 * A first delivery put off (deferred) without an attempt: its record created (only if there is none,
 * which is the duplicate check) in the state `next` leads to. A store failure throws, the
 * push is not acked and comes again: nothing was sent, so nothing is sent twice.
 */
async function recordUnattempted(deps: DeliverDeps, t: Target, publishedAt: string, next: Transition, message: string): Promise<DeliverOutcome> {
  const now = deps.clock.now();
  const record = firstRecord(t, publishedAt, now, next);
  if (!(await deps.deliveries.create(record))) {
    deps.log.info('duplicate lane message skipped: the delivery is already recorded', t.ids);
    return { kind: 'duplicate', deliveryId: t.id };
  }
  logged(deps, record, now);
  deps.log.info(message, { ...t.ids, availableAt: record.availableAt });
  return { kind: 'deferred', deliveryId: t.id, until: record.availableAt! };
}

/** A delivery's first record: its first claim, never stored, played in memory at `claimedAt`, then `next`. */
function firstRecord(t: Target, publishedAt: string, claimedAt: Date, next: Transition): DeliveryRecord {
  const initial: DeliveryState = { status: 'PENDING', attempts: 0, availableAt: claimedAt.toISOString() };
  const claimed = settled(transition(initial, { type: 'claim', now: claimedAt, claimTtlMs: 0 }));
  return newRecord(t, publishedAt, settled(transition(claimed, next)));
}

/** When a delivery that met Herald's own overload is tried again (10 s ± 20 %). */
function backOffUntil(deps: DeliverDeps): Date {
  return new Date(deps.clock.now().getTime() + overloadBackoffMs(Math.random()));
}

/** The delivery waits, PENDING, with no attempt counted: the destination was not tried. */
function backedOff(deps: DeliverDeps, t: Target, result: HeraldOverload, record: DeliveryRecord): DeliverOutcome {
  deps.log.warn(`Herald's own service is overloaded (${result.error}): no attempt counted; trying again later`, { ...t.ids, availableAt: record.availableAt });
  return { kind: 'deferred', deliveryId: t.id, until: record.availableAt! };
}

/**
 * The destination is suspended: the event is QUEUED without an attempt (the first time it
 * reaches the lane, or when a claimed retry does), kept for reactivation or redelivery.
 */
async function queueUnattempted(deps: DeliverDeps, t: Target, claim: string | undefined, publishedAt: string): Promise<DeliverOutcome> {
  const now = deps.clock.now();
  const reason = queuedBecauseSuspended(t.destination);
  if (claim === undefined) {
    // Nothing is sent: creating the record only if there is none is the whole duplicate check.
    const initial: DeliveryState = { status: 'PENDING', attempts: 0, availableAt: now.toISOString() };
    const state = settled(transition(initial, { type: 'queue', now, reason }));
    const record = newRecord(t, publishedAt, state);
    if (!(await deps.deliveries.create(record))) return { kind: 'duplicate', deliveryId: t.id };
    logged(deps, record, now);
    await deadIfDestinationDeleted(deps, record);
  } else {
    const queued = await updateUnderClaim(deps.deliveries, t.id, claim, { type: 'queue', now, reason });
    if (!queued) return { kind: 'duplicate', deliveryId: t.id };
    await deadIfDestinationDeleted(deps, queued);
  }
  deps.rates.settled(t.destination.id, 'QUEUED', now);
  deps.log.info('delivery QUEUED: its destination is suspended', { ...t.ids, reason });
  return { kind: 'queued', deliveryId: t.id };
}


/**
 * A failure retried or queued as the destination's `failureMode` says, or, without one, as its
 * account's policy does (seed 003): looked up only when the attempt failed.
 */
async function withFailureModeOf(deps: DeliverDeps, t: Target, decision: Decision): Promise<Decision> {
  if (decision.kind !== 'retry' && decision.kind !== 'dead') return decision;
  const mode = t.destination.failureMode ?? (deps.failurePolicy ? await deps.failurePolicy(splitDestinationId(t.destination.id).account) : 'retry');
  return withFailureMode(decision, mode);
}

/** Every attempt counts toward the destination's success rate (seed 000's rules in rateOutcome). */
function countAttempt(deps: DeliverDeps, t: Target, result: AttemptResult, at: Date, publishedAt: string): void {
  const windowMs = t.policy.threshold?.windowMs ?? deps.rates.hourMs;
  const outcome = rateOutcome(result, at.getTime() - Date.parse(publishedAt), windowMs);
  deps.rates.record(t.destination.id, outcome, at, isSuccess(result) ? undefined : describeFailure(result, at), result.durationMs);
}

/** A delivery that became DEAD or QUEUED is counted in its bucket (the console's charts). */
function countSettled(deps: DeliverDeps, record: DeliveryRecord, at: Date): void {
  if (record.status === 'DEAD' || record.status === 'QUEUED') deps.rates.settled(record.destinationId, record.status, at);
}

/** A record was created: into the head of its destination's log (domain/recent-log.ts), with the counters; a grouped one with its group. */
function logged(deps: DeliverDeps, record: DeliveryRecord, at: Date, group?: string): void {
  if (record.publishedAt !== undefined) deps.rates.created(record.destinationId, headEntryId(record.id, group), record.publishedAt, at);
}

/** A suspend decision was recorded (the event QUEUED): now the destination itself. */
async function suspendIfDecided(deps: DeliverDeps, t: Target, decision: Decision, record: DeliveryRecord): Promise<void> {
  if (decision.kind !== 'suspend') return;
  await suspendDestination(deps, t.destination.id, { cause: decision.cause, reason: decision.reason, ...(record.lastError ? { lastError: record.lastError } : {}) });
}

/**
 * How long a delivery may wait for its turn: the runtime's limit, shorter on a shared lane,
 * shortened for a policy whose attempt timeout is long (the rule: domain/lane-admission.ts).
 */
function rateWaitFor(deps: DeliverDeps, t: Pick<Target, 'destination' | 'policy'>): number {
  return rateWaitLimitMs(t.destination, t.policy.attemptTimeoutMs, { dedicatedMs: deps.maxRateWaitMs, sharedMs: deps.sharedLaneWaitMs, handlingBudgetMs: LANE_HANDLING_BUDGET_MS });
}

/** One attempt, timed for the slow-destination verdict (SlowDestinations): what came of it, and what was sent. */
async function attempt(deps: DeliverDeps, t: Target, at: Date): Promise<{ result: AttemptResult | HeraldOverload; sent: SentRequest }> {
  const ticket = deps.slow.begin(t.destination.id, at.getTime());
  let result: AttemptResult | HeraldOverload | undefined;
  try {
    const sent = requestFor(t, at);
    result = await attemptOnce(deps, t, sent);
    return { result, sent };
  } finally {
    const durationMs = result?.durationMs ?? deps.clock.now().getTime() - at.getTime();
    deps.slow.end(t.destination.id, ticket, deps.clock.now().getTime(), durationMs, result?.kind === 'timeout');
  }
}

/** What an attempt sends, by the destination's kind: a signed POST to its url, or a message to its topic. */
function requestFor(t: Target, at: Date): SentRequest {
  if (t.destination.topic !== undefined) {
    const message = topicMessage(t.event, t.id);
    return { target: t.destination.topic, headers: message.attributes, body: message.data };
  }
  const key = eventKey(t.event.attributes);
  return {
    target: t.destination.url!,
    headers: { 'user-agent': USER_AGENT, ...binaryHeaders(t.event), ...signatureHeaders(signingSecrets(t.destination, at), webhookIdFor(key), at, t.event.data) },
    body: t.event.data,
  };
}

async function attemptOnce(deps: DeliverDeps, t: Target, sent: SentRequest): Promise<AttemptResult | HeraldOverload> {
  if (t.destination.topic !== undefined) {
    return deps.topics.publish({ topic: sent.target, message: { data: sent.body, attributes: { ...sent.headers } }, timeoutMs: t.policy.attemptTimeoutMs });
  }
  return deps.http.send({ url: sent.target, headers: { ...sent.headers }, body: sent.body, timeoutMs: t.policy.attemptTimeoutMs });
}

/** The attempt as the record keeps it (attemptLog). */
function detailOf(sent: SentRequest, result: AttemptResult, decision: Decision, at: Date) {
  return attemptDetail(sent, result, decision, isSuccess(result) ? undefined : describeFailure(result, at).error, at);
}

/** A delivery's first record: its ids, the event's, and `state` (with the event while it may be sent again). */
function newRecord(t: Target, publishedAt: string, state: DeliveryState): DeliveryRecord {
  const { event } = t;
  const base = { id: t.id, destinationId: t.destination.id, eventId: event.attributes.id, eventSource: event.attributes.source, eventType: event.attributes.type, publishedAt };
  return withEvent({ ...base, ...(t.intake !== undefined ? { intake: t.intake } : {}), ...state }, event);
}

/** The event stays on the record while it may be sent again (or redelivered by an operator); not once DELIVERED. */
function withEvent<R extends DeliveryState>(record: R, event: HeraldEvent): R & { event?: HeraldEvent } {
  const { event: _old, ...rest } = record as R & { event?: HeraldEvent };
  if (record.status === 'DELIVERED') return rest as R;
  return { ...(rest as R), event: { attributes: { ...event.attributes }, data: event.data } };
}

/** The delivery can no longer be attempted: DEAD through the state machine (its destination went away), counted, and its dead letter sent. */
async function abandon(deps: DeliverDeps, id: string, ids: LogFields, reason: string, event: HeraldEvent): Promise<boolean> {
  deps.log.warn(`delivery abandoned: ${reason}`, ids);
  const dead = await abandonWithDeadLetter(deps, id, reason, undefined, event);
  if (dead) countSettled(deps, dead, deps.clock.now());
  return dead !== undefined;
}

function settled<S>(result: TransitionResult<S>): S {
  // Herald built both the state and the transition: a refusal here is a bug, not input.
  if (!result.ok) throw new Error(`delivery state machine refused ${result.error.transition} from ${result.error.from}: ${result.error.message}`);
  return result.state;
}

function report(deps: DeliverDeps, t: Target, result: AttemptResult, decision: Decision, record: DeliveryRecord): void {
  const fields = {
    ...t.ids,
    attempts: record.attempts,
    durationMs: result.durationMs,
    policy: t.policy.name,
    ...(t.destination.topic !== undefined ? { topic: t.destination.topic } : {}),
    ...resultFields(result),
  };
  switch (decision.kind) {
    case 'delivered':
      // The delivery record holds every success (GET …/deliveries); a log line each would cost
      // Cloud Logging about $0.20 per million deliveries at the default level.
      deps.log.debug('delivered', fields);
      return;
    case 'retry':
    case 'throttle':
      deps.log.warn(`attempt failed: ${decision.reason}`, { ...fields, availableAt: record.availableAt });
      return;
    case 'dead':
      deps.log.error(`delivery DEAD: ${decision.reason}; sent to the dead-letter topic`, { ...fields, cause: decision.cause });
      return;
    case 'suspend':
      deps.log.error(`delivery QUEUED, destination suspended: ${decision.reason}`, { ...fields, cause: decision.cause });
      return;
    case 'queue':
      deps.log.warn(`delivery QUEUED: ${decision.reason}`, fields);
      return;
  }
}

/** The attempt's outcome as log fields: the HTTP status, the Pub/Sub message id, or the kind of failure. */
function resultFields(result: AttemptResult): LogFields {
  switch (result.kind) {
    case 'response':
      return { httpStatus: result.status };
    case 'published':
      return { topicMessageId: result.messageId };
    case 'topic':
      return { error: result.kind, topicProblem: result.problem };
    default:
      return { error: result.kind };
  }
}
