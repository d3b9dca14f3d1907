import { fromPubSubMessage, PushDelivery, toPubSubMessage } from '../domain/cloudevents-pubsub';
import { matchesType } from '../domain/event';
import { laneTopology, TopologyNames } from '../topology';
import { LaneProvisioner, Logger, MessageBus, TopicNotFoundError } from '../ports';
import { DestinationDirectory } from './destination-directory';
import { rejectToDeadLetter } from './dead-letter';

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
  const targets = (await deps.directory.list()).filter((d) => matchesType(d.eventTypes, event.attributes.type));
  const ids = { eventId: event.attributes.id, eventSource: event.attributes.source, eventType: event.attributes.type };
  if (targets.length === 0) {
    deps.log.info('no destination subscribes to this event type', ids);
    return { kind: 'unmatched' };
  }
  await Promise.all(
    targets.map(async (d) => {
      const topic = laneTopology(d.id, deps.names).topic.name;
      const message = toPubSubMessage(event, { destination: d.id });
      try {
        await deps.bus.publish(topic, message);
      } catch (e) {
        if (!(e instanceof TopicNotFoundError)) throw e;
        // A destination whose lane is missing (created outside the admin API, or removed by
        // hand): provision it and publish again.
        await deps.lanes.ensureLane(d.id);
        await deps.bus.publish(topic, message);
      }
    }),
  );
  deps.log.debug('event routed', { ...ids, destinations: targets.map((d) => d.id) });
  return { kind: 'routed', destinations: targets.map((d) => d.id) };
}
