import { AttemptResult, HeraldOverload, isSuccess } from '../domain/retry/delivery';
import { HttpRequest, HttpSender } from '../ports/http';
import { TopicBatchRequest, TopicPublisher, TopicPublishRequest } from '../ports/messaging';
import { SpanAttributes, TraceCarrier, WorkSpan } from '../ports/tracing';
import { SPANS } from '../telemetry-catalogue';
import { tracing } from '../tracing';

/**
 * Every delivery's send, as a client span (`herald.send`) under the attempt's span, whose context
 * goes to the receiver: the `traceparent` (and `tracestate`) header of a webhook's request, the
 * `traceparent` attribute of a topic destination's message. Neither is signed: Standard Webhooks
 * and `github` signatures cover the id, the timestamp and the body only. A failed send of a
 * trace not sampled is still written (Tracing.keepFailure).
 */

/** What a failed send is kept as when its trace is not sampled. */
const FAILED = 'herald.send.failed';

export class TracedHttpSender implements HttpSender {
  constructor(private readonly inner: HttpSender) {}

  send(request: HttpRequest): Promise<AttemptResult> {
    const url = safeUrl(request.url);
    const attributes = { 'http.request.method': 'POST', 'server.address': url?.hostname, 'server.port': url ? Number(url.port || (url.protocol === 'https:' ? 443 : 80)) : undefined, 'url.scheme': url?.protocol.replace(':', '') };
    return tracing().inSpan(SPANS.send, { kind: 'client', attributes }, async (span) => {
      const result = await this.inner.send({ ...request, headers: { ...request.headers, ...headersOf(span.carrier) } });
      ended(span, result);
      return result;
    });
  }
}

export class TracedTopicPublisher implements TopicPublisher {
  constructor(private readonly inner: TopicPublisher) {}

  publish(request: TopicPublishRequest): Promise<AttemptResult | HeraldOverload> {
    return tracing().inSpan(SPANS.send, { kind: 'producer', attributes: topicAttributes(request.topic, 1) }, async (span) => {
      const message = { ...request.message, attributes: { ...request.message.attributes, ...headersOf(span.carrier) } };
      const result = await this.inner.publish({ ...request, message });
      ended(span, result);
      return result;
    });
  }

  publishMany(request: TopicBatchRequest): Promise<AttemptResult | HeraldOverload> {
    return tracing().inSpan(SPANS.send, { kind: 'producer', attributes: topicAttributes(request.topic, request.messages.length) }, async (span) => {
      const messages = request.messages.map((m) => ({ ...m, attributes: { ...m.attributes, ...headersOf(span.carrier) } }));
      const result = await this.inner.publishMany({ ...request, messages });
      ended(span, result);
      return result;
    });
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

function headersOf(carrier: TraceCarrier | undefined): Record<string, string> {
  if (!carrier) return {};
  return carrier.tracestate !== undefined ? { traceparent: carrier.traceparent, tracestate: carrier.tracestate } : { traceparent: carrier.traceparent };
}

function topicAttributes(topic: string, count: number): SpanAttributes {
  return { 'messaging.system': 'gcp_pubsub', 'messaging.operation.type': 'send', 'messaging.destination.name': topic, 'messaging.batch.message_count': count > 1 ? count : undefined };
}

/** The receiver's answer on the span: its status, or why there was none; a failure marked and always kept. */
function ended(span: WorkSpan, result: AttemptResult | HeraldOverload): void {
  const attributes: SpanAttributes = { 'herald.result': result.kind, 'http.response.status_code': result.kind === 'response' ? result.status : undefined };
  span.set(attributes);
  if (result.kind !== 'herald-overload' && isSuccess(result)) return;
  const why = result.kind === 'response' ? `HTTP ${result.status}` : 'error' in result ? result.error : result.kind;
  span.fail(why);
  span.set({ 'error.type': result.kind === 'response' ? String(result.status) : result.kind });
  tracing().keepFailure(FAILED, { ...attributes, 'error.type': result.kind === 'response' ? String(result.status) : result.kind, 'error.message': why });
}

function safeUrl(url: string): URL | undefined {
  try {
    return new URL(url);
  } catch {
    return undefined;
  }
}
