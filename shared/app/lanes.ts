import { PubSubMessage } from '../domain/cloudevents-pubsub';
import { Destination } from '../domain/destination';
import { LaneProvisioner, MessageBus, TopicNotFoundError } from '../ports';
import { LanePurpose, laneTopology, sharedLaneFor, TopologyNames } from '../topology';

export interface LaneDeps {
  bus: MessageBus;
  lanes: LaneProvisioner;
  names: TopologyNames;
}

/** The topic a destination's message for `purpose` goes on: its own lane, or its shard of the shared lanes. */
export function laneTopicOf(destination: Pick<Destination, 'id' | 'lane'>, purpose: LanePurpose, names: TopologyNames): string {
  return destination.lane === 'dedicated' ? laneTopology(destination.id, names).topic.name : sharedLaneFor(destination.id, purpose, names);
}

/**
 * Publishes onto a destination's lane. A dedicated lane that is missing (created outside
 * the admin API, or removed by hand) is provisioned and the publish made again; a missing
 * shared lane means the topology was not applied, which only a deploy mends.
 */
export async function publishToLane(deps: LaneDeps, destination: Pick<Destination, 'id' | 'lane'>, purpose: LanePurpose, message: PubSubMessage): Promise<void> {
  const topic = laneTopicOf(destination, purpose, deps.names);
  try {
    await deps.bus.publish(topic, message);
  } catch (e) {
    if (!(e instanceof TopicNotFoundError)) throw e;
    if (destination.lane !== 'dedicated') {
      throw new Error(`shared lane ${topic} does not exist: apply the topology (pulumi up; local mode creates it at start) with the same HERALD_LANE_SHARDS / HERALD_RETRY_SHARDS as the functions`);
    }
    await deps.lanes.ensureLane(destination.id);
    await deps.bus.publish(topic, message);
  }
}
