/**
 * The one description of Herald's Pub/Sub topology. Local mode applies it to the emulator
 * (shared/adapters/pubsub-topology.ts); the Pulumi program declares the same objects in GCP.
 * Push endpoints name a function; whoever applies the topology turns that into a URL.
 */

export const FUNCTION_NAMES = ['ingest', 'admin', 'route', 'deliver', 'pump', 'suspension-check', 'replay'] as const;
export type FunctionName = (typeof FUNCTION_NAMES)[number];

/** Functions only Herald's own plumbing calls (Pub/Sub pushes, the scheduler), never users. */
export const INTERNAL_FUNCTIONS: readonly FunctionName[] = ['route', 'deliver', 'pump', 'suspension-check', 'replay'];

export const TOPIC_KEYS = ['events', 'deadLetter', 'replay', 'notifications'] as const;
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
  subscriptions: SubscriptionSpec[];
  schedules: ScheduleSpec[];
}

export interface TopologyNames {
  /** Every topic and subscription name starts with it; default "herald". */
  prefix: string;
}

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

/** The pull subscription that holds dead letters for operators and replay. */
export function deadLetterHoldName(names: TopologyNames = { prefix: 'herald' }): string {
  return `${names.prefix}-dead-letter-hold`;
}

export function heraldTopology(names: TopologyNames = { prefix: 'herald' }): Topology {
  const p = names.prefix;
  const topics: Record<TopicKey, TopicSpec> = {
    events: { name: `${p}-events` },
    deadLetter: { name: `${p}-dead-letter`, messageRetentionSeconds: 31 * DAY },
    replay: { name: `${p}-replay` },
    notifications: { name: `${p}-notifications`, messageRetentionSeconds: 7 * DAY },
  };
  const backstop = { topic: topics.deadLetter.name, maxDeliveryAttempts: BACKSTOP_ATTEMPTS };
  return {
    topics,
    subscriptions: [
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

/**
 * Each destination gets its own lane: a topic and a push subscription to `deliver`. Pub/Sub
 * flow control, push backoff and the in-flight window are per subscription, so a slow or
 * failing destination fills only its own lane and never delays another's deliveries.
 */
export function laneTopology(destinationId: string, names: TopologyNames = { prefix: 'herald' }): { topic: TopicSpec; subscription: SubscriptionSpec } {
  const topic = `${names.prefix}-lane-${destinationId}`;
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
