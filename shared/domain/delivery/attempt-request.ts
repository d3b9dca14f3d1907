import { binaryHeaders } from '../events/cloudevents-http';
import { attemptDetail, SentRequest } from '../retry/attempt-detail';
import { AttemptResult, describeFailure, isSuccess } from '../retry/delivery';
import { Destination } from '../destinations/destination';
import { eventKey, HeraldEvent } from '../events/event';
import { Decision } from '../retry/retry-decision';
import { signingSecrets } from '../destinations/secret-rotation';
import { USER_AGENT, webhookIdFor } from './signing';
import { receiverHeaders } from './receiver-headers';
import { topicMessage } from './topic-destination';
import { BATCH_CONTENT_TYPE, batchBody, batchWebhookId } from '../modes/batching';
import type { PubSubMessage } from '../events/cloudevents-pubsub';

/** What an attempt sends, by the destination's kind: a signed POST to its url, or a message to its topic. */
export function requestFor(destination: Destination, event: HeraldEvent, deliveryId: string, at: Date, bearer?: string): SentRequest {
  if (destination.topic !== undefined) {
    const message = topicMessage(event, deliveryId);
    return { target: destination.topic, headers: message.attributes, body: message.data };
  }
  const r = receiverHeaders(destination, { secrets: signingSecrets(destination, at), webhookId: webhookIdFor(eventKey(event.attributes)), at, body: event.data }, bearer);
  return {
    target: destination.url!,
    headers: { ...r.before, 'user-agent': USER_AGENT, ...binaryHeaders(event), ...r.signatures },
    body: event.data,
    ...(r.secretNames.length ? { secretNames: r.secretNames } : {}),
    ...(r.use ? { receiver: r.use } : {}),
  };
}

/**
 * What a batch's attempt sends: one signed POST of the batched content mode (`webhook-id` the
 * batch's), or, to a topic, each event as its own message, all in one Publish call (`messages`);
 * the detail then shows the batch as a JSON array.
 */
export function batchRequestFor(destination: Destination, members: readonly { event: HeraldEvent; deliveryId: string }[], batchId: string, at: Date, bearer?: string): { sent: SentRequest; messages?: PubSubMessage[] } {
  const body = batchBody(members.map((m) => m.event));
  if (destination.topic !== undefined) {
    return { sent: { target: destination.topic, headers: { 'herald-batch': batchId }, body }, messages: members.map((m) => topicMessage(m.event, m.deliveryId)) };
  }
  const r = receiverHeaders(destination, { secrets: signingSecrets(destination, at), webhookId: batchWebhookId(batchId), at, body }, bearer);
  const headers = { ...r.before, 'user-agent': USER_AGENT, 'content-type': BATCH_CONTENT_TYPE, ...r.signatures };
  return { sent: { target: destination.url!, headers, body, ...(r.secretNames.length ? { secretNames: r.secretNames } : {}), ...(r.use ? { receiver: r.use } : {}) } };
}

/** The attempt as the record keeps it (attemptLog). */
export function detailOf(sent: SentRequest, result: AttemptResult, decision: Decision, at: Date) {
  return attemptDetail(sent, result, decision, isSuccess(result) ? undefined : describeFailure(result, at).error, at);
}

/** A log line: the severity, the message, and its fields. */
export interface ReportLine {
  severity: 'debug' | 'info' | 'warn' | 'error';
  message: string;
  fields: Record<string, unknown>;
}

/** What the log says of an attempt whose outcome was recorded (`fields`: the delivery's ids and more). */
export function attemptReport(decision: Decision, result: AttemptResult, fields: Record<string, unknown>, availableAt: string | undefined): ReportLine {
  const all = { ...fields, ...resultFields(result) };
  switch (decision.kind) {
    case 'delivered':
      // The delivery record holds every success (GET …/deliveries); a log line each would cost
      // Cloud Logging about $0.20 per million deliveries at the default level.
      return { severity: 'debug', message: 'delivered', fields: all };
    case 'retry':
    case 'throttle':
      return { severity: 'warn', message: `attempt failed: ${decision.reason}`, fields: { ...all, availableAt } };
    case 'dead':
      return { severity: 'error', message: `delivery DEAD: ${decision.reason}; sent to the dead-letter topic`, fields: { ...all, cause: decision.cause } };
    case 'suspend':
      return { severity: 'error', message: `delivery QUEUED, destination suspended: ${decision.reason}`, fields: { ...all, cause: decision.cause } };
    case 'queue':
      return { severity: 'warn', message: `delivery QUEUED: ${decision.reason}`, fields: all };
  }
}

/** The attempt's outcome as log fields: the HTTP status, the Pub/Sub message id, or the kind of failure. */
export function resultFields(result: AttemptResult): Record<string, unknown> {
  switch (result.kind) {
    case 'response':
      return { httpStatus: result.status };
    case 'published':
      return { topicMessageId: result.messageId };
    case 'topic':
      return { error: result.kind, topicProblem: result.problem };
    default:
      return { error: result.kind };
  }
}
