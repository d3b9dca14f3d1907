/**
 * Pulls a destination's lane and runs Herald's `deliverPush` on each message, as the
 * `deliver` function does for a push: acked when it returns, nacked when it throws (Pub/Sub
 * then delivers it again). Flow control bounds the messages held at once: the deliveries in
 * flight, as a push subscription's outstanding-message window does on GCP.
 */
import { Duration, Message, PubSub, Subscription } from '@google-cloud/pubsub';
import { DeliverDeps, DeliverOutcome, deliverPush } from '../../shared/app/delivery/deliver';
import { LANE_ATTRIBUTES } from '../../shared/domain/intake/lane-message';
import { heraldAttribute, PushDelivery } from '../../shared/domain/events/cloudevents-pubsub';

/** A pulled lane message as the push envelope would have carried it. */
export function pushOf(message: Message, subscription: string): PushDelivery {
  return {
    subscription,
    messageId: message.id,
    publishTime: new Date(message.publishTime.getTime()),
    message: { data: message.data, attributes: message.attributes },
  };
}

export interface LaneConsumerHooks {
  onOutcome?: (destinationId: string, outcome: DeliverOutcome) => void;
  onFailure?: (destinationId: string, error: Error) => void;
}

export interface LaneConsumer {
  readonly subscription: Subscription;
  inFlight(): number;
  peakInFlight(): number;
  /** Stops pulling, then waits (at most `waitMs`) for the deliveries in flight to finish. */
  close(waitMs?: number): Promise<void>;
}

export function consumeLane(pubsub: PubSub, subscriptionName: string, maxMessages: number, deps: DeliverDeps, hooks: LaneConsumerHooks = {}): LaneConsumer {
  let inFlight = 0;
  let peak = 0;
  const subscription = pubsub.subscription(subscriptionName, {
    flowControl: { maxMessages, allowExcessMessages: false },
    // Herald holds a message at most 30 s for its turn plus the attempt timeout (45 s together).
    minAckDeadline: Duration.from({ seconds: 60 }),
    maxAckDeadline: Duration.from({ seconds: 60 }),
  });
  subscription.on('message', (message: Message) => {
    inFlight++;
    peak = Math.max(peak, inFlight);
    const push = pushOf(message, subscription.name);
    const destinationId = heraldAttribute(push.message, LANE_ATTRIBUTES.destination) ?? '?';
    deliverPush(deps, push)
      .then(
        (outcomes) => {
          for (const outcome of outcomes) hooks.onOutcome?.(destinationId, outcome);
          message.ack();
        },
        (e: unknown) => {
          hooks.onFailure?.(destinationId, e as Error);
          message.nack();
        },
      )
      .finally(() => inFlight--);
  });
  subscription.on('error', (e: Error) => hooks.onFailure?.('?', new Error(`subscription ${subscription.name}: ${e.message}`)));
  return {
    subscription,
    inFlight: () => inFlight,
    peakInFlight: () => peak,
    async close(waitMs = 0) {
      await subscription.close();
      const deadline = Date.now() + waitMs;
      while (inFlight > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    },
  };
}
