import { HeraldEvent } from '../domain/event';
import { Destination } from '../domain/destination';
import { LaneMessage, purposeOf, toLaneMessage } from '../domain/lane-message';
import { LaneProvisioner, MessageBus, TopicNotFoundError } from '../ports';
import { laneTopicOf, TopologyNames } from '../topology';

/**
 * Every publish onto a lane goes through here (the messages themselves: domain/lane-message.ts):
 * ingest and `route` fan first attempts out, the retry pump sends claimed retries, `deliver`
 * hands a slow destination's first attempt over to the retry lanes.
 */

export interface LaneDeps {
  bus: MessageBus;
  lanes: LaneProvisioner;
  names: TopologyNames;
}

/**
 * Publishes `message` onto its destination's lane for its kind. A dedicated lane that is missing
 * (created outside the admin API, or removed by hand) is provisioned and the publish made again;
 * a missing shared lane means the topology was not applied, which only a deploy mends.
 * Returns the topic it went to.
 */
export async function publishToLane(deps: LaneDeps, destination: Pick<Destination, 'id' | 'lane' | 'batch'>, message: LaneMessage): Promise<string> {
  const published = toLaneMessage(message);
  const topic = laneTopicOf(destination, purposeOf(message), deps.names);
  try {
    await deps.bus.publish(topic, published);
  } catch (e) {
    if (!(e instanceof TopicNotFoundError)) throw e;
    if (destination.lane !== 'dedicated') {
      throw new Error(`shared lane ${topic} does not exist: apply the topology (pulumi up; local mode creates it at start) with the same HERALD_LANE_SHARDS / HERALD_RETRY_SHARDS as the functions`);
    }
    await deps.lanes.ensureLane(destination.id);
    await deps.bus.publish(topic, published);
  }
  return topic;
}

/** What a first-attempt lane message carries besides the event. */
export interface FirstAttemptAttributes {
  /** When Herald accepted the event (max-age limits count from it). */
  publishedAt: Date;
  /** The intake batch the event was journaled in (ingest), for the reconciler. */
  intake?: string;
}

/**
 * One event onto the first-attempt lane of each destination it goes to (ingest for events it
 * accepts, route for events published straight to the events topic). Rejects when any publish
 * fails: the caller does not count the event accepted, and a resend finds the lanes already
 * published recorded as duplicates by `deliver`.
 */
export async function fanOut(deps: LaneDeps, event: HeraldEvent, targets: readonly Pick<Destination, 'id' | 'lane' | 'batch'>[], carried: FirstAttemptAttributes): Promise<void> {
  const publishedAt = carried.publishedAt.toISOString();
  const intake = carried.intake !== undefined ? { intake: carried.intake } : {};
  await Promise.all(targets.map((d) => publishToLane(deps, d, { kind: 'first', destinationId: d.id, event, publishedAt, ...intake })));
}
