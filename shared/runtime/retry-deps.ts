import { ReplaysAdminDeps } from '../app/admin/replays-admin';
import { ReplayDeps } from '../app/retry/replay-run';
import { REPLAY_PROGRESS_EVERY_MS, REPLAY_PULL_BATCH } from '../config';
import { replayTriggerMessage } from '../domain/replay/replay';
import { REPLAY_ACK_DEADLINE_SECONDS } from '../topology';
import { Runtime } from './runtime';

/** What the retry pump and replays need, from a runtime. */

/** What the `replay` function needs, from a runtime. */
export function replayDeps(rt: Runtime): ReplayDeps {
  return {
    replays: rt.replays,
    deadLetters: rt.deadLetters,
    journal: rt.intake,
    deliveries: rt.deliveries,
    destinations: rt.destinations,
    clock: rt.clock,
    log: rt.log,
    runMs: rt.config.replayRunMs,
    leaseMs: REPLAY_ACK_DEADLINE_SECONDS * 1000,
    pullBatch: REPLAY_PULL_BATCH,
    progressEveryMs: REPLAY_PROGRESS_EVERY_MS,
    // A trigger waiting for its turn holds its push for what the ack deadline leaves beside a run, at most a minute; then it is published again.
    waitMs: Math.max(0, Math.min(60_000, REPLAY_ACK_DEADLINE_SECONDS * 1000 - rt.config.replayRunMs - 30_000)),
    pollMs: 2_000,
    metrics: rt.telemetry.metrics,
    requeue: async (trigger) => {
      await rt.bus.publish(rt.topology.topics.replay.name, replayTriggerMessage(trigger.request, trigger.id));
    },
  };
}

/** What the admin API's replay routes need, from a runtime. */
export function replaysAdminDeps(rt: Runtime): ReplaysAdminDeps {
  return { replays: rt.replays, bus: rt.bus, replayTopic: rt.topology.topics.replay.name, clock: rt.clock, log: rt.log };
}
