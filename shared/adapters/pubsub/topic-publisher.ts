import { PubSub, Topic } from '@google-cloud/pubsub';
import { publishFailureOf, PublishFailure, topicAttemptResult } from '../../domain/delivery/topic-destination';
import { AttemptResult, HeraldOverload } from '../../domain/retry/delivery';
import { TopicBatchRequest, TopicPublisher, TopicPublishRequest } from '../../ports/messaging';

type Outcome = { messageId: string } | { failure: PublishFailure } | { timedOut: true };

/**
 * Publishes to Pub/Sub-topic destinations, each attempt one Publish call with a deadline.
 *
 * One client serves every project: a destination's topic is a full resource name
 * (`projects/P/topics/T`), which the client sends as it is, so the topic's own project is
 * the one published to; the caller's identity (the runtime service account) needs
 * `roles/pubsub.publisher` on it. Locally the emulator serves any project id.
 *
 * Batching is off (one message per request, sent at once) and the call's deadline is the
 * attempt timeout: the client's own retries of transient codes (UNAVAILABLE…) stay within
 * it, and a publish with no answer by then is a timeout. Topic objects are cached per
 * (topic, timeout), since the deadline is a setting of the Topic object.
 */
export class PubSubTopicPublisher implements TopicPublisher {
  private readonly topics = new Map<string, Topic>();

  constructor(private readonly pubsub: PubSub) {}

  publish(request: TopicPublishRequest): Promise<AttemptResult | HeraldOverload> {
    const { message, timeoutMs, orderingKey } = request;
    const topic = this.topic(request.topic, timeoutMs, orderingKey !== undefined);
    return this.timed(timeoutMs, async () => {
      try {
        return await topic.publishMessage({ data: message.data, attributes: message.attributes, ...(orderingKey !== undefined ? { orderingKey } : {}) });
      } catch (e) {
        // The client pauses a key after a failed publish; Herald's own order (one attempt at a time per key) makes resuming safe.
        if (orderingKey !== undefined) topic.resumePublishing(orderingKey);
        throw e;
      }
    });
  }

  /**
   * A Topic of its own per call, batching exactly the batch's messages: they leave in one
   * Publish request (the client sends a batch when it holds `maxMessages`), and the call's
   * outcome is its first failure, if any.
   */
  publishMany(request: TopicBatchRequest): Promise<AttemptResult | HeraldOverload> {
    const { messages, timeoutMs } = request;
    const bytes = messages.reduce((n, m) => n + m.data.length + Object.entries(m.attributes).reduce((a, [k, v]) => a + k.length + v.length, 0), 0);
    const topic = this.pubsub.topic(request.topic, { batching: { maxMessages: messages.length, maxMilliseconds: 10, maxBytes: Math.max(bytes * 2, 1024) }, gaxOpts: { timeout: timeoutMs } });
    return this.timed(timeoutMs, async () => {
      const ids = await Promise.all(messages.map((m) => topic.publishMessage({ data: m.data, attributes: m.attributes })));
      return ids[0]!;
    });
  }

  private async timed(timeoutMs: number, publish: () => Promise<string>): Promise<AttemptResult | HeraldOverload> {
    const started = performance.now();
    let timer: NodeJS.Timeout | undefined;
    // The client's deadline should end the call; this one answers even if it does not.
    const deadline = new Promise<Outcome>((resolve) => {
      timer = setTimeout(() => resolve({ timedOut: true }), timeoutMs);
    });
    const published = publish().then(
      (messageId): Outcome => ({ messageId }),
      (error: unknown): Outcome => ({ failure: publishFailureOf(error) }),
    );
    try {
      const outcome = await Promise.race([published, deadline]);
      return topicAttemptResult(outcome, Math.round(performance.now() - started), timeoutMs);
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    this.topics.clear();
    await this.pubsub.close();
  }

  private topic(name: string, timeoutMs: number, ordered = false): Topic {
    const key = `${name} ${timeoutMs}${ordered ? ' ordered' : ''}`;
    let topic = this.topics.get(key);
    if (!topic) {
      topic = this.pubsub.topic(name, { batching: { maxMessages: 1, maxMilliseconds: 0 }, gaxOpts: { timeout: timeoutMs }, ...(ordered ? { messageOrdering: true } : {}) });
      this.topics.set(key, topic);
    }
    return topic;
  }
}
