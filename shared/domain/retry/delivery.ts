import type { AddressClass } from '../access/address-policy';
import type { DeliveryStatus } from '../delivery-statuses';
import type { BatchPlace } from '../modes/batching';
import type { OrderPlace } from '../modes/ordering';
import { HeraldEvent } from '../events/event';

export { DELIVERY_STATUSES, type DeliveryStatus } from '../delivery-statuses';

/** What one attempt came to; the only input the delivery rules take from the wire. */
export type AttemptResult =
  /** `headers`: the response's, as kept for the attempt's detail (attempt-detail.ts keptResponseHeaders). */
  | { kind: 'response'; status: number; durationMs: number; bodyExcerpt: string; retryAfter?: string; location?: string; headers?: Record<string, string> }
  | { kind: 'timeout'; durationMs: number; timeoutMs: number }
  | { kind: 'network'; durationMs: number; error: string }
  /** A Pub/Sub destination took the message (its other publish errors are `network`, a deadline `timeout`). */
  | { kind: 'published'; durationMs: number; messageId: string }
  /**
   * A Pub/Sub destination's publish refused for good: Pub/Sub does not let Herald publish to the
   * topic, or it does not exist; or Herald refused it itself, unsent, because the topic is not
   * (or no longer) on its account's allowedTopics, or is named like Herald's own (`not-allowed`).
   */
  | { kind: 'topic'; durationMs: number; problem: 'permission-denied' | 'not-found' | 'not-allowed'; error: string }
  /** The SSRF guard refused the webhook's address (at connect, after DNS): nothing was sent. */
  | { kind: 'blocked'; durationMs: number; address: string; addressClass: AddressClass; error: string };

/**
 * Herald's own service could not take the attempt (a topic destination's publish met Pub/Sub's
 * UNAVAILABLE, RESOURCE_EXHAUSTED or DEADLINE_EXCEEDED): overload of Herald, not a failure of
 * the destination, so it is not an AttemptResult: it counts as no attempt (domain/retry/herald-overload.ts).
 */
export interface HeraldOverload {
  kind: 'herald-overload';
  durationMs: number;
  error: string;
}

export function isSuccess(result: AttemptResult): boolean {
  return result.kind === 'published' || (result.kind === 'response' && result.status >= 200 && result.status < 300);
}

export interface LastError {
  at: string;
  status?: number;
  error: string;
  bodyExcerpt?: string;
}

export function describeFailure(result: AttemptResult, at: Date): LastError {
  switch (result.kind) {
    case 'response': {
      const error = result.status >= 300 && result.status < 400
        ? `HTTP ${result.status} redirect${result.location ? ` to ${result.location}` : ''} (redirects are not followed)`
        : `HTTP ${result.status}`;
      return { at: at.toISOString(), status: result.status, error, bodyExcerpt: result.bodyExcerpt };
    }
    case 'timeout':
      return { at: at.toISOString(), error: `timed out after ${result.timeoutMs} ms` };
    case 'network':
      return { at: at.toISOString(), error: `network error: ${result.error}` };
    case 'published':
      return { at: at.toISOString(), error: 'published (not a failure)' };
    case 'topic':
      if (result.problem === 'not-allowed') return { at: at.toISOString(), error: `not published, refused by Herald: ${result.error}` };
      return { at: at.toISOString(), error: `Pub/Sub publish refused (${result.problem}): ${result.error}` };
    case 'blocked':
      return { at: at.toISOString(), error: `refused by the SSRF guard: ${result.error}` };
  }
}

/**
 * What an operator sees of one attempt (the console's delivery log, GET …/deliveries/{id}):
 * the request as sent, with its secrets masked, what came back, how long it took and what
 * Herald decided. Kept on the delivery record itself — the write that records the attempt
 * carries it, so it costs bytes, never an operation.
 */
export interface AttemptDetail {
  at: string;
  durationMs: number;
  /** The webhook's URL, or the topic's resource name. */
  target: string;
  request: {
    /** Lower-case names; signatures and credentials masked (maskHeaders). For a topic: the message's attributes. */
    headers: Record<string, string>;
    bodyBytes: number;
    /** The body's first bytes: text when they are UTF-8, else base64. Only on the newest attempt (every attempt sends the same body). */
    body?: { encoding: 'utf8' | 'base64'; excerpt: string; truncated: boolean };
  };
  /** A webhook that answered. */
  response?: { status: number; headers: Record<string, string>; bodyExcerpt: string };
  /** A topic that took the message. */
  messageId?: string;
  /** Why the attempt failed, when it did, in the words of LastError. */
  error?: string;
  /** The event's trace (its traceparent's trace id): where this attempt's spans are, or its failure when the trace was not sampled (docs/observability.md#traces). */
  traceId?: string;
  /** What Herald decided after it (retry-decision.ts Decision's kinds); `at`: when a retry is due. */
  decision: { kind: 'delivered' | 'retry' | 'throttle' | 'dead' | 'suspend' | 'queue'; at?: string; reason?: string };
  /** A webhook's: the receiver auth used (never its credential) and the signature profiles sent. */
  receiver?: {
    auth?: 'apiKey' | 'basic' | 'oauth2ClientCredentials' | 'mtls';
    signature: ('standard-webhooks' | 'github')[];
    /** Sent again with these replaced credentials, the receiver having refused the new ones within a rotation's grace period. */
    replaced?: ('auth' | 'headers' | 'tls')[];
  };
}

export interface DeliveryRecord {
  /** `${destinationId}.${eventKey}`: one record per (event, destination). */
  id: string;
  destinationId: string;
  eventId: string;
  eventSource: string;
  eventType: string;
  status: DeliveryStatus;
  /** Attempts made, throttled ones included. */
  attempts: number;
  /** Of those, 429s throttled without consuming a retry (event-platform). */
  throttled?: number;
  /** Why the delivery ended DEAD or QUEUED. */
  reason?: string;
  /** When the event was first published to Herald: max-age limits count from it. */
  publishedAt?: string;
  lastError?: LastError;
  /** The newest attempts, newest first (attempt-detail.ts ATTEMPTS_KEPT): what was sent and what came back. */
  attemptLog?: AttemptDetail[];
  availableAt?: string;
  /**
   * PENDING for a turn of the destination's rate, not for a retry's time: its availableAt is
   * its place in the destination's queue, and rate control may bring it forward when turns
   * go unused (the rate rose since it was deferred). Kept while it is claimed (IN_FLIGHT)
   * until it is attempted: deferred again then, it is put back near its turn, not behind the
   * destination's other deferrals. Absent on every other record.
   */
  rateDeferred?: true;
  claimedAt?: string;
  firstAttemptAt?: string;
  lastAttemptAt?: string;
  deliveredAt?: string;
  /**
   * The earlier runs of this delivery that ended DEAD and were replayed, oldest first: the
   * redeliver transition starts the attempts over, so replay keeps here what it clears.
   */
  replays?: DeliveryReplay[];
  /** Kept only while the delivery may still need it (not once DELIVERED), to send it again. */
  event?: HeraldEvent;
  /** The intake batch (domain/intake/intake.ts) the event was accepted in, when ingest accepted it. */
  intake?: string;
  /**
   * Set when the delivery became DEAD, until its dead letter is on the dead-letter topic: the
   * record is written first and the letter published after, so a process that dies between
   * the two leaves this mark and the reconciler publishes the letter.
   */
  deadLetterDueAt?: string;
  /** When the reconciler created this record for an accepted event that never reached `deliver`. */
  recoveredAt?: string;
  /**
   * Sends of a lane message Pub/Sub brought again after this delivery was DELIVERED (a lost ack):
   * the destination got the event again, counted here, never as an attempt (domain/delivery/redelivered-push.ts).
   */
  duplicates?: { count: number; lastAt: string };
  /** The batch that carries it, for a batched destination (domain/modes/batching.ts): its id, this event's place, its size. */
  batch?: BatchPlace;
  /** Its place in its key's sequence, for a destination with `ordering` and an event with a partitionkey (domain/modes/ordering.ts). */
  order?: OrderPlace;
}

/** One DEAD run of a delivery, as it stood when a replay sent it again. */
export interface DeliveryReplay {
  replayId: string;
  /** When the replay made it PENDING again. */
  at: string;
  attempts: number;
  firstAttemptAt?: string;
  lastAttemptAt?: string;
  reason?: string;
  lastError?: LastError;
}

// A delivery's id, with the other ids (shared/domain/ids.ts).
export { deliveryId, isDeliveryId } from '../ids';
