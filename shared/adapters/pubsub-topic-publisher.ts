import { PubSub, Topic } from '@google-cloud/pubsub';
import { publishFailureOf, PublishFailure, topicAttemptResult } from '../domain/topic-destination';
import { AttemptResult, HeraldOverload } from '../domain/delivery';
import { TopicPublisher, TopicPublishRequest } from '../ports';

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

  async publish(request: TopicPublishRequest): Promise<AttemptResult | HeraldOverload> {
    const { message, timeoutMs } = request;
    const started = performance.now();
    let timer: NodeJS.Timeout | undefined;
    // The client's deadline should end the call; this one answers even if it does not.
    const deadline = new Promise<Outcome>((resolve) => {
      timer = setTimeout(() => resolve({ timedOut: true }), timeoutMs);
    });
    const published = this.topic(request.topic, timeoutMs)
      .publishMessage({ data: message.data, attributes: message.attributes })
      .then(
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

  private topic(name: string, timeoutMs: number): Topic {
    const key = `${name} ${timeoutMs}`;
    let topic = this.topics.get(key);
    if (!topic) {
      topic = this.pubsub.topic(name, { batching: { maxMessages: 1, maxMilliseconds: 0 }, gaxOpts: { timeout: timeoutMs } });
      this.topics.set(key, topic);
    }
    return topic;
  }
}
