import * as gcp from '@pulumi/gcp';
import * as pulumi from '@pulumi/pulumi';
import { childOptions } from './child-options';
import { FunctionName, laneTopology, subscriptionsHeraldPulls, SubscriptionSpec, TopicKey, TOPICS_HERALD_PUBLISHES, Topology, TopologyNames } from '../../shared/topology';

export interface PushTarget {
  /** The URL Pub/Sub pushes to for a function; also the OIDC token's audience. */
  endpointFor(fn: FunctionName): pulumi.Input<string>;
  serviceAccountEmail: pulumi.Input<string>;
}

export interface MessagingArgs {
  project: string;
  topology: Topology;
  names: TopologyNames;
  push: PushTarget;
  /** `serviceAccount:service-NUMBER@gcp-sa-pubsub.iam.gserviceaccount.com`: it moves dead letters. */
  pubsubServiceAgent: pulumi.Input<string>;
  /** Destinations (Herald's ids) whose dedicated lane the program declares (herald:dedicatedLanes): Herald creates none on GCP. */
  dedicatedLanes: readonly string[];
}

/**
 * Herald's topics and subscriptions, declared from the same description local mode applies
 * to the emulator (shared/adapters/pubsub/topology.ts), with the same settings. Push
 * subscriptions call the functions with an OIDC token of the push identity.
 */
export class Messaging extends pulumi.ComponentResource {
  readonly topics: Record<TopicKey, gcp.pubsub.Topic>;
  readonly subscriptions: gcp.pubsub.Subscription[];
  readonly laneTopics: gcp.pubsub.Topic[];
  /** The declared dedicated lanes: each a topic and its push subscription to `deliver`, as Herald would make them. */
  readonly dedicatedLanes: { topic: gcp.pubsub.Topic; subscription: gcp.pubsub.Subscription }[];
  /** Every topic Herald's functions publish to (not `events`, the producers'): the runtime identity's publisher grants. */
  readonly publishedByHerald: gcp.pubsub.Topic[];
  /** The pull subscriptions Herald's functions read: the runtime identity's subscriber grants. */
  readonly pulledByHerald: gcp.pubsub.Subscription[];

  constructor(name: string, args: MessagingArgs, opts?: pulumi.ComponentResourceOptions) {
    super('herald:messaging:Messaging', name, {}, opts);
    const { topology, project } = args;
    const child = childOptions(this, opts);
    const entries = Object.entries(topology.topics) as [TopicKey, Topology['topics'][TopicKey]][];
    this.topics = Object.fromEntries(
      entries.map(([key, spec]) => [
        key,
        new gcp.pubsub.Topic(
          spec.name,
          {
            project,
            name: spec.name,
            ...(spec.messageRetentionSeconds !== undefined ? { messageRetentionDuration: `${spec.messageRetentionSeconds}s` } : {}),
          },
          child,
        ),
      ]),
    ) as Record<TopicKey, gcp.pubsub.Topic>;
    this.laneTopics = topology.laneTopics.map((spec) => new gcp.pubsub.Topic(spec.name, { project, name: spec.name }, child));
    const byName = new Map([...entries.map(([key, spec]) => [spec.name, this.topics[key]] as const), ...this.laneTopics.map((t, i) => [topology.laneTopics[i]!.name, t] as const)]);
    const topicNamed = (topic: string, user: string) => {
      const found = byName.get(topic);
      if (found === undefined) throw new Error(`${user} names topic ${topic}, which the topology does not declare`);
      return found;
    };

    this.subscriptions = topology.subscriptions.map((spec) => {
      const deadLetter = spec.deadLetter === undefined ? [] : [topicNamed(spec.deadLetter.topic, `subscription ${spec.name}`)];
      return new gcp.pubsub.Subscription(spec.name, subscriptionArgs(spec, project, topicNamed(spec.topic, `subscription ${spec.name}`), args.push), childOptions(this, opts, deadLetter));
    });

    // Pub/Sub's own agent forwards dead letters: it publishes to the dead-letter topics and
    // acks the forwarded message on the subscription it came from.
    const lane = laneTopology('lane', args.names).subscription;
    const deadLetterTopics = new Set([...topology.subscriptions, lane].flatMap((s) => (s.deadLetter ? [s.deadLetter.topic] : [])));
    for (const topic of deadLetterTopics) {
      new gcp.pubsub.TopicIAMMember(`${topic}-dead-letter-publisher`, { project, topic: topicNamed(topic, 'a dead-letter policy').name, role: 'roles/pubsub.publisher', member: args.pubsubServiceAgent }, child);
    }
    topology.subscriptions.forEach((spec, i) => {
      if (spec.deadLetter === undefined) return;
      new gcp.pubsub.SubscriptionIAMMember(`${spec.name}-dead-letter-subscriber`, { project, subscription: this.subscriptions[i]!.name, role: 'roles/pubsub.subscriber', member: args.pubsubServiceAgent }, child);
    });
    this.dedicatedLanes = args.dedicatedLanes.map((id) => {
      const spec = laneTopology(id, args.names);
      const topic = new gcp.pubsub.Topic(spec.topic.name, { project, name: spec.topic.name }, child);
      const deadLetter = spec.subscription.deadLetter === undefined ? [] : [topicNamed(spec.subscription.deadLetter.topic, `lane ${spec.subscription.name}`)];
      const subscription = new gcp.pubsub.Subscription(spec.subscription.name, subscriptionArgs(spec.subscription, project, topic, args.push), childOptions(this, opts, deadLetter));
      new gcp.pubsub.SubscriptionIAMMember(`${spec.subscription.name}-dead-letter-subscriber`, { project, subscription: subscription.name, role: 'roles/pubsub.subscriber', member: args.pubsubServiceAgent }, child);
      return { topic, subscription };
    });
    if (lane.deadLetter !== undefined) {
      // Lanes an older Herald created at runtime (dedicated ones, and those from before lanes
      // were shared) still dead-letter, and no grant here can name them. This grant goes to
      // Google's own agent, which Pub/Sub only acts as to forward dead letters.
      new gcp.projects.IAMMember(`${name}-lane-dead-letter-subscriber`, { project, role: 'roles/pubsub.subscriber', member: args.pubsubServiceAgent }, child);
    }
    this.publishedByHerald = [...TOPICS_HERALD_PUBLISHES.map((key) => this.topics[key]), ...this.laneTopics, ...this.dedicatedLanes.map((l) => l.topic)];
    const pulled = subscriptionsHeraldPulls(args.names);
    this.pulledByHerald = pulled.map((sub) => {
      const i = topology.subscriptions.findIndex((s) => s.name === sub);
      if (i < 0) throw new Error(`Herald pulls ${sub}, which the topology does not declare`);
      return this.subscriptions[i]!;
    });
    this.registerOutputs({ topics: Object.fromEntries(entries.map(([key, t]) => [key, t.name])) });
  }
}

/** The same settings shared/adapters/pubsub/topology.ts gives a subscription it creates. */
export function subscriptionArgs(spec: SubscriptionSpec, project: string, topic: gcp.pubsub.Topic, push: PushTarget): gcp.pubsub.SubscriptionArgs {
  const endpoint = spec.pushTo === undefined ? undefined : push.endpointFor(spec.pushTo);
  return {
    project,
    name: spec.name,
    topic: topic.name,
    ackDeadlineSeconds: spec.ackDeadlineSeconds,
    messageRetentionDuration: `${spec.messageRetentionSeconds}s`,
    // Never expire from inactivity: a quiet destination keeps its lane, dead letters may wait weeks.
    expirationPolicy: { ttl: '' },
    ...(endpoint !== undefined ? { pushConfig: { pushEndpoint: endpoint, oidcToken: { serviceAccountEmail: push.serviceAccountEmail, audience: endpoint } } } : {}),
    ...(spec.retryPolicy
      ? { retryPolicy: { minimumBackoff: `${spec.retryPolicy.minimumBackoffSeconds}s`, maximumBackoff: `${spec.retryPolicy.maximumBackoffSeconds}s` } }
      : {}),
    ...(spec.deadLetter
      ? { deadLetterPolicy: { deadLetterTopic: `projects/${project}/topics/${spec.deadLetter.topic}`, maxDeliveryAttempts: spec.deadLetter.maxDeliveryAttempts } }
      : {}),
  };
}
