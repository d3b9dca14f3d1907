import { handleReplayTrigger } from '../shared/app/retry/replay-trigger';
import { replayDeps } from '../shared/runtime/retry-deps';
import { pushHandler } from './push';

/**
 * The `replay` function: Pub/Sub pushes each message of the replay topic here (the
 * `<prefix>-replay-trigger` subscription). It answers once the run is over — 204, which
 * acks the trigger, also for a request it rejected (a clear ERROR log line and a `rejected`
 * report; retrying would change nothing) — and 500 only for a Herald fault before the run
 * could start, which Pub/Sub retries.
 */
export const replayHandler = pushHandler('replay', (rt, push) => handleReplayTrigger(replayDeps(rt), push));
