import { mayMeetRecovered } from '../../domain/intake/intake';
import { AttemptDetail, SentRequest } from '../../domain/retry/attempt-detail';
import { sendWebhook } from './webhook-send';
import { attemptReport, batchRequestFor, detailOf } from '../../domain/delivery/attempt-request';
import { BatchPlace, batchIdOf, retryBatchId } from '../../domain/modes/batching';
import { AttemptResult, deliveryId, DeliveryRecord, HeraldOverload } from '../../domain/retry/delivery';
import { applied, firstRecord, withEvent } from '../../domain/delivery/delivery-record';
import { historyOf, transition, Transition } from '../../domain/retry/delivery-state';
import { Destination, deliveryPolicyOf, rateBoundsOf } from '../../domain/destinations/destination';
import { eventKey } from '../../domain/events/event';
import { BATCH_OUTCOME_LINGER_MS } from '../../domain/delivery/grouped-outcomes';
import { ReadLaneMessage } from '../../domain/intake/lane-message';
import { DeliveryPolicy } from '../../domain/retry/delivery-policy';
import { Decision, decide, NO_HISTORY } from '../../domain/retry/retry-decision';
import { backOffUntil, countAttempt, logged, measureAttempt, meterAttempt, rateWaitFor, withFailureModeOf } from './attempt';
import { handBackOnStop, startUnderClaim, updateUnderClaim, writeUnderClaim } from './claimed-update';
import { sendDeadLetter } from '../lanes/dead-letter';
import { DeliverDeps, Target } from './delivery-context';
import { recheckQueued } from './queued-recheck';
import { createRecord } from './record-create';
import { suspendDestination } from './suspend-and-reactivate';
import { topicNotAllowed } from '../access/topic-access';
import { inBatchSpan } from '../tracing/spans';

/**
 * One batch's attempt (domain/modes/batching.ts): many events of one destination in one request,
 * under one rate turn, one decision for all of them, and each event's own record — a success in
 * the group commit (one write for the batch), anything else a document each, every member
 * carrying the batch's id and its place. A retry comes back as a batch (the pump sends each
 * claimed member to the batch lane with its place, and the batcher gathers them by batch id).
 * A Herald fault (a record that could not be written) throws: the caller releases the batch's
 * messages and Pub/Sub brings them again — a second send, never a loss.
 */

/** A first attempt's member: its lane message (first, or handed over), and whether it was most likely pulled before (redelivered-push.ts pulledBefore). */
export type FirstMember = Extract<ReadLaneMessage, { kind: 'first' | 'handed-over' }> & { pulledBefore?: true };
/** A retry's member: claimed by the pump, with its place in the batch it was first sent in. */
export type ClaimedMember = Extract<ReadLaneMessage, { kind: 'claimed' }> & { batch: BatchPlace };

export interface BatchReport {
  batchId: string;
  /** What came of the request: the decision's kind, or why nothing was sent. */
  outcome: Decision['kind'] | 'deferred' | 'backed-off' | 'nothing-to-send';
  /** Members recorded by this attempt (the others were recorded already: redeliveries, lost claims). */
  recorded: number;
  members: number;
}

interface Member {
  t: Target;
  publishedAt: string;
  place: BatchPlace;
}

/**
 * A batch's first attempt. Members of events their producer resent (`Herald-Resend`), or whose
 * messages were pulled before, are read first, as a resent first push is, and those already
 * recorded leave the batch unsent.
 */
export async function firstBatch(deps: DeliverDeps, destination: Destination, gathered: readonly FirstMember[]): Promise<BatchReport> {
  const policy = deliveryPolicyOf(destination, deps.policy);
  const messages = await unrecordedOf(deps, destination, gathered);
  if (messages.length === 0) return { batchId: batchIdOf(gathered.map((m) => targetOf(destination, policy, m, m.intake).id)), outcome: 'nothing-to-send', recorded: 0, members: gathered.length };
  const targets = messages.map((m) => targetOf(destination, policy, m, m.intake));
  const batchId = batchIdOf(targets.map((t) => t.id));
  const members = targets.map((t, i): Member => ({ t, publishedAt: messages[i]!.publishedAt, place: { id: batchId, position: i, size: targets.length } }));
  const gate = await deps.limiter.acquire(destination.id, rateBoundsOf(destination), rateWaitFor(deps, targets[0]!));
  if (gate.kind !== 'send') {
    const until = gate.kind === 'defer' ? new Date(gate.until) : backOffUntil(deps);
    const recorded = await createEach(deps, members, (m) => firstRecord(m.t, m.publishedAt, deps.clock.now(), { type: 'defer', until }));
    deps.log.info('batch deferred by rate control', { destinationId: destination.id, batchId, members: members.length, availableAt: until.toISOString() });
    return { batchId, outcome: 'deferred', recorded, members: members.length };
  }
  const at = deps.clock.now();
  const { result, sent } = await sendBatch(deps, destination, policy, members, batchId, at);
  if (result.kind === 'herald-overload') {
    const until = backOffUntil(deps);
    const recorded = await createEach(deps, members, (m) => firstRecord(m.t, m.publishedAt, at, { type: 'back-off', until }));
    deps.log.warn(`Herald's own service is overloaded (${result.error}): the batch is tried again later, no attempt counted`, { destinationId: destination.id, batchId, availableAt: until.toISOString() });
    return { batchId, outcome: 'backed-off', recorded, members: members.length };
  }
  deps.limiter.report(destination.id, result, at);
  meterAttempt(deps, destination.id, result, at, sent.body.length);
  const decision = await withFailureModeOf(deps, targets[0]!.destination, decide(policy, NO_HISTORY, result, at, oldestOf(members)));
  const detail = detailOf(sent, result, decision, at);
  const records = members.map((m) => ({ ...firstRecord(m.t, m.publishedAt, at, { type: 'attempted', at, result, decision, detail: detailFor(m.place, detail) }), batch: m.place }));
  const written: { member: Member; record: DeliveryRecord; group?: string }[] = [];
  // Late, the reconciler may have made records of its own meanwhile: created checked, as failures are (first-attempt.ts).
  const late = deps.reconcileGraceMs !== undefined && members.some((m) => mayMeetRecovered(m.publishedAt, at.getTime(), deps.reconcileGraceMs!));
  if (records[0]!.status === 'DELIVERED' && !late) {
    // All of them in the next group commit: a batch of 100 is one write (two when it spans a GROUP_SPAN_MS boundary),
    // shared with the next batch's when that ends within BATCH_OUTCOME_LINGER_MS.
    const release = deps.deliveries.expectDelivered?.() ?? (() => undefined);
    const groups: (string | undefined)[] = [];
    const adding = records.map((r, i) =>
      createRecord(
        deps.deliveries,
        r,
        async () => {
          const added = await deps.deliveries.addDelivered(r, { lingerMs: BATCH_OUTCOME_LINGER_MS });
          if (added.created) groups[i] = added.group;
          return added.created;
        },
        () => deps.deliveries.create(r, { unlessGrouped: true }),
      ),
    );
    release();
    const added = await Promise.all(adding);
    added.forEach((created, i) => created && written.push({ member: members[i]!, record: records[i]!, ...(groups[i] !== undefined ? { group: groups[i] } : {}) }));
  } else {
    const created = await Promise.all(records.map((r) => createRecord(deps.deliveries, r, () => deps.deliveries.create(r, { unlessGrouped: true }))));
    created.forEach((c, i) => c && written.push({ member: members[i]!, record: records[i]! }));
  }
  await ended(deps, destination, { result, decision, at }, written, batchId, members.length);
  return { batchId, outcome: decision.kind, recorded: written.length, members: members.length };
}

/**
 * A batch's retry: the members the pump claimed, each started under its claim (a member whose
 * claim was lost is left to whoever holds it), sent together, each outcome written under its
 * claim. The decision is the batch's: its first member's history (every member has the same
 * one) against the oldest member's publish time.
 */
export async function claimedBatch(deps: DeliverDeps, destination: Destination, messages: readonly ClaimedMember[]): Promise<BatchReport> {
  const policy = deliveryPolicyOf(destination, deps.policy);
  const startedAt = deps.clock.now();
  const sorted = [...messages].sort((a, b) => a.batch.position - b.batch.position);
  const begun = await Promise.all(
    sorted.map(async (m) => {
      const t = targetOf(destination, policy, m, undefined);
      const start = await startUnderClaim(deps.deliveries, t.id, m.claim, startedAt);
      if ('refused' in start) return undefined;
      const { started } = start;
      return { t, started, place: m.batch, publishedAt: started.publishedAt ?? started.firstAttemptAt ?? startedAt.toISOString() };
    }),
  );
  const live = begun.filter((b): b is NonNullable<typeof b> => b !== undefined);
  const original = sorted[0]!.batch;
  if (live.length === 0) return { batchId: original.id, outcome: 'nothing-to-send', recorded: 0, members: messages.length };
  const batchId = retryBatchId(original.id, original.size, live.map((l) => l.place.position));
  const underClaim = (t: Transition) => Promise.all(live.map((l) => updateUnderClaim(deps.deliveries, l.t.id, l.started.claimedAt, t)));
  const gate = await deps.limiter
    .acquire(destination.id, rateBoundsOf(destination), rateWaitFor(deps, live[0]!.t), { returning: live.some((l) => l.started.rateDeferred === true) })
    .catch((e: unknown) => handBackOnStop(e, underClaim, deps.clock.now()));
  if (gate.kind !== 'send') {
    const until = gate.kind === 'defer' ? new Date(gate.until) : backOffUntil(deps);
    const deferred = await underClaim({ type: 'defer', until });
    return { batchId, outcome: 'deferred', recorded: deferred.filter(Boolean).length, members: messages.length };
  }
  const at = deps.clock.now();
  const { result, sent } = await sendBatch(deps, destination, policy, live, batchId, at);
  if (result.kind === 'herald-overload') {
    const waiting = await underClaim({ type: 'back-off', until: backOffUntil(deps) });
    return { batchId, outcome: 'backed-off', recorded: waiting.filter(Boolean).length, members: messages.length };
  }
  deps.limiter.report(destination.id, result, at);
  meterAttempt(deps, destination.id, result, at, sent.body.length);
  const decision = await withFailureModeOf(deps, live[0]!.t.destination, decide(policy, historyOf(live[0]!.started), result, at, oldestOf(live)));
  const detail = detailOf(sent, result, decision, at);
  const written = await Promise.all(
    live.map(async (l) => {
      const record = withEvent(applied(transition(l.started, { type: 'attempted', at, result, decision, detail: detailFor(l.place, detail) })), l.t.event);
      const stored = await writeUnderClaim(deps.deliveries, l.t.id, l.started.claimedAt, record);
      return stored ? { member: { t: l.t, publishedAt: l.publishedAt, place: l.place }, record: stored } : undefined;
    }),
  );
  const kept = written.filter((w): w is NonNullable<typeof w> => w !== undefined);
  await ended(deps, destination, { result, decision, at }, kept, batchId, live.length);
  return { batchId, outcome: decision.kind, recorded: kept.length, members: messages.length };
}

/**
 * The members to send: all but those whose delivery is recorded already, of events their
 * producer resent or of messages pulled before (one read each, theirs only).
 */
async function unrecordedOf(deps: DeliverDeps, destination: Destination, messages: readonly FirstMember[]): Promise<readonly FirstMember[]> {
  const checked = (m: FirstMember) => m.resent === true || m.pulledBefore === true;
  if (!messages.some(checked)) return messages;
  const recorded = await Promise.all(messages.map((m) => (checked(m) ? deps.deliveries.get(deliveryId(destination.id, eventKey(m.event.attributes))) : Promise.resolve(undefined))));
  const kept = messages.filter((_, i) => recorded[i] === undefined);
  if (kept.length < messages.length) deps.log.info('copies of events already recorded left out of the batch (resent by their producer, or pulled again)', { destinationId: destination.id, skipped: messages.length - kept.length });
  return kept;
}

function targetOf(destination: Destination, policy: DeliveryPolicy, m: ReadLaneMessage, intake: string | undefined): Target {
  const id = deliveryId(destination.id, eventKey(m.event.attributes));
  const ids = { eventId: m.event.attributes.id, eventSource: m.event.attributes.source, destinationId: destination.id, deliveryId: id };
  return { destination, policy, event: m.event, id, ids, publishedAt: m.publishedAt, ...(intake !== undefined ? { intake } : {}) };
}

function oldestOf(members: readonly { publishedAt: string }[]): Date {
  return new Date(members.map((m) => m.publishedAt).sort()[0]!);
}

/**
 * The request once per batch. Delivered, every member has it whole: they go in one group,
 * which stores what its members share once (adapters/firestore/deliveries/delivery-groups.ts). Otherwise each
 * member is a document of its own, kept for the retention, and 100 copies of the headers would
 * cost more than the rest: the first member has it whole, the others what was decided and the
 * status, and point at it by the batch's id.
 */
function detailFor(place: BatchPlace, detail: AttemptDetail): AttemptDetail {
  if (place.position === 0 || detail.decision.kind === 'delivered') return detail;
  const { response, ...rest } = detail;
  return { ...rest, request: { headers: {}, bodyBytes: detail.request.bodyBytes }, ...(response ? { response: { status: response.status, headers: {}, bodyExcerpt: '' } } : {}) };
}

/** The batch's send, in a span linked to its members' traces (app/tracing/spans.ts). */
const sendBatch = (deps: DeliverDeps, destination: Destination, policy: DeliveryPolicy, members: readonly { t: Target }[], batchId: string, at: Date) =>
  inBatchSpan(batchId, members.map((m) => m.t.event), () => sendBatchOnce(deps, destination, policy, members, batchId, at));

async function sendBatchOnce(deps: DeliverDeps, destination: Destination, policy: DeliveryPolicy, members: readonly { t: Target }[], batchId: string, at: Date): Promise<{ result: AttemptResult | HeraldOverload; sent: SentRequest }> {
  const request = (d: Destination, bearer?: string) => batchRequestFor(d, members.map((m) => ({ event: m.t.event, deliveryId: m.t.id })), batchId, at, bearer);
  if (destination.topic === undefined) return sendWebhook(deps, destination, (d, bearer) => request(d, bearer).sent, policy.attemptTimeoutMs, at);
  const { sent, messages } = request(destination);
  const result = (await topicNotAllowed(deps, destination)) ?? (await deps.topics.publishMany({ topic: sent.target, messages: messages!, timeoutMs: policy.attemptTimeoutMs }));
  return { result, sent };
}

/** Each member's record created only if it has none (a deferral, a back-off); how many were. */
async function createEach(deps: DeliverDeps, members: readonly Member[], record: (m: Member) => DeliveryRecord): Promise<number> {
  const created = await Promise.all(
    members.map(async (m) => {
      const r = { ...record(m), batch: m.place };
      // A member delivered on this instance already (a redelivered or resent copy of it, grouped) is not put off again: a record beside its group copy would stand, and be sent again. Checked in memory: a query a deferral made a backlog's restart crawl on the emulator.
      const ok = await createRecord(deps.deliveries, r, () => deps.deliveries.create(r, { unlessGrouped: 'here' }));
      if (ok) logged(deps, r, deps.clock.now());
      return ok;
    }),
  );
  return created.filter(Boolean).length;
}

/**
 * After the members' records are written (by a first batch, or claimed retries'): each counted (stats and the success rate count events),
 * into its destination's log, dead-lettered if DEAD, re-checked if QUEUED; the destination
 * suspended once if so decided; one log line for the batch.
 */
async function ended(deps: DeliverDeps, destination: Destination, attempted: { result: AttemptResult; decision: Decision; at: Date }, written: readonly { member: Member; record: DeliveryRecord; group?: string }[], batchId: string, sent: number): Promise<void> {
  const { result, decision, at } = attempted;
  for (const { member, record, group } of written) {
    logged(deps, record, at, group);
    countAttempt(deps, member.t, result, at, member.publishedAt);
    deps.counters.settled(record.destinationId, record.status, at);
    measureAttempt(deps.metrics, destination, result, decision, record, at);
  }
  await Promise.all(written.filter((w) => w.record.status === 'DEAD').map((w) => sendDeadLetter(deps, w.member.t.event, w.record)));
  if (decision.kind === 'suspend') {
    const lastError = written[0]?.record.lastError;
    await suspendDestination(deps, destination.id, { cause: decision.cause, reason: decision.reason, ...(lastError ? { lastError } : {}) });
  }
  await Promise.all(written.filter((w) => w.record.status === 'QUEUED').map((w) => recheckQueued(deps, w.record, 'decided')));
  const first = written[0]?.record;
  const fields = { destinationId: destination.id, batchId, members: sent, recorded: written.length, ...(first ? { attempts: first.attempts } : {}) };
  const line = attemptReport(decision, result, fields, first?.availableAt);
  deps.log[line.severity](`batch: ${line.message}`, line.fields);
  deps.counters.flushInBackground();
}
