import { subscriptionMetadata } from '../../shared/adapters/pubsub/topology';
import { DEFAULT_LANE_SHARDS, DEFAULT_RETRY_SHARDS, heraldTopology, laneTopicOf, laneTopology, sharedLaneFor, shardOf } from '../../shared/topology';

/** What each subscription is created with, on GCP and on the emulator. */
const target = { endpointFor: (fn: string) => `http://127.0.0.1:8080/${fn}?token=t` };

test('a lane and the route subscription keep their retry policy on GCP, as the Pulumi program declares it', () => {
  const lane = laneTopology('orders').subscription;
  expect(subscriptionMetadata(lane, 'p', target).retryPolicy).toEqual({ minimumBackoff: { seconds: 10 }, maximumBackoff: { seconds: 600 } });
});

test('on the emulator push subscriptions get no retry policy (its retry queue strands messages), the rest is the same', () => {
  const onEmulator = { ...target, emulator: true };
  for (const spec of [laneTopology('orders').subscription, ...heraldTopology().subscriptions.filter((s) => s.pushTo)]) {
    const metadata = subscriptionMetadata(spec, 'p', onEmulator);
    expect(metadata).not.toHaveProperty('retryPolicy');
    const { retryPolicy: _dropped, ...rest } = subscriptionMetadata(spec, 'p', target);
    expect(metadata).toEqual(rest);
  }
});

describe('shared lanes', () => {
  test('the topology holds laneShards + retryShards lanes, each pushing to deliver', () => {
    const t = heraldTopology({ prefix: 'h', laneShards: 3, retryShards: 2 });
    expect(t.laneTopics.map((l) => l.name)).toEqual(['h-shard-0', 'h-shard-1', 'h-shard-2', 'h-retry-shard-0', 'h-retry-shard-1']);
    for (const topic of t.laneTopics) {
      const sub = t.subscriptions.find((s) => s.topic === topic.name);
      expect(sub).toMatchObject({ name: `${topic.name}-deliver`, pushTo: 'deliver', deadLetter: { topic: 'h-dead-letter' } });
    }
    expect(heraldTopology().laneTopics).toHaveLength(DEFAULT_LANE_SHARDS + DEFAULT_RETRY_SHARDS);
  });

  test('a destination always lands on the same shard, and destinations spread over all of them', () => {
    expect(shardOf('orders', 16)).toBe(shardOf('orders', 16));
    const counts = new Array<number>(16).fill(0);
    for (let i = 0; i < 16_000; i++) counts[shardOf(`customer-${i}-hook`, 16)]!++;
    // FNV-1a spreads close to evenly: every shard within 15 % of its share.
    for (const c of counts) expect(Math.abs(c - 1000)).toBeLessThan(150);
  });

  test('first attempts and retries of one destination go on lanes of their kind; a dedicated lane is its own', () => {
    const names = { prefix: 'herald', laneShards: 16, retryShards: 8 };
    expect(sharedLaneFor('orders', 'first', names)).toBe(`herald-shard-${shardOf('orders', 16)}`);
    expect(sharedLaneFor('orders', 'retry', names)).toBe(`herald-retry-shard-${shardOf('orders', 8)}`);
    expect(laneTopicOf({ id: 'orders' }, 'first', names)).toBe(sharedLaneFor('orders', 'first', names));
    expect(laneTopicOf({ id: 'orders', lane: 'dedicated' }, 'retry', names)).toBe('herald-lane-orders');
  });
});
