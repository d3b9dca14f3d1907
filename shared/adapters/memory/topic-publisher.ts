import { AttemptResult, HeraldOverload } from '../../domain/delivery';
import { PublishFailure, topicAttemptResult } from '../../domain/topic-destination';
import { TopicPublisher, TopicPublishRequest } from '../../ports';

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

  async close(): Promise<void> {}
}
