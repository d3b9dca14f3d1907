import { PubSubMessage } from '../events/cloudevents-pubsub';
import { DeliveryRecord, DeliveryReplay, isDeliveryId } from '../retry/delivery';
import { transition } from '../retry/delivery-state';
import { internalDestinationId, splitDestinationId } from '../ids';
import { matchesType } from '../events/event';
import { DeadLetterFacts, REPLAY_LIMITS, ReplaySelection, withoutUndefined } from './replay';

/**
 * What a replay does with each dead letter it reads: whether the request selects it and
 * whether there is a delivery to send again, and the delivery record made PENDING again.
 */

/** A message read from the dead-letter subscription. */
export interface DeadLetter {
  messageId: string;
  /** When it reached the dead-letter topic (its publishTime there): what `since`/`until` select on. */
  deadLetteredAt: Date;
  message: PubSubMessage;
}

export type Selection =
  /** Outside the request's destination, window or types: left on the topic untouched, not counted. */
  | { kind: 'unselected' }
  /** Selected, but no delivery to send again (Herald rejected the message before any delivery). */
  | { kind: 'not-replayable'; facts: DeadLetterFacts; detail: string }
  | { kind: 'replayable'; facts: DeadLetterFacts & { deliveryId: string; destination: string } };

export function factsOf(letter: DeadLetter): DeadLetterFacts {
  const a = letter.message.attributes;
  const facts: DeadLetterFacts = { messageId: letter.messageId, deadLetteredAt: letter.deadLetteredAt.toISOString() };
  const copy = (key: keyof DeadLetterFacts, attribute: string) => {
    const value = a[attribute];
    if (value !== undefined) facts[key] = value;
  };
  copy('destination', 'herald-destination');
  copy('deliveryId', 'herald-delivery-id');
  copy('eventId', 'ce-id');
  copy('eventSource', 'ce-source');
  copy('eventType', 'ce-type');
  return facts;
}

/** since ≤ t < until: consecutive windows never select a dead letter twice. */
export function inWindow(at: Date, request: Pick<ReplaySelection, 'since' | 'until'>): boolean {
  const t = at.toISOString();
  return (request.since === undefined || t >= request.since) && (request.until === undefined || t < request.until);
}

/**
 * What a run selects: the request, its window closed at the run's start. A replayed event
 * that dies again while the replay runs is dead-lettered again after that, so the run never
 * picks up (and never acks) the dead letters it causes: the next replay finds them.
 */
export function runSelection(request: ReplaySelection, startedAt: string): ReplaySelection {
  return { ...request, until: request.until !== undefined && request.until < startedAt ? request.until : startedAt };
}

export function selectDeadLetter(letter: DeadLetter, request: ReplaySelection): Selection {
  const facts = factsOf(letter);
  // An account's replay sees its own destinations' dead letters alone; the rest stay for their owners.
  if (request.account !== undefined && (facts.destination === undefined || splitDestinationId(facts.destination).account !== request.account)) return { kind: 'unselected' };
  if (request.destination !== undefined && facts.destination !== (request.account !== undefined ? internalDestinationId(request.account, request.destination) : request.destination)) return { kind: 'unselected' };
  if (!inWindow(letter.deadLetteredAt, request)) return { kind: 'unselected' };
  if (request.eventTypes !== undefined && (facts.eventType === undefined || !matchesType(request.eventTypes, facts.eventType))) return { kind: 'unselected' };
  const { deliveryId, destination } = facts;
  if (deliveryId === undefined || destination === undefined) return { kind: 'not-replayable', facts, detail: whyNoDelivery(letter.message.attributes) };
  if (!isDeliveryId(deliveryId) || !deliveryId.startsWith(`${destination}.`)) {
    return { kind: 'not-replayable', facts, detail: `herald-delivery-id ${JSON.stringify(deliveryId)} is not a delivery of destination ${JSON.stringify(destination)}` };
  }
  return { kind: 'replayable', facts: { ...facts, deliveryId, destination } };
}

function whyNoDelivery(attributes: Record<string, string>): string {
  const reason = attributes['herald-reason'];
  if (attributes['herald-delivery-id'] === undefined && reason !== undefined) {
    const error = attributes['herald-error'];
    return `Herald rejected this message (${reason}${error ? `: ${error}` : ''}) before any delivery was made: there is no delivery to send again`;
  }
  const backstop = attributes.CloudPubSubDeadLetterSourceSubscription;
  if (backstop !== undefined) return `Pub/Sub's backstop dead-lettered it from ${backstop} after repeated failed pushes: there is no delivery to send again`;
  return 'no herald-destination and herald-delivery-id attributes: not a dead delivery';
}

// ---------------------------------------------------------------- the delivery record

/**
 * DEAD → PENDING through the state machine's `redeliver` (a fresh retry budget, due now), the
 * run that died kept in `replays`. Undefined unless the record is DEAD.
 */
export function replayedRecord(current: DeliveryRecord, replayId: string, now: Date): DeliveryRecord | undefined {
  if (current.status !== 'DEAD') return undefined;
  const next = transition(current, { type: 'redeliver', now });
  if (!next.ok) return undefined;
  const run: DeliveryReplay = withoutUndefined({
    replayId,
    at: now.toISOString(),
    attempts: current.attempts,
    firstAttemptAt: current.firstAttemptAt,
    lastAttemptAt: current.lastAttemptAt,
    reason: current.reason,
    lastError: current.lastError,
  });
  return { ...next.state, replays: [...(current.replays ?? []), run].slice(-REPLAY_LIMITS.historyEntries) };
}
