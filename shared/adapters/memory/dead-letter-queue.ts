import { PubSubMessage } from '../../domain/events/cloudevents-pubsub';
import { DeadLetterQueue, PulledMessage } from '../../ports/messaging';

interface Stored {
  messageId: string;
  publishTime: Date;
  message: PubSubMessage;
  /** Outstanding: held by a reader until then (ms of the queue's clock). */
  heldUntil?: number;
  ackId?: string;
}

/**
 * The dead-letter subscription in memory, with the emulator's manners: a released message
 * comes back at the front of the next pull, a pulled one is held for `ackDeadlineMs`.
 */
export class MemoryDeadLetterQueue implements DeadLetterQueue {
  private readonly messages: Stored[] = [];
  private nextId = 1;
  private nextAck = 1;
  /** Every call, for tests that check what was acked or released. */
  readonly acked: string[] = [];
  readonly released: string[] = [];

  constructor(
    private readonly now: () => number = () => Date.now(),
    private readonly ackDeadlineMs = 60_000,
  ) {}

  add(message: PubSubMessage, publishTime: Date): string {
    const messageId = String(this.nextId++);
    this.messages.push({ messageId, publishTime, message: { data: Buffer.from(message.data), attributes: { ...message.attributes } } });
    return messageId;
  }

  /** Message ids still on the topic. */
  remaining(): string[] {
    return this.messages.map((m) => m.messageId);
  }

  async pull(max: number): Promise<PulledMessage[]> {
    const now = this.now();
    const available = this.messages.filter((m) => m.heldUntil === undefined || m.heldUntil <= now).slice(0, max);
    return available.map((m) => {
      m.heldUntil = now + this.ackDeadlineMs;
      m.ackId = `ack-${this.nextAck++}`;
      return { ackId: m.ackId, messageId: m.messageId, publishTime: m.publishTime, message: { data: Buffer.from(m.message.data), attributes: { ...m.message.attributes } } };
    });
  }

  async ack(ackIds: readonly string[]): Promise<void> {
    for (const id of ackIds) {
      const i = this.messages.findIndex((m) => m.ackId === id);
      if (i >= 0) {
        this.acked.push(this.messages[i]!.messageId);
        this.messages.splice(i, 1);
      }
    }
  }

  async hold(ackIds: readonly string[], seconds: number): Promise<void> {
    for (const m of this.outstanding(ackIds)) m.heldUntil = this.now() + seconds * 1000;
  }

  async release(ackIds: readonly string[]): Promise<void> {
    for (const m of this.outstanding(ackIds)) {
      this.released.push(m.messageId);
      delete m.heldUntil;
      // The emulator hands a nacked message out again first.
      this.messages.splice(this.messages.indexOf(m), 1);
      this.messages.unshift(m);
    }
  }

  private outstanding(ackIds: readonly string[]): Stored[] {
    return this.messages.filter((m) => m.ackId !== undefined && ackIds.includes(m.ackId));
  }
}
