import { Message, PubSub, Subscription } from '@google-cloud/pubsub';
import { eventually } from './eventually';

export interface DeadLetter {
  attributes: Record<string, string>;
  data: Buffer;
}

/** Reads the dead-letter topic's hold subscription of a test project, as an operator would. */
export class DeadLetterReader {
  readonly received: DeadLetter[] = [];
  private readonly pubsub: PubSub;
  private readonly subscription: Subscription;

  constructor(projectId: string, subscription: string) {
    this.pubsub = new PubSub({ projectId });
    this.subscription = this.pubsub.subscription(subscription);
    this.subscription.on('message', (m: Message) => {
      this.received.push({ attributes: { ...m.attributes }, data: Buffer.from(m.data) });
      m.ack();
    });
  }

  /** The first dead letter that matches, once it has arrived. */
  find(what: string, match: (d: DeadLetter) => boolean, timeoutMs = 20_000): Promise<DeadLetter> {
    return eventually(`a dead letter: ${what}`, () => this.received.find(match), timeoutMs);
  }

  async close(): Promise<void> {
    await this.subscription.close();
    await this.pubsub.close();
  }
}
