
/**
 * The one description of Herald's Pub/Sub topology. Local mode applies it to the emulator
 * (shared/adapters/pubsub/topology.ts); the Pulumi program declares the same objects in GCP.
 * Push endpoints name a function; whoever applies the topology turns that into a URL.
 */

export const FUNCTION_NAMES = ['ingest', 'admin', 'route', 'deliver', 'pump', 'suspension-check', 'replay'] as const;
export type FunctionName = (typeof FUNCTION_NAMES)[number];

/** Functions only Herald's own plumbing calls (Pub/Sub pushes, the scheduler), never users. */
export const INTERNAL_FUNCTIONS: readonly FunctionName[] = ['route', 'deliver', 'pump', 'suspension-check', 'replay'];

export const TOPIC_KEYS = ['events', 'deadLetter', 'replay', 'notifications', 'batch', 'batchWake'] as const;
export type TopicKey = (typeof TOPIC_KEYS)[number];

export interface TopicSpec {
  name: string;
  /** Retention on the topic itself, so a subscription can seek back (dead letters). */
  messageRetentionSeconds?: number;
}

export interface SubscriptionSpec {
  name: string;
  topic: string;
  /** Absent: a pull subscription that holds messages for a reader. */
  pushTo?: FunctionName;
  ackDeadlineSeconds: number;
  messageRetentionSeconds: number;
  /** Pub/Sub's own redelivery backoff: a backstop; Herald schedules its retries itself. */
  retryPolicy?: { minimumBackoffSeconds: number; maximumBackoffSeconds: number };
  /** Backstop for messages Herald itself cannot process (its own faults), never for a failing destination. */
  deadLetter?: { topic: string; maxDeliveryAttempts: number };
}

/** A function started on a schedule (Cloud Scheduler on GCP; local mode runs it in-process). */
export interface ScheduleSpec {
  name: string;
  function: FunctionName;
  /** Unix cron, in UTC. */
  cron: string;
  /** How long one run may keep going, in seconds (the pump); absent: one pass. */
  runSeconds?: number;
}

export interface Topology {
  topics: Record<TopicKey, TopicSpec>;
  /** The shared lanes' topics (laneShards first attempts, then retryShards retries); their subscriptions are in `subscriptions`. */
  laneTopics: TopicSpec[];
  subscriptions: SubscriptionSpec[];
  schedules: ScheduleSpec[];
}

export interface TopologyNames {
  /** Every topic and subscription name starts with it; default "herald". */
  prefix: string;
  /** Shared lanes for first attempts (HERALD_LANE_SHARDS); default DEFAULT_LANE_SHARDS. */
  laneShards?: number;
  /** Shared lanes for the retry pump's claimed retries (HERALD_RETRY_SHARDS); default DEFAULT_RETRY_SHARDS. */
  retryShards?: number;
}

/**
 * Destinations share a fixed set of lanes, so a deployment's Pub/Sub resources do not grow
 * with its destinations (Pub/Sub allows 10,000 topics and 10,000 subscriptions per
 * project). Retries travel on lanes of their own: a dead destination's retries, each held
 * up to its attempt timeout, never take a push slot from another destination's first
 * attempt. Herald admits each destination itself (rate leases, slow-destination shedding:
 * app/delivery/deliver.ts), which per-destination lanes used to do by construction.
 */
export const DEFAULT_LANE_SHARDS = 16;
export const DEFAULT_RETRY_SHARDS = 8;
export const MAX_SHARDS = 256;

/** Which lanes a kind of lane message goes on (domain/intake/lane-message.ts purposeOf): first attempts on the first-attempt lanes, the others on the retry lanes. */
export type LanePurpose = 'first' | 'retry';

const DAY = 24 * 3600;
// Long enough for a 5 s delivery timeout plus Firestore work, with room to spare: an
// ack deadline shorter than the handler means endless redelivery.
const PUSH_ACK_DEADLINE_SECONDS = 60;
/**
 * What handling one lane push may take, wait for a turn and attempt together: the ack
 * deadline less room for its Firestore work. Past the deadline Pub/Sub pushes the message
 * again while the first push is still handled, and the delivery may be sent twice.
 */
export const LANE_HANDLING_BUDGET_MS = (PUSH_ACK_DEADLINE_SECONDS - 15) * 1000;
const PUSH_RETRY = { minimumBackoffSeconds: 10, maximumBackoffSeconds: 600 };
const BACKSTOP_ATTEMPTS = 100;
export const PUMP_RUN_SECONDS = 55;
/**
 * A replay run reads the dead-letter backlog for minutes: its push gets Pub/Sub's longest ack
 * deadline, and a run stops well before it (HERALD_REPLAY_RUN_MS, 480 s by default).
 */
export const REPLAY_ACK_DEADLINE_SECONDS = 600;
/** A replay trigger that keeps failing (Herald's fault) is dead-lettered after this many pushes. */
const REPLAY_BACKSTOP_ATTEMPTS = 5;

/**
 * The batch lane: every batched destination's events (domain/modes/batching.ts), first attempts and
 * retries alike, on one topic with a pull subscription. The batcher (app/delivery/batcher.ts, in each
 * scheduled pump run) pulls it, so a destination's events meet in one process whichever
 * instance ingested them: a push would land them on many instances, each with a part.
 */
export function batchLaneNames(names: TopologyNames = { prefix: 'herald' }): { topic: string; subscription: string } {
  return { topic: `${names.prefix}-batch`, subscription: `${names.prefix}-batch-gather` };
}

/**
 * The batcher's wake-up: a batcher runs within each scheduled pump run and ends once the batch
 * lane has been quiet a while, so the first event after a lull would wait for the next minute's
 * run. Ingest, publishing onto the batch lane when no batcher has said it is running
 * (app/lanes/batcher-wake.ts), publishes a message here instead, which Pub/Sub pushes to the pump: a
 * run starts at once. A wake older than its own retention means nothing: it is not kept.
 */
export function batchWakeNames(names: TopologyNames = { prefix: 'herald' }): { topic: string; subscription: string } {
  return { topic: `${names.prefix}-batch-wake`, subscription: `${names.prefix}-batch-wake-pump` };
}

/** The pull subscription that holds dead letters for operators and replay. */
export function deadLetterHoldName(names: TopologyNames = { prefix: 'herald' }): string {
  return `${names.prefix}-dead-letter-hold`;
}

/**
 * The topics Herald's own functions publish to: every topic but `events`, which producers
 * publish to and `route` reads. With the lanes, what the deployed identity is granted publisher on.
 */
export const TOPICS_HERALD_PUBLISHES: readonly TopicKey[] = ['deadLetter', 'replay', 'notifications', 'batch', 'batchWake'];

/** The pull subscriptions Herald's functions read (replay the dead letters, the batcher its lane): what the deployed identity is granted subscriber on. */
export function subscriptionsHeraldPulls(names: TopologyNames = { prefix: 'herald' }): string[] {
  return [deadLetterHoldName(names), batchLaneNames(names).subscription];
}

export function heraldTopology(names: TopologyNames = { prefix: 'herald' }): Topology {
  const p = names.prefix;
  const topics: Record<TopicKey, TopicSpec> = {
    events: { name: `${p}-events` },
    deadLetter: { name: `${p}-dead-letter`, messageRetentionSeconds: 31 * DAY },
    replay: { name: `${p}-replay` },
    notifications: { name: `${p}-notifications`, messageRetentionSeconds: 7 * DAY },
    batch: { name: batchLaneNames(names).topic },
    batchWake: { name: batchWakeNames(names).topic },
  };
  const backstop = { topic: topics.deadLetter.name, maxDeliveryAttempts: BACKSTOP_ATTEMPTS };
  const lanes = sharedLanes(names);
  const batch = batchLaneNames(names);
  return {
    topics,
    laneTopics: lanes.map((l) => l.topic),
    subscriptions: [
      ...lanes.map((l) => l.subscription),
      // The batcher holds a message while its batch fills (up to a minute) and extends the deadline itself.
      { name: batch.subscription, topic: batch.topic, ackDeadlineSeconds: PUSH_ACK_DEADLINE_SECONDS, messageRetentionSeconds: 7 * DAY, deadLetter: backstop },
      {
        name: `${p}-events-route`,
        topic: topics.events.name,
        pushTo: 'route',
        ackDeadlineSeconds: PUSH_ACK_DEADLINE_SECONDS,
        messageRetentionSeconds: 7 * DAY,
        retryPolicy: PUSH_RETRY,
        deadLetter: backstop,
      },
      // A message on the replay topic runs one replay of dead letters.
      {
        name: `${p}-replay-trigger`,
        topic: topics.replay.name,
        pushTo: 'replay',
        ackDeadlineSeconds: REPLAY_ACK_DEADLINE_SECONDS,
        messageRetentionSeconds: 7 * DAY,
        retryPolicy: PUSH_RETRY,
        deadLetter: { topic: topics.deadLetter.name, maxDeliveryAttempts: REPLAY_BACKSTOP_ATTEMPTS },
      },
      // A wake starts a pump run, which holds the push for the run (its deadline: the run and a margin); none is dead-lettered.
      {
        name: batchWakeNames(names).subscription,
        topic: topics.batchWake.name,
        pushTo: 'pump',
        ackDeadlineSeconds: PUMP_RUN_SECONDS + 30,
        messageRetentionSeconds: 600,
        retryPolicy: PUSH_RETRY,
      },
      // Dead letters wait here for an operator or a replay; nothing consumes them automatically.
      { name: deadLetterHoldName(names), topic: topics.deadLetter.name, ackDeadlineSeconds: 60, messageRetentionSeconds: 7 * DAY },
      // The email sender (outside Herald) reads suspension notices from here.
      { name: `${p}-notifications-outbox`, topic: topics.notifications.name, ackDeadlineSeconds: 60, messageRetentionSeconds: 7 * DAY },
    ],
    // Cloud Scheduler's finest grain is a minute: each run of the retry pump polls for
    // 55 s, so retries due within the minute are not held to the next one.
    schedules: [
      { name: `${p}-retry-pump`, function: 'pump', cron: '* * * * *', runSeconds: PUMP_RUN_SECONDS },
      // Threshold suspension over the rolling hour: a minute late at most.
      { name: `${p}-suspension-check`, function: 'suspension-check', cron: '* * * * *' },
    ],
  };
}

/** A lane's topic and its push subscription to `deliver`. */
function laneSpecs(topic: string, names: TopologyNames): { topic: TopicSpec; subscription: SubscriptionSpec } {
  return {
    topic: { name: topic },
    subscription: {
      name: `${topic}-deliver`,
      topic,
      pushTo: 'deliver',
      ackDeadlineSeconds: PUSH_ACK_DEADLINE_SECONDS,
      messageRetentionSeconds: 7 * DAY,
      retryPolicy: PUSH_RETRY,
      deadLetter: { topic: `${names.prefix}-dead-letter`, maxDeliveryAttempts: BACKSTOP_ATTEMPTS },
    },
  };
}

/** Every shared lane of the deployment: first-attempt shards, then retry shards. */
export function sharedLanes(names: TopologyNames = { prefix: 'herald' }): { topic: TopicSpec; subscription: SubscriptionSpec }[] {
  const { first, retry } = shardCounts(names);
  return [
    ...Array.from({ length: first }, (_, k) => laneSpecs(sharedLaneTopic(names, 'first', k), names)),
    ...Array.from({ length: retry }, (_, k) => laneSpecs(sharedLaneTopic(names, 'retry', k), names)),
  ];
}

export function shardCounts(names: TopologyNames): { first: number; retry: number } {
  return { first: names.laneShards ?? DEFAULT_LANE_SHARDS, retry: names.retryShards ?? DEFAULT_RETRY_SHARDS };
}

function sharedLaneTopic(names: TopologyNames, purpose: LanePurpose, shard: number): string {
  return `${names.prefix}-${purpose === 'first' ? 'shard' : 'retry-shard'}-${shard}`;
}

/**
 * A destination's shard: FNV-1a of its id, so every instance (and every Herald version)
 * puts it on the same lane without asking anyone. A change in the shard count moves
 * destinations to other lanes; messages already on the old ones are still delivered,
 * since every lane pushes to `deliver` and its messages name their destination.
 */
export function shardOf(destinationId: string, shards: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < destinationId.length; i++) {
    hash ^= destinationId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % shards;
}

/** The shared lane a destination's messages for `purpose` are published on. */
export function sharedLaneFor(destinationId: string, purpose: LanePurpose, names: TopologyNames = { prefix: 'herald' }): string {
  const counts = shardCounts(names);
  return sharedLaneTopic(names, purpose, shardOf(destinationId, purpose === 'first' ? counts.first : counts.retry));
}

/**
 * A dedicated lane: a destination whose volume earns one (`"lane": "dedicated"`) gets its own
 * topic and push subscription to `deliver`, created when it is registered. Pub/Sub's flow
 * control, push backoff and in-flight window are then its own, and it may wait in-process
 * for its rate slot as long as LANE_HANDLING_BUDGET_MS allows. Before shared lanes, every
 * destination had one; those lanes drain and are removed with their destination.
 */
export function laneTopology(destinationId: string, names: TopologyNames = { prefix: 'herald' }): { topic: TopicSpec; subscription: SubscriptionSpec } {
  return laneSpecs(`${names.prefix}-lane-${destinationId}`, names);
}

/** Every topic name Herald publishes lanes on starts with one of these. */
export function lanePrefixes(names: TopologyNames = { prefix: 'herald' }): string[] {
  return [`${names.prefix}-lane-`, `${names.prefix}-shard-`, `${names.prefix}-retry-shard-`, batchLaneNames(names).topic];
}

/** The topic a destination's message for `purpose` goes on: the batch lane for a batched one, its own lane, or its shard of the shared lanes. */
export function laneTopicOf(destination: { id: string; lane?: string; batch?: object }, purpose: LanePurpose, names: TopologyNames): string {
  if (destination.batch !== undefined) return batchLaneNames(names).topic;
  return destination.lane === 'dedicated' ? laneTopology(destination.id, names).topic.name : sharedLaneFor(destination.id, purpose, names);
}
