import { PushDelivery } from '../../domain/events/cloudevents-pubsub';
import { parseReplayMessage, REPLAY_ID, rejectedReport } from '../../domain/replay/replay';
import { ReplayDeps, ReplayOutcome, runReplay } from './replay-run';

export type ReplayTriggerOutcome = ReplayOutcome | { kind: 'rejected'; replayId: string };

/**
 * A message on the replay topic (the `replay` function's push): a JSON replay request, run
 * under its `id` or else the message's id. A message that is not a valid request is
 * rejected once — an ERROR log line naming every problem and a `rejected` report under that
 * id — and acked: publishing it again changes nothing, so Pub/Sub must not retry it.
 */
export async function handleReplayTrigger(deps: ReplayDeps, push: PushDelivery): Promise<ReplayTriggerOutcome> {
  const parsed = parseReplayMessage(push.message.data);
  if (!parsed.ok) {
    const replayId = idIn(push.message.data) ?? push.messageId;
    deps.log.error(`replay request rejected: ${parsed.issues.map((i) => (!i.path || i.message.startsWith(i.path) ? i.message : `${i.path}: ${i.message}`)).join('; ')}`, {
      replayId,
      messageId: push.messageId,
      subscription: push.subscription,
      issues: parsed.issues,
      data: push.message.data.toString('utf8').slice(0, 500),
    });
    const created = await deps.replays.create(rejectedReport(replayId, push.messageId, parsed.issues, deps.clock.now()));
    if (!created) deps.log.warn('the rejected replay request names an id that is already used; that report is unchanged', { replayId, messageId: push.messageId });
    return { kind: 'rejected', replayId };
  }
  return runReplay(deps, { id: parsed.value.id ?? push.messageId, request: parsed.value, messageId: push.messageId });
}

/** The `id` of a request that is otherwise invalid, when it is a usable one. */
function idIn(data: Buffer): string | undefined {
  try {
    const body = JSON.parse(data.toString('utf8')) as unknown;
    const id = typeof body === 'object' && body !== null ? (body as { id?: unknown }).id : undefined;
    return typeof id === 'string' && REPLAY_ID.test(id) ? id : undefined;
  } catch {
    return undefined;
  }
}
