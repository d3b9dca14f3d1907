import { PubSubMessage, toPubSubMessage } from '../domain/cloudevents-pubsub';
import { HeraldEvent } from '../domain/event';
import { Destination } from '../domain/destination';
import { LaneProvisioner, MessageBus, TopicNotFoundError } from '../ports';
import { LanePurpose, laneTopology, sharedLaneFor, TopologyNames } from '../topology';

/** Lane message attributes (with the `herald-` prefix) that ingest, `route`, `deliver` and the retry pump set. */
export const LANE_ATTRIBUTES = {
  destination: 'destination',
  /** When the event was first published to Herald (max-age limits count from it). */
  publishedAt: 'published-at',
  /** Set by the retry pump: the claim this message carries (the record's claimedAt). */
  claim: 'claim',
  /** Set by ingest: the intake batch the event was accepted in (domain/intake.ts); route passes it on. */
  intake: 'intake',
  /** Set by deliver on a slow destination's first attempt it moved to the retry lanes: it is attempted there, never moved again. */
  handedOver: 'handed-over',
} as const;

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

/** What a first-attempt lane message carries besides the event (attribute names: LANE_ATTRIBUTES in deliver.ts). */
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
export async function fanOut(deps: LaneDeps, event: HeraldEvent, targets: readonly Pick<Destination, 'id' | 'lane'>[], carried: FirstAttemptAttributes): Promise<void> {
  const shared: Record<string, string> = { [LANE_ATTRIBUTES.publishedAt]: carried.publishedAt.toISOString() };
  if (carried.intake !== undefined) shared[LANE_ATTRIBUTES.intake] = carried.intake;
  await Promise.all(targets.map((d) => publishToLane(deps, d, 'first', toPubSubMessage(event, { [LANE_ATTRIBUTES.destination]: d.id, ...shared }))));
}
