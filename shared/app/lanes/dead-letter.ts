import type { RejectReason } from '../../domain/delivery/lane-step';
import { PushDelivery, toPubSubMessage } from '../../domain/events/cloudevents-pubsub';
import { DeliveryRecord } from '../../domain/retry/delivery';
import { transition } from '../../domain/retry/delivery-state';
import { HeraldEvent } from '../../domain/events/event';
import { wellFormed } from '../../domain/events/json-body';
import { Clock, Logger } from '../../ports/clock';
import { DeliveryStore } from '../../ports/deliveries';
import { MessageBus } from '../../ports/messaging';
import { Metrics } from '../../ports/telemetry';
import { deadNotice, isOperational, OperationalEmitter } from '../../domain/operational/operational-events';

export type { RejectReason };

/** Pub/Sub caps an attribute value at 1024 bytes; errors and reasons are cut well below. */
const ATTRIBUTE_TEXT = 900;

/** Cut to ATTRIBUTE_TEXT, never inside a surrogate pair (half a pair is not UTF-8: the publish would fail). */
const cut = (text: string): string => wellFormed(text.slice(0, ATTRIBUTE_TEXT));

/**
 * Puts a pushed message Herald cannot process onto the dead-letter topic as it came, with
 * why: nothing Herald accepts disappears without a trace an operator can find and replay.
 */
export async function rejectToDeadLetter(bus: MessageBus, topic: string, push: PushDelivery, reason: RejectReason, detail: string): Promise<void> {
  const attributes: Record<string, string> = {
    ...push.message.attributes,
    'herald-reason': reason,
    'herald-error': cut(detail),
    'herald-message-id': push.messageId,
    'herald-subscription': push.subscription,
  };
  // A lone UTF-16 surrogate (a forged push) cannot be published: Pub/Sub would fail it after a minute of retries and the push come back forever. U+FFFD in its place.
  await bus.publish(topic, { data: push.message.data, attributes: Object.fromEntries(Object.entries(attributes).map(([k, v]) => [wellFormed(k), wellFormed(v)])) });
}

/**
 * A DEAD delivery onto the dead-letter topic: the whole event in the CloudEvents Pub/Sub
 * binding, and `herald-` attributes naming the destination, the attempts, the last error,
 * the reason and the first and last attempt times, and, for a replayed delivery, its earlier runs.
 */
export async function publishDeadDelivery(bus: MessageBus, topic: string, event: HeraldEvent, record: DeliveryRecord): Promise<void> {
  const attributes: Record<string, string> = {
    destination: record.destinationId,
    'delivery-id': record.id,
    attempts: String(record.attempts),
    reason: cut(record.reason ?? 'dead'),
  };
  if (record.lastError) {
    attributes['last-error'] = cut(record.lastError.error);
    if (record.lastError.status !== undefined) attributes['last-status'] = String(record.lastError.status);
  }
  if (record.firstAttemptAt) attributes['first-attempt-at'] = record.firstAttemptAt;
  if (record.lastAttemptAt) attributes['last-attempt-at'] = record.lastAttemptAt;
  if (record.publishedAt) attributes['published-at'] = record.publishedAt;
  // A replayed delivery that died again: its earlier runs, kept on the record (domain/replay/replay-selection.ts).
  const replays = record.replays ?? [];
  if (replays.length > 0) {
    attributes.replays = String(replays.length);
    attributes['replay-id'] = replays[replays.length - 1]!.replayId;
    attributes['attempts-before-replay'] = String(replays.reduce((n, r) => n + r.attempts, 0));
    const first = replays[0]!.firstAttemptAt;
    if (first) attributes['original-first-attempt-at'] = first;
  }
  await bus.publish(topic, toPubSubMessage(event, attributes));
}

export interface DeadLetterDeps {
  bus: MessageBus;
  deadLetterTopic: string;
  deliveries: DeliveryStore;
  log: Logger;
  /** Herald's own metrics; absent: none recorded. */
  metrics?: Metrics;
  /** Announces the death (`herald.delivery.dead`); absent: nobody is told but the dead-letter topic. */
  operational?: OperationalEmitter;
}

/**
 * The dead letter a DEAD record owes (its `deadLetterDueAt`), published after the record was
 * written — so only the one writer that made the delivery DEAD publishes it — and then marked
 * sent. A publish that fails, or a process that dies before the mark, leaves the mark for the
 * reconciler, which publishes again: a dead letter may be published twice, never not at all.
 * Resolves whether it was published.
 */
export async function sendDeadLetter(deps: DeadLetterDeps, event: HeraldEvent, record: DeliveryRecord): Promise<boolean> {
  const ids = { eventId: record.eventId, destinationId: record.destinationId, deliveryId: record.id };
  try {
    await publishDeadDelivery(deps.bus, deps.deadLetterTopic, event, record);
  } catch (e) {
    deps.log.warn('the dead letter could not be published now; the reconciler publishes it later', { ...ids, error: (e as Error).message });
    return false;
  }
  deps.metrics?.add('deadLettered', 1);
  try {
    await deps.deliveries.update(record.id, (current) => {
      if (!current) return undefined;
      const next = transition(current, { type: 'dead-lettered' });
      return next.ok ? next.state : undefined;
    });
  } catch (e) {
    // The letter is out; at worst the reconciler publishes it once more.
    deps.log.warn('the dead letter was published but not marked sent; it may be published once more', { ...ids, error: (e as Error).message });
  }
  // Last, once the letter is out and marked. Not for an operational event's own death: a notice about a notice could chain between two failing destinations.
  if (deps.operational && !isOperational(event)) await deps.operational.emit(deadNotice(record, event));
  return true;
}

/**
 * A delivery that can no longer be attempted (its destination went away): DEAD through the
 * state machine's `abandon`, if `still` holds of the record as it stands then, and its dead
 * letter sent (with `event`, else the one the record holds). What was written, if anything.
 */
export async function abandonWithDeadLetter(
  deps: DeadLetterDeps & { clock: Clock },
  id: string,
  reason: string,
  still: (current: DeliveryRecord) => boolean = () => true,
  event?: HeraldEvent,
): Promise<DeliveryRecord | undefined> {
  const dead = await deps.deliveries.update(id, (current) => {
    if (!current || !still(current)) return undefined;
    const next = transition(current, { type: 'abandon', reason, now: deps.clock.now() });
    return next.ok ? next.state : undefined;
  });
  const letter = event ?? dead?.event;
  if (dead && letter) await sendDeadLetter(deps, letter, dead);
  return dead;
}
