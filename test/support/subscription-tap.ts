import { Message, PubSub, Subscription } from '@google-cloud/pubsub';
import { eventually } from './eventually';

export interface TappedMessage {
  attributes: Record<string, string>;
  data: Buffer;
  /** Pub/Sub's ordering key, when the message was published with one. */
  orderingKey?: string;
}

/**
 * Streams a test project's subscription into `received`, acking as it goes: how tests read
 * the dead-letter topic (as an operator would) or watch what reached a topic.
 */
export class SubscriptionTap {
  readonly received: TappedMessage[] = [];
  /** Stream errors: a test that expects none asserts this is empty. */
  readonly errors: Error[] = [];
  private readonly pubsub: PubSub;
  private readonly subscription: Subscription;

  /** `subscription` must exist; `create` names the topic to make it on first. */
  static async create(projectId: string, subscription: string, topic: string): Promise<SubscriptionTap> {
    const pubsub = new PubSub({ projectId });
    await pubsub.topic(topic).createSubscription(subscription);
    await pubsub.close();
    return new SubscriptionTap(projectId, subscription);
  }

  constructor(projectId: string, subscription: string) {
    this.pubsub = new PubSub({ projectId });
    this.subscription = this.pubsub.subscription(subscription);
    this.subscription.on('message', (m: Message) => {
      this.received.push({ attributes: { ...m.attributes }, data: Buffer.from(m.data), ...(m.orderingKey ? { orderingKey: m.orderingKey } : {}) });
      m.ack();
    });
    this.subscription.on('error', (e: Error) => this.errors.push(e));
  }

  /** The first message that matches, once it has arrived. */
  find(what: string, match: (m: TappedMessage) => boolean, timeoutMs = 20_000): Promise<TappedMessage> {
    return eventually(what, () => this.received.find(match), timeoutMs);
  }

  async close(): Promise<void> {
    await this.subscription.close();
    await this.pubsub.close();
  }
}
