import * as gcp from '@pulumi/gcp';
import * as pulumi from '@pulumi/pulumi';
import { childOptions } from './child-options';

export interface PubSubAccessArgs {
  /** The runtime identity's member (`serviceAccount:…`). */
  member: pulumi.Input<string>;
  /** Herald's topics its functions publish to (lanes, dead letters, replays, notifications, batches). */
  publishes: gcp.pubsub.Topic[];
  /** The pull subscriptions its functions read. */
  pulls: gcp.pubsub.Subscription[];
  /** herald:destinationTopics: topics its destinations publish to, `projects/P/topics/T`, in any project. */
  destinationTopics: readonly string[];
}

/**
 * What Herald's runtime identity may do in Pub/Sub, resource by resource and nothing
 * project-wide: publish to Herald's own topics (never `events`), pull the subscriptions it
 * reads, and publish to the destination topics the stack names. Pub/Sub's IAM has no
 * conditions on resource names, so a project-wide role would reach every topic of the project
 * (another account's among them); and Herald creates no topic or subscription on GCP (the
 * program declares its dedicated lanes), so it needs no role to make one.
 */
export class PubSubAccess extends pulumi.ComponentResource {
  constructor(name: string, args: PubSubAccessArgs, opts?: pulumi.ComponentResourceOptions) {
    super('herald:iam:PubSubAccess', name, {}, opts);
    const child = childOptions(this, opts);
    args.publishes.forEach((topic, i) => {
      new gcp.pubsub.TopicIAMMember(`${name}-publishes-${i}`, { project: topic.project, topic: topic.name, role: 'roles/pubsub.publisher', member: args.member }, child);
    });
    args.pulls.forEach((subscription, i) => {
      new gcp.pubsub.SubscriptionIAMMember(`${name}-pulls-${i}`, { project: subscription.project, subscription: subscription.name, role: 'roles/pubsub.subscriber', member: args.member }, child);
    });
    for (const topic of args.destinationTopics) {
      const [, project, , id] = topic.split('/');
      new gcp.pubsub.TopicIAMMember(`${name}-destination-${project}-${id}`, { project: project!, topic: id!, role: 'roles/pubsub.publisher', member: args.member }, child);
    }
    this.registerOutputs({});
  }
}
