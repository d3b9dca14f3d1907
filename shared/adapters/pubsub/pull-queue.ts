import { PubSub, v1 } from '@google-cloud/pubsub';
import { GRPC, grpcCode } from '../../domain/retry/grpc-status';
import { PulledMessage, PullQueue } from '../../ports/messaging';

/** Pub/Sub's most ack ids per acknowledge / modifyAckDeadline request is 2,500 (and 512 kB); stay well below. */
const ACK_IDS_PER_REQUEST = 1000;
/** Pub/Sub's longest ack deadline. */
const MAX_HOLD_SECONDS = 600;

type Timestamp = { seconds?: number | string | { toString(): string } | null; nanos?: number | null } | null | undefined;

function dateOf(ts: Timestamp): Date {
  if (!ts) return new Date(0);
  return new Date(Number(String(ts.seconds ?? 0)) * 1000 + Math.floor((ts.nanos ?? 0) / 1e6));
}

/**
 * A pull subscription through synchronous pull (the `SubscriberClient`, not a streaming
 * listener), for readers that decide per message when to ack it, hold it or release it:
 * replay on the dead-letter hold, the batcher on the batch lane.
 * A pull waits at most `pullWaitMs` for messages (the emulator answers an empty pull about
 * half-way through it), so an empty result means nothing is waiting.
 */
export class PubSubPullQueue implements PullQueue {
  private client?: Promise<{ client: v1.SubscriberClient; path: string }>;

  constructor(
    private readonly pubsub: PubSub,
    private readonly subscription: string,
    private readonly pullWaitMs = 2000,
  ) {}

  private connect(): Promise<{ client: v1.SubscriberClient; path: string }> {
    this.client ??= this.pubsub.getClientConfig().then(({ port, ...config }) => ({
      // The emulator's host and plain-text credentials are in the config PubSub resolved.
      client: new v1.SubscriberClient({ ...config, ...(port !== undefined ? { port: Number(port) } : {}) }),
      path: `projects/${this.pubsub.projectId}/subscriptions/${this.subscription}`,
    }));
    return this.client;
  }

  async pull(max: number): Promise<PulledMessage[]> {
    const { client, path } = await this.connect();
    const received = await client.pull({ subscription: path, maxMessages: max }, { timeout: this.pullWaitMs }).then(
      ([response]) => response,
      (e: unknown) => {
        // A pull that found nothing within its wait.
        if (grpcCode(e) === GRPC.DEADLINE_EXCEEDED) return undefined;
        throw e;
      },
    );
    if (!received) return [];
    const pulled: PulledMessage[] = [];
    for (const m of received.receivedMessages ?? []) {
      if (!m.ackId || !m.message?.messageId) continue;
      const data = m.message.data;
      pulled.push({
        ackId: m.ackId,
        messageId: m.message.messageId,
        publishTime: dateOf(m.message.publishTime),
        message: { data: typeof data === 'string' ? Buffer.from(data, 'base64') : Buffer.from(data ?? []), attributes: { ...(m.message.attributes ?? {}) } },
        // 0 when the subscription has no dead-letter policy, and on the emulator: not known.
        ...(m.deliveryAttempt ? { deliveryAttempt: m.deliveryAttempt } : {}),
      });
    }
    return pulled;
  }

  async ack(ackIds: readonly string[]): Promise<void> {
    const { client, path } = await this.connect();
    for (const chunk of chunks(ackIds)) await client.acknowledge({ subscription: path, ackIds: chunk });
  }

  async hold(ackIds: readonly string[], seconds: number): Promise<void> {
    await this.modify(ackIds, Math.max(1, Math.min(MAX_HOLD_SECONDS, Math.ceil(seconds))));
  }

  async release(ackIds: readonly string[]): Promise<void> {
    await this.modify(ackIds, 0);
  }

  async close(): Promise<void> {
    if (!this.client) return;
    const { client } = await this.client;
    await client.close();
  }

  private async modify(ackIds: readonly string[], ackDeadlineSeconds: number): Promise<void> {
    const { client, path } = await this.connect();
    for (const chunk of chunks(ackIds)) await client.modifyAckDeadline({ subscription: path, ackIds: chunk, ackDeadlineSeconds });
  }
}

function chunks(ids: readonly string[]): string[][] {
  const out: string[][] = [];
  for (let i = 0; i < ids.length; i += ACK_IDS_PER_REQUEST) out.push(ids.slice(i, i + ACK_IDS_PER_REQUEST));
  return out;
}
