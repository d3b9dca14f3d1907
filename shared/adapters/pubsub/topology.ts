import { CreateSubscriptionOptions, PubSub } from '@google-cloud/pubsub';
import { FunctionName, laneTopology, SubscriptionSpec, TopicSpec, Topology, TopologyNames } from '../../topology';
import { GRPC, grpcCode } from '../../domain/retry/grpc-status';
import { LaneProvisioner } from '../../ports/messaging';

export interface PushTarget {
  /** The URL Pub/Sub pushes to for a function. */
  endpointFor(fn: FunctionName): string;
  /** On GCP: the service account whose OIDC token authenticates the push. */
  serviceAccountEmail?: string;
  /**
   * The Pub/Sub emulator: push subscriptions get no retry policy there. The emulator's retry
   * queue breaks on it — two messages that fail twice in the same second make its redelivery
   * task throw (a NullPointerException in MessageBacklog.nackMessage) and stop for good, so
   * every message of that subscription that fails twice is never pushed again (measured,
   * emulator 0.8.20: 88-102 of 300 messages stranded across two outages, with any backoff;
   * none without a policy). Without one the emulator retries about every second, forever.
   */
  emulator?: boolean;
}

export function subscriptionMetadata(spec: SubscriptionSpec, projectId: string, target: PushTarget): CreateSubscriptionOptions {
  const metadata: CreateSubscriptionOptions = {
    ackDeadlineSeconds: spec.ackDeadlineSeconds,
    messageRetentionDuration: { seconds: spec.messageRetentionSeconds },
    // Herald's subscriptions never expire from inactivity: a quiet destination keeps its lane.
    expirationPolicy: {},
  };
  if (spec.pushTo) {
    const pushEndpoint = target.endpointFor(spec.pushTo);
    // The token's audience is the function's URL, without the query (what `deliver` checks, as the Pulumi program sets it).
    const audience = pushEndpoint.split('?')[0];
    metadata.pushConfig = {
      pushEndpoint,
      ...(target.serviceAccountEmail ? { oidcToken: { serviceAccountEmail: target.serviceAccountEmail, audience } } : {}),
    };
  }
  if (spec.retryPolicy && !(target.emulator && spec.pushTo)) {
    metadata.retryPolicy = {
      minimumBackoff: { seconds: spec.retryPolicy.minimumBackoffSeconds },
      maximumBackoff: { seconds: spec.retryPolicy.maximumBackoffSeconds },
    };
  }
  if (spec.deadLetter) {
    metadata.deadLetterPolicy = {
      deadLetterTopic: `projects/${projectId}/topics/${spec.deadLetter.topic}`,
      maxDeliveryAttempts: spec.deadLetter.maxDeliveryAttempts,
    };
  }
  return metadata;
}

async function ensureTopic(pubsub: PubSub, spec: TopicSpec): Promise<void> {
  try {
    await pubsub.createTopic({
      name: spec.name,
      ...(spec.messageRetentionSeconds ? { messageRetentionDuration: { seconds: spec.messageRetentionSeconds } } : {}),
    });
  } catch (e) {
    if (grpcCode(e) !== GRPC.ALREADY_EXISTS) throw e;
  }
}

async function ensureSubscription(pubsub: PubSub, spec: SubscriptionSpec, target: PushTarget): Promise<void> {
  const metadata = subscriptionMetadata(spec, pubsub.projectId, target);
  try {
    await pubsub.topic(spec.topic).createSubscription(spec.name, metadata);
  } catch (e) {
    if (grpcCode(e) !== GRPC.ALREADY_EXISTS) throw e;
    // It exists: make its push endpoint current (local mode may have moved ports).
    if (metadata.pushConfig) await pubsub.subscription(spec.name).modifyPushConfig(metadata.pushConfig);
    // An emulator kept from an older Herald may hold it with a retry policy, which strands
    // messages there (see PushTarget.emulator): take it off.
    if (target.emulator && spec.pushTo && spec.retryPolicy) await pubsub.subscription(spec.name).setMetadata({ retryPolicy: null } as unknown as Parameters<ReturnType<PubSub['subscription']>['setMetadata']>[0]);
  }
}

/** Creates what is missing of the topology; safe to run at every start. */
export async function applyTopology(pubsub: PubSub, topology: Topology, target: PushTarget): Promise<void> {
  await Promise.all([...Object.values(topology.topics), ...topology.laneTopics].map((t) => ensureTopic(pubsub, t)));
  await Promise.all(topology.subscriptions.map((s) => ensureSubscription(pubsub, s, target)));
}

export class PubSubLanes implements LaneProvisioner {
  constructor(
    private readonly pubsub: PubSub,
    private readonly names: TopologyNames,
    private readonly target: PushTarget,
  ) {}

  async ensureLane(destinationId: string): Promise<void> {
    const lane = laneTopology(destinationId, this.names);
    await ensureTopic(this.pubsub, lane.topic);
    await ensureSubscription(this.pubsub, lane.subscription, this.target);
  }

  async existingLanes(): Promise<string[]> {
    // A dedicated lane's subscription is its topic's name, `<prefix>-lane-<id>`, and a suffix.
    const blank = laneTopology('', this.names);
    const [prefix, suffix] = [blank.topic.name, blank.subscription.name.slice(blank.topic.name.length)];
    const [subscriptions] = await this.pubsub.getSubscriptions();
    return subscriptions
      .map((s) => s.name.split('/').pop() ?? '')
      .filter((name) => name.startsWith(prefix) && name.endsWith(suffix))
      .map((name) => name.slice(prefix.length, -suffix.length));
  }

  async removeLane(destinationId: string): Promise<void> {
    const lane = laneTopology(destinationId, this.names);
    for (const remove of [() => this.pubsub.subscription(lane.subscription.name).delete(), () => this.pubsub.topic(lane.topic.name).delete()]) {
      try {
        await remove();
      } catch (e) {
        if (grpcCode(e) !== GRPC.NOT_FOUND) throw e;
      }
    }
  }
}
