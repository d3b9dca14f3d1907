import { PushDelivery, toPubSubMessage } from '../domain/cloudevents-pubsub';
import { DeliveryRecord } from '../domain/delivery';
import { HeraldEvent } from '../domain/event';
import { MessageBus } from '../ports';

export type RejectReason = 'invalid-event' | 'invalid-lane-message' | 'destination-deleted' | 'type-unsubscribed' | 'unsupported-destination';

/** Pub/Sub caps an attribute value at 1024 bytes; errors and reasons are cut well below. */
const ATTRIBUTE_TEXT = 900;

/**
 * Puts a pushed message Herald cannot process onto the dead-letter topic as it came, with
 * why: nothing Herald accepts disappears without a trace an operator can find and replay.
 */
export async function rejectToDeadLetter(bus: MessageBus, topic: string, push: PushDelivery, reason: RejectReason, detail: string): Promise<void> {
  await bus.publish(topic, {
    data: push.message.data,
    attributes: {
      ...push.message.attributes,
      'herald-reason': reason,
      'herald-error': detail.slice(0, ATTRIBUTE_TEXT),
      'herald-message-id': push.messageId,
      'herald-subscription': push.subscription,
    },
  });
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
    reason: (record.reason ?? 'dead').slice(0, ATTRIBUTE_TEXT),
  };
  if (record.lastError) {
    attributes['last-error'] = record.lastError.error.slice(0, ATTRIBUTE_TEXT);
    if (record.lastError.status !== undefined) attributes['last-status'] = String(record.lastError.status);
  }
  if (record.firstAttemptAt) attributes['first-attempt-at'] = record.firstAttemptAt;
  if (record.lastAttemptAt) attributes['last-attempt-at'] = record.lastAttemptAt;
  if (record.publishedAt) attributes['published-at'] = record.publishedAt;
  // A replayed delivery that died again: its earlier runs, kept on the record (domain/replay.ts).
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
