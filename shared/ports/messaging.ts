import { PubSubMessage } from '../domain/events/cloudevents-pubsub';
import { AttemptResult, HeraldOverload } from '../domain/retry/delivery';

/** Pub/Sub as Herald uses it: publishing, lanes, pulled queues, topic destinations. Only shared/adapters/ implements these with SDKs and sockets. */

export interface MessageBus {
  /** Publishes and resolves with the message id once Pub/Sub has it durably. */
  publish(topic: string, message: PubSubMessage): Promise<string>;
}

/** A topic that does not exist: callers may provision it and publish again. */
export class TopicNotFoundError extends Error {
  override name = 'TopicNotFoundError';
  constructor(readonly topic: string) {
    super(`Pub/Sub topic ${topic} does not exist`);
  }
}

/**
 * A dedicated lane that this deployment has not declared (HERALD_LANE_PROVISIONING=declared:
 * the Pulumi program creates dedicated lanes, Herald may not). The message says what to do.
 */
export class LaneNotDeclaredError extends Error {
  override name = 'LaneNotDeclaredError';
  constructor(readonly destinationId: string) {
    super(
      `destination ${destinationId} asks for a dedicated lane, and this deployment creates dedicated lanes only where its Pulumi stack declares them: add "${destinationId}" to herald:dedicatedLanes and run pulumi up, then send the destination again (or leave "lane" out to use the shared lanes)`,
    );
  }
}

export interface LaneProvisioner {
  /** Creates the destination's lane topic and push subscription if missing; idempotent. */
  ensureLane(destinationId: string): Promise<void>;
  removeLane(destinationId: string): Promise<void>;
  /** Destinations that have a lane of their own now (dedicated, or from before lanes were shared). */
  existingLanes?(): Promise<string[]>;
}

/** One publish to a Pub/Sub-topic destination. */
export interface TopicPublishRequest {
  /** The full resource name, `projects/P/topics/T` (any project). */
  topic: string;
  message: PubSubMessage;
  timeoutMs: number;
  /** Pub/Sub's ordering key (an ordered destination's partition key): subscribers with message ordering get a key's messages in order. */
  orderingKey?: string;
}

/** A batch's publish to a Pub/Sub-topic destination. */
export interface TopicBatchRequest {
  topic: string;
  messages: PubSubMessage[];
  timeoutMs: number;
}

export interface TopicPublisher {
  /**
   * Publishes once, within `timeoutMs`. Never throws for the topic's faults: its result is
   * `published`, a `topic` refusal (permission denied, not found), a `timeout`, a
   * `network` error, or `herald-overload` when Pub/Sub itself could not take the call
   * (domain/delivery/topic-destination.ts topicAttemptResult).
   */
  publish(request: TopicPublishRequest): Promise<AttemptResult | HeraldOverload>;
  /**
   * A batch (domain/modes/batching.ts): every message in one Publish call, within `timeoutMs`. The
   * same results as `publish`, for the call as a whole (`published` carries the first message's id).
   */
  publishMany(request: TopicBatchRequest): Promise<AttemptResult | HeraldOverload>;
  close(): Promise<void>;
}

/** A message pulled from a subscription, held by this reader until acked or released. */
export interface PulledMessage {
  ackId: string;
  messageId: string;
  publishTime: Date;
  message: PubSubMessage;
  /** Pub/Sub's count of its deliveries (a subscription with a dead-letter policy); absent on the emulator. */
  deliveryAttempt?: number;
}

/**
 * A topic read through a pull subscription: the dead-letter topic (replay), the batch lane (the
 * batcher). A pulled message stays on the topic until acked; released, it is delivered again to
 * the next pull.
 */

/**
 * Whether a batcher is running (app/lanes/batcher-wake.ts): one document, which a batcher writes
 * while it pulls (until when it is sure to go on) and ingest reads when it has no such time in
 * view.
 */
export interface BatcherLeaseStore {
  aliveUntil(): Promise<Date | undefined>;
  keepAlive(until: Date): Promise<void>;
}

export interface PullQueue {
  /** Up to `max` messages; none when nothing is waiting (after a short wait). */
  pull(max: number): Promise<PulledMessage[]>;
  /** Removes them from the topic. */
  ack(ackIds: readonly string[]): Promise<void>;
  /** Keeps them from every other pull (this one's included) for `seconds` (at most 600). */
  hold(ackIds: readonly string[], seconds: number): Promise<void>;
  /** Leaves them on the topic, as they were, for the next reader. */
  release(ackIds: readonly string[]): Promise<void>;
}

/** The dead-letter topic through its hold subscription. */
export type DeadLetterQueue = PullQueue;

/** Replay reports, one document per replay id. */
