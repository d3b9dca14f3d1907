import { PubSub } from '@google-cloud/pubsub';
import { PubSubLanes } from '../../shared/adapters/pubsub/topology';
import { laneTopology } from '../../shared/topology';

/**
 * A lane created with a retry policy by an older Herald on an emulator that outlived it: the
 * emulator strands messages of such a subscription, so local mode takes the policy off.
 */
const pubsub = new PubSub({ projectId: 'retry-policy-test' });
afterAll(async () => {
  const [subscriptions] = await pubsub.getSubscriptions();
  await Promise.all(subscriptions.map((s) => s.delete()));
  const [topics] = await pubsub.getTopics();
  await Promise.all(topics.map((t) => t.delete()));
  await pubsub.close();
});

test('ensureLane on the emulator removes the retry policy of a lane that has one', async () => {
  const lane = laneTopology('orders');
  const [topic] = await pubsub.createTopic(lane.topic.name);
  await topic.createSubscription(lane.subscription.name, {
    pushConfig: { pushEndpoint: 'http://127.0.0.1:9/deliver' },
    retryPolicy: { minimumBackoff: { seconds: 10 }, maximumBackoff: { seconds: 600 } },
  });
  await new PubSubLanes(pubsub, { prefix: 'herald' }, { endpointFor: (fn) => `http://127.0.0.1:9/${fn}`, emulator: true }).ensureLane('orders');
  const [metadata] = await pubsub.subscription(lane.subscription.name).getMetadata();
  expect(metadata.retryPolicy).toBeNull();
  expect(metadata.pushConfig?.pushEndpoint).toBe('http://127.0.0.1:9/deliver');
});
