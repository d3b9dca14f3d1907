import { PushDelivery } from '../domain/cloudevents-pubsub';
import { MessageBus } from '../ports';

export type RejectReason = 'invalid-event' | 'invalid-lane-message' | 'destination-deleted' | 'type-unsubscribed' | 'unsupported-destination';

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
      'herald-error': detail.slice(0, 1000),
      'herald-message-id': push.messageId,
      'herald-subscription': push.subscription,
    },
  });
}
