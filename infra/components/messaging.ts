import * as gcp from '@pulumi/gcp';
import * as pulumi from '@pulumi/pulumi';
import { SubscriptionSpec, TopicKey, Topology } from '../../shared/topology';

export interface MessagingArgs {
  topology: Topology;
}

/**
 * Herald's topics and its pull subscriptions, declared from the same description local mode
 * applies to the emulator. Push subscriptions need the functions' URLs and an OIDC identity,
 * so they are declared with the functions.
 */
export class Messaging extends pulumi.ComponentResource {
  readonly topics: Record<TopicKey, gcp.pubsub.Topic>;
  readonly pullSubscriptions: gcp.pubsub.Subscription[];

  constructor(name: string, args: MessagingArgs, opts?: pulumi.ComponentResourceOptions) {
    super('herald:messaging:Messaging', name, {}, opts);
    const { topology } = args;
    const entries = Object.entries(topology.topics) as [TopicKey, Topology['topics'][TopicKey]][];
    this.topics = Object.fromEntries(
      entries.map(([key, spec]) => [
        key,
        new gcp.pubsub.Topic(
          spec.name,
          {
            name: spec.name,
            ...(spec.messageRetentionSeconds !== undefined ? { messageRetentionDuration: `${spec.messageRetentionSeconds}s` } : {}),
          },
          { parent: this },
        ),
      ]),
    ) as Record<TopicKey, gcp.pubsub.Topic>;
    const byName = new Map(entries.map(([key, spec]) => [spec.name, this.topics[key]]));
    this.pullSubscriptions = topology.subscriptions
      .filter((s) => s.pushTo === undefined)
      .map((s) => new gcp.pubsub.Subscription(s.name, pullSubscriptionArgs(s, byName), { parent: this }));
    this.registerOutputs({ topics: Object.fromEntries(entries.map(([key, t]) => [key, t.name])) });
  }
}

function pullSubscriptionArgs(spec: SubscriptionSpec, topics: Map<string, gcp.pubsub.Topic>): gcp.pubsub.SubscriptionArgs {
  const topic = topics.get(spec.topic);
  if (topic === undefined) throw new Error(`subscription ${spec.name} names topic ${spec.topic}, which the topology does not declare`);
  return {
    name: spec.name,
    topic: topic.name,
    ackDeadlineSeconds: spec.ackDeadlineSeconds,
    messageRetentionDuration: `${spec.messageRetentionSeconds}s`,
    // Never expire: dead letters may wait weeks for an operator.
    expirationPolicy: { ttl: '' },
  };
}
