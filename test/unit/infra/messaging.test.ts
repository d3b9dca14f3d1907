import * as pulumi from '@pulumi/pulumi';
import { heraldTopology } from '../../../shared/topology';

interface Declared {
  type: string;
  name: string;
  inputs: Record<string, unknown>;
}
const declared: Declared[] = [];

beforeAll(async () => {
  await pulumi.runtime.setMocks(
    {
      newResource: (args) => {
        declared.push({ type: args.type, name: args.name, inputs: args.inputs as Record<string, unknown> });
        return { id: `${args.name}-id`, state: args.inputs };
      },
      call: (args) => args.inputs,
    },
    'herald',
    'test',
    false,
  );
  await import('../../../infra/index');
  // Resource registration is asynchronous; let the mocks see every declaration.
  await new Promise((resolve) => setTimeout(resolve, 50));
});

test('the program declares exactly the topics of the shared topology, with their retention', () => {
  const topology = heraldTopology();
  const topics = declared.filter((r) => r.type === 'gcp:pubsub/topic:Topic');
  expect(topics.map((t) => t.inputs.name).sort()).toEqual(Object.values(topology.topics).map((t) => t.name).sort());
  const deadLetter = topics.find((t) => t.inputs.name === topology.topics.deadLetter.name)!;
  expect(deadLetter.inputs.messageRetentionDuration).toBe(`${topology.topics.deadLetter.messageRetentionSeconds}s`);
});

test('pull subscriptions match the topology and never expire', () => {
  const pulls = heraldTopology().subscriptions.filter((s) => s.pushTo === undefined);
  const subs = declared.filter((r) => r.type === 'gcp:pubsub/subscription:Subscription');
  expect(subs.map((s) => [s.inputs.name, s.inputs.topic, s.inputs.ackDeadlineSeconds]).sort()).toEqual(
    pulls.map((s) => [s.name, s.topic, s.ackDeadlineSeconds]).sort(),
  );
  for (const s of subs) expect(s.inputs.expirationPolicy).toEqual({ ttl: '' });
});
