import { PubSub, Topic } from '@google-cloud/pubsub';
import { PubSubMessage } from '../../domain/events/cloudevents-pubsub';
import { GRPC, grpcCode } from '../../domain/retry/grpc-status';
import { MessageBus, TopicNotFoundError } from '../../ports/messaging';

export class PubSubBus implements MessageBus {
  private readonly topics = new Map<string, Topic>();

  constructor(private readonly pubsub: PubSub) {}

  async publish(topic: string, message: PubSubMessage): Promise<string> {
    try {
      return await this.topic(topic).publishMessage({ data: message.data, attributes: message.attributes });
    } catch (e) {
      if (grpcCode(e) === GRPC.NOT_FOUND) throw new TopicNotFoundError(topic);
      throw e;
    }
  }

  private topic(name: string): Topic {
    let topic = this.topics.get(name);
    if (!topic) {
      // A short batching window: fan-out publishes to one lane coalesce, and a lone
      // publish waits at most 2 ms.
      topic = this.pubsub.topic(name, { batching: { maxMessages: 100, maxMilliseconds: 2 } });
      this.topics.set(name, topic);
    }
    return topic;
  }
}
