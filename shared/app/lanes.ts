import { PubSubMessage } from '../domain/cloudevents-pubsub';
import { LaneProvisioner, MessageBus, TopicNotFoundError } from '../ports';
import { laneTopology, TopologyNames } from '../topology';

export interface LaneDeps {
  bus: MessageBus;
  lanes: LaneProvisioner;
  names: TopologyNames;
}

/** Publishes onto a destination's lane, provisioning the lane first if it is missing. */
export async function publishToLane(deps: LaneDeps, destinationId: string, message: PubSubMessage): Promise<void> {
  const topic = laneTopology(destinationId, deps.names).topic.name;
  try {
    await deps.bus.publish(topic, message);
  } catch (e) {
    if (!(e instanceof TopicNotFoundError)) throw e;
    // A destination whose lane is missing (created outside the admin API, or removed by
    // hand): provision it and publish again.
    await deps.lanes.ensureLane(destinationId);
    await deps.bus.publish(topic, message);
  }
}
