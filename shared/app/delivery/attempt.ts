import { AttemptDetail, SentRequest } from '../../domain/retry/attempt-detail';
import { attemptReport, detailOf, requestFor } from '../../domain/delivery/attempt-request';
import { sendWebhook } from './webhook-send';
import { AttemptResult, DeliveryRecord, describeFailure, HeraldOverload, isSuccess } from '../../domain/retry/delivery';
import { overloadBackoffMs } from '../../domain/retry/herald-overload';
import { splitDestinationId } from '../../domain/ids';
import { rateWaitLimitMs } from '../../domain/delivery/lane-admission';
import { AttemptHistory, Decision, decide, withFailureMode } from '../../domain/retry/retry-decision';
import { Destination, rateBoundsOf } from '../../domain/destinations/destination';
import { AcquireOptions } from '../rate/limiter-gate';
import { rateOutcome } from '../../domain/stats/success-rate';
import { LANE_HANDLING_BUDGET_MS } from '../../topology';
import { sendDeadLetter } from '../lanes/dead-letter';
import { DeliverDeps, DeliverOutcome, Target } from './delivery-context';
import { recheckQueued } from './queued-recheck';
import { suspendDestination } from './suspend-and-reactivate';
import { afterOrderedOutcome } from '../ordering/ordered-delivery';
import { orderingKeyOf } from '../../domain/modes/ordering';
import { Transition } from '../../domain/retry/delivery-state';
import { topicNotAllowed } from '../access/topic-access';
import { AfterError, BeforeSendError, DecideError, failedIn, RecordError, SendError } from './push-verdict';
import { Metrics } from '../../ports/telemetry';
import { ATTEMPT_OUTCOMES, DESTINATION_KINDS } from '../../telemetry-catalogue';
import { inAttemptSpan } from '../tracing/spans';
import { sentBytes, usageOutcome } from '../../domain/usage/usage';

/**
 * One attempt of one delivery, first or claimed, read top to bottom: its turn (gate), the send,
 * the policy's decision, the record, and the one ending after the record (counted, logged,
 * dead-lettered, suspended). A first attempt (first-attempt.ts) and a retry the pump claimed
 * (claimed-attempt.ts) differ only in how their record is written: each hands `attempt` its
 * AttemptRecords.
 */

/** How an attempt's record is written: the one thing a first attempt and a claimed retry do differently. */
export interface AttemptRecords {
  /** What the turn is taken with: a redelivered first push's read, or a retry's return from a deferral. */
  gate: AcquireOptions;
  /** The read before the turn found the delivery done already. */
  skipped(): DeliverOutcome;
  /**
   * Nothing was attempted, and the delivery waits PENDING (`next`: put off by rate control, or
   * backed off from Herald's own overload): the record written, or how it ended instead.
   */
  unattempted(next: Unattempted): Promise<{ record: DeliveryRecord } | { ended: DeliverOutcome }>;
  /** Runs the send and its record (a first success is expected by the next group commit meanwhile). */
  around<T>(work: () => Promise<T>): Promise<T>;
  /** What the policy decides on: the attempts so far and when the event was published. */
  history: AttemptHistory;
  publishedAt(at: Date): string;
  /** The outcome written: the record to end the attempt with, or how it ended instead (a redelivery settled, a claim taken over). */
  record(sent: SentAttempt): Promise<{ record: DeliveryRecord } | { ended: DeliverOutcome }>;
}

/** Why nothing was attempted: put off by rate control, or backed off from Herald's own overload. */
export type Unattempted = Extract<Transition, { type: 'defer' | 'back-off' }>;

/** A send and what Herald made of it, before it is recorded. */
export interface SentAttempt {
  result: AttemptResult;
  decision: Decision;
  detail: AttemptDetail;
  at: Date;
  publishedAt: string;
}

/**
 * The stages of one attempt: gate, send, decide, record, after; a failure is typed by its stage
 * (push-verdict.ts); in the event's trace (app/tracing/spans.ts).
 */
export const attempt = (deps: DeliverDeps, t: Target, records: AttemptRecords) => inAttemptSpan(t, () => attemptStages(deps, t, records));

async function attemptStages(deps: DeliverDeps, t: Target, records: AttemptRecords): Promise<DeliverOutcome> {
  const gate = await deps.limiter.acquire(t.destination.id, rateBoundsOf(t.destination), rateWaitFor(deps, t), records.gate).catch(failedIn(BeforeSendError));
  if (gate.kind === 'skip') return records.skipped();
  if (gate.kind === 'defer') return waiting(deps, t, records, { type: 'defer', until: new Date(gate.until) }, 'delivery deferred by rate control').catch(failedIn(BeforeSendError));
  const at = deps.clock.now();
  return records.around(async () => {
    const { result, sent } = await send(deps, t, at).catch(failedIn(SendError));
    // Nothing reached the destination: the wait is recorded, and failing, nothing was sent.
    if (result.kind === 'herald-overload') return waiting(deps, t, records, { type: 'back-off', until: backOffUntil(deps) }, overloaded(result)).catch(failedIn(BeforeSendError));
    deps.limiter.report(t.destination.id, result, at);
    meterAttempt(deps, t.destination.id, result, at, sent.body.length);
    const publishedAt = records.publishedAt(at);
    // Counted as sent, whatever its record then becomes (a redelivery's settling, a claim taken
    // over, a write that fails and is recorded later without a second send): every request the
    // receiver answered is one attempt in the stats, and only one.
    countAttempt(deps, t, result, at, publishedAt);
    const decision = await withFailureModeOf(deps, t.destination, decide(t.policy, records.history, result, at, new Date(publishedAt))).catch(failedIn(DecideError));
    const written = await records.record({ result, decision, detail: detailOf(sent, result, decision, at), at, publishedAt }).catch(failedIn(RecordError));
    if ('ended' in written) return written.ended;
    return afterOutcome(deps, t, { result, decision, at, publishedAt }, written.record).catch(failedIn(AfterError));
  });
}

/** The delivery waits PENDING, nothing attempted: recorded so, and said why in the log. */
async function waiting(deps: DeliverDeps, t: Target, records: AttemptRecords, next: Unattempted, why: string): Promise<DeliverOutcome> {
  const written = await records.unattempted(next);
  if ('ended' in written) return written.ended;
  const until = written.record.availableAt!;
  deps.log[next.type === 'back-off' ? 'warn' : 'info'](why, { ...t.ids, availableAt: until });
  return { kind: 'deferred', deliveryId: t.id, until };
}

/** Herald's own service failed the send: the destination was not tried, and no attempt is counted. */
function overloaded(result: HeraldOverload): string {
  return `Herald's own service is overloaded (${result.error}): no attempt counted; trying again later`;
}

/** An attempt as it ended: what came of it, what Herald decided, when it started, and when the event was published. */
export interface Attempted {
  result: AttemptResult;
  decision: Decision;
  at: Date;
  publishedAt: string;
}

/**
 * After an attempt's outcome is recorded, and only then (a send whose record was there already
 * is settled as a redelivery instead, so nothing is counted or dead-lettered twice): counted,
 * logged, dead-lettered if DEAD, its destination suspended if so decided, and a QUEUED delivery
 * whose destination was deleted meanwhile made DEAD.
 */
export async function afterOutcome(deps: DeliverDeps, t: Target, attempted: Attempted, record: DeliveryRecord): Promise<DeliverOutcome> {
  const { decision, at } = attempted;
  reported(deps, t, attempted, record);
  deps.counters.settled(record.destinationId, record.status, at);
  if (record.status === 'DEAD') await sendDeadLetter(deps, t.event, record);
  if (decision.kind === 'suspend') {
    await suspendDestination(deps, t.destination.id, { cause: decision.cause, reason: decision.reason, ...(record.lastError ? { lastError: record.lastError } : {}) });
  }
  if (record.status === 'QUEUED') await recheckQueued(deps, record, 'decided');
  await afterOrderedOutcome(deps, t.destination, record, decision.kind === 'suspend');
  return { kind: 'attempted', deliveryId: t.id, decision: decision.kind, status: record.status };
}

/**
 * One attempt, timed for the slow-destination verdict (SlowDestinations): what came of it, and
 * what was sent. A topic destination's topic is checked against its account's list first.
 */
export async function send(deps: DeliverDeps, t: Target, at: Date): Promise<{ result: AttemptResult | HeraldOverload; sent: SentRequest }> {
  const ticket = deps.slow.begin(t.destination.id, at.getTime());
  let result: AttemptResult | HeraldOverload | undefined;
  try {
    if (t.destination.topic === undefined) {
      const webhook = await sendWebhook(deps, t.destination, (d, bearer) => requestFor(d, t.event, t.id, at, bearer), t.policy.attemptTimeoutMs, at);
      result = webhook.result;
      return webhook;
    }
    const sent = requestFor(t.destination, t.event, t.id, at);
    result =
      (await topicNotAllowed(deps, t.destination)) ??
      (await deps.topics.publish({ topic: sent.target, message: { data: sent.body, attributes: { ...sent.headers } }, timeoutMs: t.policy.attemptTimeoutMs, ...orderingKeyOf(t.destination, t.event) }));
    return { result, sent };
  } finally {
    const durationMs = result?.durationMs ?? deps.clock.now().getTime() - at.getTime();
    deps.slow.end(t.destination.id, ticket, deps.clock.now().getTime(), durationMs, result?.kind === 'timeout');
  }
}

/**
 * How long a delivery may wait for its turn: the runtime's limit, shorter on a shared lane,
 * shortened for a policy whose attempt timeout is long (the rule: domain/delivery/lane-admission.ts).
 */
export function rateWaitFor(deps: DeliverDeps, t: Pick<Target, 'destination' | 'policy' | 'bundle'>): number {
  return rateWaitLimitMs(t.destination, t.policy.attemptTimeoutMs, { dedicatedMs: deps.maxRateWaitMs, sharedMs: deps.sharedLaneWaitMs, handlingBudgetMs: LANE_HANDLING_BUDGET_MS }, t.bundle !== undefined);
}

/**
 * A failure retried or queued as the destination's `failureMode` says, or, without one, as its
 * account's policy does (docs/accounts.md): looked up only when the attempt failed.
 */
export async function withFailureModeOf(deps: DeliverDeps, destination: Pick<Destination, 'id' | 'failureMode'>, decision: Decision): Promise<Decision> {
  if (decision.kind !== 'retry' && decision.kind !== 'dead') return decision;
  const mode = destination.failureMode ?? (deps.failurePolicy ? await deps.failurePolicy(splitDestinationId(destination.id).account) : 'retry');
  return withFailureMode(decision, mode);
}

/** When a delivery that met Herald's own overload is tried again (10 s ± 20 %). */
export function backOffUntil(deps: DeliverDeps): Date {
  return new Date(deps.clock.now().getTime() + overloadBackoffMs(Math.random()));
}

/** Every attempt counts toward the destination's success rate (docs/suspension.md; the rules in rateOutcome). */
export function countAttempt(deps: DeliverDeps, t: Pick<Target, 'destination' | 'policy'>, result: AttemptResult, at: Date, publishedAt: string): void {
  const windowMs = t.policy.threshold?.windowMs ?? deps.counters.hourMs;
  const outcome = rateOutcome(result, at.getTime() - Date.parse(publishedAt), windowMs);
  deps.counters.record(t.destination.id, outcome, at, isSuccess(result) ? undefined : describeFailure(result, at), result.durationMs);
}

/**
 * A request (or topic publish) made to a destination, in its account's usage: counted as sent,
 * as the success rate counts it (every request the receiver answered is one attempt, and only
 * one); a batch's once, its whole body.
 */
export function meterAttempt(deps: Pick<DeliverDeps, 'counters'>, destinationId: string, result: AttemptResult, at: Date, bodyBytes: number): void {
  deps.counters.meter(splitDestinationId(destinationId).account, at, { attempts: { [usageOutcome(result)]: 1 }, bytesSent: sentBytes(result, bodyBytes) });
}

/**
 * An attempt said in its log line (the line: domain/delivery/attempt-request.ts attemptReport) and
 * measured; it was counted toward its destination's success rate when it was sent (attemptStages).
 */
export function reported(deps: DeliverDeps, t: Target, attempted: Attempted, record: DeliveryRecord): void {
  const { result, decision } = attempted;
  const fields = { ...t.ids, attempts: record.attempts, durationMs: result.durationMs, policy: t.policy.name, ...(t.destination.topic !== undefined ? { topic: t.destination.topic } : {}) };
  const line = attemptReport(decision, result, fields, record.availableAt);
  deps.log[line.severity](line.message, line.fields);
  measureAttempt(deps.metrics, t.destination, result, decision, record, deps.clock.now());
}

/** Which of the catalogue's outcomes an attempt came to, from what Herald decided and the record it wrote. */
export function attemptOutcome(decision: Decision, record: Pick<DeliveryRecord, 'status'>): (typeof ATTEMPT_OUTCOMES)[number] {
  if (decision.kind === 'suspend') return 'suspended';
  if (record.status === 'DELIVERED') return 'delivered';
  if (record.status === 'DEAD') return 'dead';
  if (record.status === 'QUEUED') return 'queued';
  return 'retry';
}

export function destinationKind(destination: Pick<Destination, 'topic'>): (typeof DESTINATION_KINDS)[number] {
  return destination.topic !== undefined ? 'topic' : 'webhook';
}

/**
 * One recorded attempt into Herald's metrics: counted by outcome, its send timed, and a delivery
 * timed from the event accepted to its 2xx. Labels are the outcome and the destination's kind
 * only, so the series are as many whatever the number of destinations.
 */
export function measureAttempt(metrics: Metrics | undefined, destination: Pick<Destination, 'topic'>, result: AttemptResult, decision: Decision, record: DeliveryRecord, now: Date): void {
  if (!metrics) return;
  const labels = { outcome: attemptOutcome(decision, record), destination_kind: destinationKind(destination) };
  metrics.add('attempts', 1, labels);
  metrics.record('attemptDuration', result.durationMs, labels);
  if (labels.outcome === 'delivered' && record.publishedAt !== undefined) {
    metrics.record('endToEnd', Math.max(0, now.getTime() - Date.parse(record.publishedAt)), { destination_kind: labels.destination_kind });
  }
}

/** A record was written (created, or a claimed batch's written again): into the head of its destination's log (domain/delivery/recent-log.ts), with the counters; a grouped one with its group. */
export function logged(deps: DeliverDeps, record: DeliveryRecord, at: Date, group?: string): void {
  if (record.publishedAt !== undefined) deps.logHead.created(record.destinationId, record.id, record.publishedAt, at, group);
}
