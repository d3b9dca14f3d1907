import { AttemptResult, HeraldOverload } from '../../domain/retry/delivery';
import { PublishFailure, topicAttemptResult } from '../../domain/delivery/topic-destination';
import { TopicBatchRequest, TopicPublisher, TopicPublishRequest } from '../../ports/messaging';

/** What a scripted topic answers one publish with. */
export type TopicAnswer = { failure: PublishFailure } | { timedOut: true } | 'ok';

/**
 * Topic destinations in memory, for unit tests: every topic exists and takes every message
 * unless `answer` says otherwise for it (a gRPC failure, or no answer within the timeout).
 * What was published is kept in `published`.
 */
export class MemoryTopicPublisher implements TopicPublisher {
  readonly published: (TopicPublishRequest & { messageId: string })[] = [];
  private nextId = 1;

  constructor(private readonly answer: (request: TopicPublishRequest) => TopicAnswer = () => 'ok') {}

  async publish(request: TopicPublishRequest): Promise<AttemptResult | HeraldOverload> {
    const answer = this.answer(request);
    if (answer !== 'ok') return topicAttemptResult(answer, 'timedOut' in answer ? request.timeoutMs : 1, request.timeoutMs);
    const messageId = String(this.nextId++);
    this.published.push({ ...request, messageId });
    return topicAttemptResult({ messageId }, 1, request.timeoutMs);
  }

  /** Asks `answer` once, for the first message: a Publish call succeeds or fails whole. */
  async publishMany(request: TopicBatchRequest): Promise<AttemptResult | HeraldOverload> {
    const [first] = request.messages;
    if (!first) throw new Error('publishMany needs at least one message');
    const answer = this.answer({ topic: request.topic, message: first, timeoutMs: request.timeoutMs });
    if (answer !== 'ok') return topicAttemptResult(answer, 'timedOut' in answer ? request.timeoutMs : 1, request.timeoutMs);
    const ids = request.messages.map((message) => {
      const messageId = String(this.nextId++);
      this.published.push({ topic: request.topic, message, timeoutMs: request.timeoutMs, messageId });
      return messageId;
    });
    return topicAttemptResult({ messageId: ids[0]! }, 1, request.timeoutMs);
  }

  async close(): Promise<void> {}
}
