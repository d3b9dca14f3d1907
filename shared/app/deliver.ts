import { binaryHeaders } from '../domain/cloudevents-http';
import { fromPubSubMessage, heraldAttribute, PushDelivery } from '../domain/cloudevents-pubsub';
import { DeliveryRecord, deliveryId, describeFailure, isSuccess } from '../domain/delivery';
import { DESTINATION_ID } from '../domain/destination';
import { eventKey, HeraldEvent, matchesType } from '../domain/event';
import { signatureHeaders, webhookIdFor } from '../domain/signing';
import { Clock, DeliveryStore, HttpSender, Logger, LogFields, MessageBus } from '../ports';
import { rejectToDeadLetter, RejectReason } from './dead-letter';
import { DestinationDirectory } from './destination-directory';

export interface DeliverDeps {
  bus: MessageBus;
  deadLetterTopic: string;
  directory: DestinationDirectory;
  deliveries: DeliveryStore;
  http: HttpSender;
  clock: Clock;
  log: Logger;
  timeoutMs: number;
}

export type DeliverOutcome =
  | { kind: 'delivered'; deliveryId: string; status: number }
  | { kind: 'failed'; deliveryId: string; error: string }
  | { kind: 'duplicate'; deliveryId: string }
  | { kind: 'rejected'; reason: RejectReason };

/**
 * One attempt of one event to one destination, from its lane. The outcome is recorded
 * before the push is acked; a Herald fault (the store unavailable) throws so Pub/Sub
 * redelivers, which may duplicate a delivery but never loses one.
 */
export async function deliverFromLane(deps: DeliverDeps, push: PushDelivery): Promise<DeliverOutcome> {
  const destinationId = heraldAttribute(push.message, 'destination');
  const reject = async (reason: RejectReason, message: string, fields: LogFields): Promise<DeliverOutcome> => {
    await rejectToDeadLetter(deps.bus, deps.deadLetterTopic, push, reason, message);
    deps.log.warn(`${message}: sent to the dead-letter topic`, { ...fields, messageId: push.messageId, reason });
    return { kind: 'rejected', reason };
  };
  const parsed = fromPubSubMessage(push.message, push.publishTime);
  if (!destinationId || !DESTINATION_ID.test(destinationId) || !parsed.ok) {
    // Only `route` publishes to lanes, after validating: this is a foreign message.
    return reject('invalid-lane-message', 'lane message without a valid herald-destination attribute or event', {
      subscription: push.subscription,
      issues: parsed.ok ? [] : parsed.issues,
    });
  }
  const event = parsed.value;
  const key = eventKey(event.attributes);
  const id = deliveryId(destinationId, key);
  const ids = { eventId: event.attributes.id, eventSource: event.attributes.source, destinationId, deliveryId: id };

  const destination = await deps.directory.get(destinationId);
  if (!destination) return reject('destination-deleted', `destination ${destinationId} no longer exists`, ids);
  if (!matchesType(destination.eventTypes, event.attributes.type)) {
    return reject('type-unsubscribed', `destination ${destinationId} no longer subscribes to ${event.attributes.type}`, ids);
  }
  if (!destination.url) return reject('unsupported-destination', `destination ${destinationId} has no url`, ids);
  const previous = await deps.deliveries.get(id);
  if (previous?.status === 'DELIVERED') {
    deps.log.info('already delivered: duplicate skipped', ids);
    return { kind: 'duplicate', deliveryId: id };
  }

  const at = deps.clock.now();
  const result = await deps.http.send({
    url: destination.url,
    headers: { ...binaryHeaders(event), ...signatureHeaders([destination.secret], webhookIdFor(key), at, event.data) },
    body: event.data,
    timeoutMs: deps.timeoutMs,
  });
  const done = deps.clock.now();
  const record: DeliveryRecord = {
    id,
    destinationId,
    eventId: event.attributes.id,
    eventSource: event.attributes.source,
    eventType: event.attributes.type,
    status: 'DELIVERED',
    attempts: (previous?.attempts ?? 0) + 1,
    firstAttemptAt: previous?.firstAttemptAt ?? at.toISOString(),
    lastAttemptAt: at.toISOString(),
  };
  if (isSuccess(result)) {
    await deps.deliveries.put({ ...record, deliveredAt: done.toISOString() });
    const status = result.kind === 'response' ? result.status : 0;
    deps.log.info('delivered', { ...ids, status, durationMs: result.durationMs, attempts: record.attempts });
    return { kind: 'delivered', deliveryId: id, status };
  }
  const lastError = describeFailure(result, done);
  // Kept PENDING with the event so the retry engine can attempt it again.
  await deps.deliveries.put({ ...record, status: 'PENDING', lastError, event: storable(event) });
  deps.log.warn('delivery attempt failed', { ...ids, error: lastError.error, status: lastError.status, durationMs: result.durationMs, attempts: record.attempts });
  return { kind: 'failed', deliveryId: id, error: lastError.error };
}

function storable(event: HeraldEvent): HeraldEvent {
  return { attributes: { ...event.attributes }, data: event.data };
}
