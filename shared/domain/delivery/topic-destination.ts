import { z } from 'zod';
import { toPubSubMessage, PubSubMessage } from '../events/cloudevents-pubsub';
import { AttemptResult, HeraldOverload } from '../retry/delivery';
import { OVERLOAD_GRPC_CODES } from '../retry/herald-overload';
import { GRPC, grpcName } from '../retry/grpc-status';
import { HeraldEvent } from '../events/event';

/**
 * A Pub/Sub-topic destination: what it is sent (the CloudEvents Pub/Sub binding) and what a
 * publish's outcome comes to as an attempt. Pure: the adapter only reports the gRPC status.
 */

/** The one Herald attribute a topic destination gets beside the `ce-*` ones: the same on every attempt and replay. */
export const TOPIC_DELIVERY_ID_ATTRIBUTE = 'delivery-id';

/**
 * The message published to a topic destination: every context attribute as `ce-<name>`,
 * datacontenttype as `content-type`, the event data unchanged as the message data, and
 * `herald-delivery-id` (the delivery record id, `<destination>.<event key>`).
 */
export function topicMessage(event: HeraldEvent, deliveryId: string): PubSubMessage {
  return toPubSubMessage(event, { [TOPIC_DELIVERY_ID_ATTRIBUTE]: deliveryId });
}

/** What a failed publish threw, as far as Herald reads it: a gRPC status code and a message. */
const publishErrorSchema = z.looseObject({ code: z.number().int().optional(), message: z.string().optional() });

export interface PublishFailure {
  /** The gRPC status; absent when the error did not carry one (a client-side fault). */
  code?: number;
  message: string;
}

/** Reads any thrown value as a PublishFailure (never throws). */
export function publishFailureOf(error: unknown): PublishFailure {
  const parsed = publishErrorSchema.safeParse(error);
  const message = parsed.success && parsed.data.message !== undefined ? parsed.data.message : String(error);
  return parsed.success && parsed.data.code !== undefined ? { code: parsed.data.code, message } : { message };
}

/** "7 PERMISSION_DENIED" for a code, "no gRPC status" without one. */
export function grpcLabel(code: number | undefined): string {
  return code === undefined ? 'no gRPC status' : `${code} ${grpcName(code)}`;
}

/**
 * One publish's outcome as an attempt:
 * - the message id: `published` (a success);
 * - 7 PERMISSION_DENIED, 5 NOT_FOUND: `topic` refusals (under `suspendOnTopicRefusal` they
 *   suspend the destination; elsewhere they are retried where network errors are);
 * - 4 DEADLINE_EXCEEDED, 8 RESOURCE_EXHAUSTED, 14 UNAVAILABLE: Pub/Sub could not take the
 *   call now — overload of the service Herald publishes through, not the destination's
 *   failure: `herald-overload` (no attempt counted; Herald backs off and tries again);
 * - no answer within the attempt timeout: `timeout`;
 * - anything else (INTERNAL, UNAUTHENTICATED, …): `network`.
 */
export function topicAttemptResult(
  outcome: { messageId: string } | { failure: PublishFailure } | { timedOut: true },
  durationMs: number,
  timeoutMs: number,
): AttemptResult | HeraldOverload {
  if ('messageId' in outcome) return { kind: 'published', durationMs, messageId: outcome.messageId };
  if ('timedOut' in outcome) return { kind: 'timeout', durationMs, timeoutMs };
  const { code, message } = outcome.failure;
  const error = `${grpcLabel(code)}: ${excerpt(message)}`;
  if (code === GRPC.PERMISSION_DENIED) return { kind: 'topic', durationMs, problem: 'permission-denied', error };
  if (code === GRPC.NOT_FOUND) return { kind: 'topic', durationMs, problem: 'not-found', error };
  if (code !== undefined && OVERLOAD_GRPC_CODES.includes(code)) return { kind: 'herald-overload', durationMs, error: `Pub/Sub could not take the publish: ${error}` };
  return { kind: 'network', durationMs, error: `Pub/Sub publish failed: ${error}` };
}

/** Error texts go to records and logs: one line, bounded. */
function excerpt(message: string): string {
  // gRPC errors start with their own "5 NOT_FOUND: ", which the label already says.
  const line = message.replace(/\s+/g, ' ').trim().replace(/^\d+ [A-Z_]+: /, '');
  return line.length > 300 ? `${line.slice(0, 299)}…` : line;
}
