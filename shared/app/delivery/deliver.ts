import { PushDelivery } from '../../domain/events/cloudevents-pubsub';
import { deliveryId } from '../../domain/retry/delivery';
import { queuedRecord } from '../../domain/delivery/delivery-record';
import { deliveryPolicyOf, Destination } from '../../domain/destinations/destination';
import { eventKey, HeraldEvent } from '../../domain/events/event';
import { LaneMessage, readLaneMessage, ReadLaneMessage } from '../../domain/intake/lane-message';
import { LaneStep, laneStep, RejectReason } from '../../domain/delivery/lane-step';
import { queuedBecauseSuspended } from '../../domain/destinations/suspension';
import { LogFields } from '../../ports/clock';
import { logged } from './attempt';
import { claimedAttempt } from './claimed-attempt';
import { updateUnderClaim } from './claimed-update';
import { abandonWithDeadLetter, rejectToDeadLetter } from '../lanes/dead-letter';
import { DeliverDeps, DeliverOutcome, Target } from './delivery-context';
import { firstAttempt } from './first-attempt';
import { publishGathered, publishToLane, unbundle } from '../lanes/lanes';
import { BundleMember, BundleOutcomes } from './bundle-outcomes';
import { recheckQueued } from './queued-recheck';
import { createRecord } from './record-create';
import { afterOrderedOutcome } from '../ordering/ordered-delivery';
import { errorMessage } from '../../domain/error-message';
import { BeforeSendError, failedIn, pushVerdict } from './push-verdict';

export type { DeliverDeps, DeliverOutcome };

/**
 * What one push to `deliver` carries: a lane message, or a bundle of them for one destination
 * (the events of one ingest request that go there: lanes.ts publishBundled). A bundle's members
 * are attempted at once, each as if pushed alone, but waiting for its rate turn as on a
 * dedicated lane (the bundle holds one push slot); their successes wait for each other and
 * share a group write (app/delivery/bundle-outcomes.ts), one push and one invocation for them all. Resolves
 * once every member's outcome is durable. A member that fails on a Herald fault (the store
 * unavailable) is published again alone onto its lane and the bundle acked: its neighbours,
 * recorded, are not sent again. Only when every member failed, or that publish fails, does the
 * push fail, and Pub/Sub bring the whole bundle again (duplicates, never a loss). What a failure
 * does is pushVerdict's to say (push-verdict.ts).
 */
export async function deliverPush(deps: DeliverDeps, push: PushDelivery): Promise<DeliverOutcome[]> {
  const bundle = await unbundle(push.message);
  if (bundle === undefined) return [await deliverFromLane(deps, push)];
  if (!bundle.ok) {
    return [await reject(deps, push, 'invalid-lane-message', 'a bundle of lane messages that cannot be read', { subscription: push.subscription, issues: bundle.issues })];
  }
  const members = bundle.members.map((message, i): PushDelivery => ({ ...push, messageId: `${push.messageId}/${i}`, message }));
  const outcomes = new BundleOutcomes(members.length);
  const settled = await Promise.allSettled(
    members.map((m) => {
      const member = outcomes.member();
      return deliverFromLane(deps, m, { bundle: member }).finally(member.in);
    }),
  );
  const everyMemberFailed = settled.every((r) => r.status === 'rejected');
  return Promise.all(
    settled.map(async (r, i) => {
      if (r.status === 'fulfilled') return r.value;
      if (pushVerdict(r.reason, { everyMemberFailed }) === 'redeliver') throw r.reason;
      return publishAgainAlone(deps, members[i]!, r.reason);
    }),
  );
}

/** A bundle's member that failed, onto its lane alone; rejects with its failure when it cannot be. */
async function publishAgainAlone(deps: DeliverDeps, member: PushDelivery, failure: unknown): Promise<DeliverOutcome> {
  const read = readLaneMessage(member);
  const destination = read.ok ? await deps.directory.get(read.value.destinationId) : undefined;
  if (!read.ok || destination === undefined) throw failure;
  const topic = await publishToLane(deps, destination, read.value);
  const { event, destinationId } = read.value;
  const id = deliveryId(destinationId, eventKey(event.attributes));
  deps.log.warn("a bundle's member failed; published again alone, the rest of the bundle acked", {
    eventId: event.attributes.id,
    eventSource: event.attributes.source,
    destinationId,
    deliveryId: id,
    topic,
    error: errorMessage(failure),
  });
  return { kind: 'published-again', deliveryId: id, topic };
}

/**
 * One attempt of one event to one destination, from its lane (the message's kinds:
 * domain/intake/lane-message.ts; what is done with it: domain/delivery/lane-step.ts). A first attempt
 * (app/delivery/first-attempt.ts) reads nothing before it sends; a retry the pump claimed
 * (app/delivery/claimed-attempt.ts) is attempted under its claim. Either way the outcome is recorded
 * before the push is acked and then counted, logged and dead-lettered in one shared ending
 * (app/delivery/attempt.ts). A Herald fault (the store unavailable) throws, typed by the stage
 * it failed in, so Pub/Sub redelivers, which may duplicate an attempt but never loses one; only a
 * record that stands and owns the delivery acks a failed push (push-verdict.ts pushVerdict).
 */
export async function deliverFromLane(deps: DeliverDeps, push: PushDelivery, options: { bundle?: BundleMember } = {}): Promise<DeliverOutcome> {
  const read = readLaneMessage(push);
  if (!read.ok) {
    // Only ingest, `route`, the pump and deliver publish to lanes, after validating: this is a foreign message.
    return reject(deps, push, 'invalid-lane-message', 'lane message without a valid herald-destination attribute or event', { subscription: push.subscription, issues: read.issues });
  }
  const message = read.value;
  const { event, destinationId } = message;
  const id = deliveryId(destinationId, eventKey(event.attributes));
  const ids = { eventId: event.attributes.id, eventSource: event.attributes.source, destinationId, deliveryId: id };
  const { destination, step } = await destinationAndStep(deps, message);
  if (step.kind === 'unusable') {
    // A claimed retry has a record: DEAD, with a dead letter that a replay can send again.
    if (message.kind === 'claimed' && (await abandon(deps, id, ids, step.message, event))) return { kind: 'rejected', reason: step.reason };
    return reject(deps, push, step.reason, step.message, { ...ids, reason: step.reason });
  }
  // A first attempt taken long after it was published tells the reconciler its lane is behind, not lost.
  if (message.kind !== 'claimed') deps.laneBacklog?.seen(push.subscription, push.publishTime);
  const intake = message.kind !== 'claimed' && message.intake !== undefined ? { intake: message.intake } : {};
  const resent = message.kind !== 'claimed' && message.resent ? { resent: true as const } : {};
  const t: Target = { destination: destination!, policy: deliveryPolicyOf(destination!, deps.policy), event, id, ids, publishedAt: message.publishedAt, ...intake, ...resent, ...(options.bundle ? { bundle: options.bundle } : {}) };
  try {
    switch (step.kind) {
      case 'queue':
        return await queueUnattempted(deps, t, message).catch(failedIn(BeforeSendError));
      case 'claimed':
        return await claimedAttempt(deps, t, step.claim);
      case 'hand-over':
        return await handOver(deps, t).catch(failedIn(BeforeSendError));
      case 'first':
        return await firstAttempt(deps, t, push.deliveryAttempt);
    }
  } catch (e) {
    if (pushVerdict(e) !== 'ack') throw e;
    return { kind: 'duplicate', deliveryId: id };
  } finally {
    // Not awaited: a slow counter write (or a window read it queues behind) never holds the ack.
    deps.counters.flushInBackground();
  }
}

/** A push Herald will not attempt: onto the dead-letter topic as it came, said why in the log, and acked. */
async function reject(deps: DeliverDeps, push: PushDelivery, reason: RejectReason, why: string, fields: LogFields): Promise<DeliverOutcome> {
  await rejectToDeadLetter(deps.bus, deps.deadLetterTopic, push, reason, why);
  deps.log.warn(`${why}: sent to the dead-letter topic`, { ...fields, messageId: push.messageId });
  return { kind: 'rejected', reason };
}

/**
 * The message's destination and what to do with it. A refusal on this instance's cached view
 * (up to HERALD_DESTINATION_CACHE_MS old) is checked against the store first: another instance
 * may just have changed the destination (its eventTypes, its url), and the event was routed by
 * what it says now. Only what the store's copy still refuses is rejected; a rejection is rare, so
 * the read costs the hot path nothing. A destination the cache lacks was read from the store
 * already (DestinationDirectory.get).
 */
async function destinationAndStep(deps: DeliverDeps, message: ReadLaneMessage): Promise<{ destination: Destination | undefined; step: LaneStep }> {
  const slow = () => deps.slow.isSlow(message.destinationId, deps.clock.now().getTime());
  const cached = await deps.directory.get(message.destinationId);
  const step = laneStep(message, cached, slow);
  if (step.kind !== 'unusable' || cached === undefined) return { destination: cached, step };
  const destination = await deps.directory.fresh(message.destinationId);
  return { destination, step: laneStep(message, destination, slow) };
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
async function handOver(deps: DeliverDeps, t: Target): Promise<DeliverOutcome> {
  const message: LaneMessage = { kind: 'handed-over', destinationId: t.destination.id, event: t.event, publishedAt: t.publishedAt, ...(t.intake !== undefined ? { intake: t.intake } : {}), ...(t.resent ? { resent: t.resent } : {}) };
  // Bundled with the destination's other hand-overs of the moment: one push for them on its retry lane.
  const topic = await publishGathered(deps, t.destination, message);
  deps.log.info('slow destination: delivery handed to the retry lanes, its shared lane kept free', { ...t.ids, topic });
  return { kind: 'handed-over', deliveryId: t.id, topic };
}

/**
 * The destination is suspended: the event is QUEUED without an attempt (the first time it
 * reaches the lane, or when a claimed retry does), kept for reactivation or redelivery.
 */
async function queueUnattempted(deps: DeliverDeps, t: Target, message: ReadLaneMessage): Promise<DeliverOutcome> {
  const now = deps.clock.now();
  const reason = queuedBecauseSuspended(t.destination);
  if (message.kind === 'claimed') {
    const queued = await updateUnderClaim(deps.deliveries, t.id, message.claim, { type: 'queue', now, reason });
    if (!queued) return { kind: 'duplicate', deliveryId: t.id };
    await recheckQueued(deps, queued, 'suspended');
    await afterOrderedOutcome(deps, t.destination, queued, true);
  } else {
    // Nothing is sent: creating the record only if there is none is the whole duplicate check.
    const record = queuedRecord(t, t.publishedAt, now, reason);
    // A create whose reply was lost is this push's own record (createRecord), counted and checked here once.
    if (!(await createRecord(deps.deliveries, record, () => deps.deliveries.create(record, { unlessGrouped: 'here' })))) return { kind: 'duplicate', deliveryId: t.id };
    logged(deps, record, now);
    await recheckQueued(deps, record, 'suspended');
  }
  deps.counters.settled(t.destination.id, 'QUEUED', now);
  deps.log.info('delivery QUEUED: its destination is suspended', { ...t.ids, reason });
  return { kind: 'queued', deliveryId: t.id };
}

/** The delivery can no longer be attempted: DEAD through the state machine (its destination went away), counted, and its dead letter sent. */
async function abandon(deps: DeliverDeps, id: string, ids: LogFields, reason: string, event: HeraldEvent): Promise<boolean> {
  deps.log.warn(`delivery abandoned: ${reason}`, ids);
  const dead = await abandonWithDeadLetter(deps, id, reason, undefined, event);
  if (dead) deps.counters.settled(dead.destinationId, dead.status, deps.clock.now());
  return dead !== undefined;
}
