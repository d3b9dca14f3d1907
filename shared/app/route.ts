import { fromPubSubMessage, heraldAttribute, PushDelivery, toPubSubMessage } from '../domain/cloudevents-pubsub';
import { TopologyNames } from '../topology';
import { LaneProvisioner, Logger, MessageBus } from '../ports';
import { publishToLane } from './lanes';
import { DestinationDirectory } from './destination-directory';
import { rejectToDeadLetter } from './dead-letter';
import { LANE_ATTRIBUTES } from './deliver';

export interface RouteDeps {
  bus: MessageBus;
  lanes: LaneProvisioner;
  directory: DestinationDirectory;
  log: Logger;
  names: TopologyNames;
  deadLetterTopic: string;
}

export type RouteOutcome =
  | { kind: 'routed'; destinations: string[] }
  | { kind: 'unmatched' }
  | { kind: 'invalid'; issues: { path: string; message: string }[] };

/**
 * Fans one event out: a copy onto the lane of every destination whose event types match.
 * Throws when a publish fails, so the push is not acked and Pub/Sub brings the event again
 * (lanes already published then see a duplicate, which `deliver` recognises).
 */
export async function routeEvent(deps: RouteDeps, push: PushDelivery): Promise<RouteOutcome> {
  const parsed = fromPubSubMessage(push.message, push.publishTime);
  if (!parsed.ok) {
    await rejectToDeadLetter(deps.bus, deps.deadLetterTopic, push, 'invalid-event', JSON.stringify(parsed.issues));
    deps.log.warn('invalid event on the events topic: sent to the dead-letter topic', { messageId: push.messageId, issues: parsed.issues });
    return { kind: 'invalid', issues: parsed.issues };
  }
  const event = parsed.value;
  const targets = await deps.directory.matching(event.attributes.type);
  const ids = { eventId: event.attributes.id, eventSource: event.attributes.source, eventType: event.attributes.type };
  if (targets.length === 0) {
    deps.log.info('no destination subscribes to this event type', ids);
    return { kind: 'unmatched' };
  }
  const intake = heraldAttribute(push.message, LANE_ATTRIBUTES.intake);
  const carried: Record<string, string> = intake !== undefined ? { [LANE_ATTRIBUTES.intake]: intake } : {};
  await Promise.all(
    targets.map((d) =>
      publishToLane(deps, d, 'first', toPubSubMessage(event, { [LANE_ATTRIBUTES.destination]: d.id, [LANE_ATTRIBUTES.publishedAt]: push.publishTime.toISOString(), ...carried })),
    ),
  );
  deps.log.debug('event routed', { ...ids, destinations: targets.map((d) => d.id) });
  return { kind: 'routed', destinations: targets.map((d) => d.id) };
}
