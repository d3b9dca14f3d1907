import { AttemptResult, HeraldOverload } from '../../domain/retry/delivery';
import { splitDestinationId } from '../../domain/ids';
import { topicRefusal } from '../../domain/access/topic-allow-list';
import { TopologyNames } from '../../topology';

/** An account's allowedTopics in force as an instance knows them, or why they could not be read. */
export type AllowedTopics = { entries: readonly string[] } | { unreadable: string };

export interface TopicAccessDeps {
  /** The account's allowedTopics in force, from the cache of app/access/account-policies.ts: no Firestore read per delivery. */
  allowedTopics: (account: string) => Promise<AllowedTopics>;
  /** Herald's own topic names, which no destination may be. */
  names: TopologyNames;
}

/**
 * Checked before every publish to a topic destination, since registration checked a list the
 * operator may have changed since. A topic the destination's account may not publish to (off its
 * allowedTopics now, or named like Herald's own) is not published to: the attempt is a `topic`
 * refusal, `not-allowed`, which suspends the destination (every retry would be refused alike
 * until the operator allows the topic again), its events QUEUED. A list that cannot be read is
 * Herald's own trouble: no attempt is counted and the delivery waits. Undefined: publish.
 */
export async function topicNotAllowed(deps: TopicAccessDeps, destination: { id: string; topic?: string }): Promise<AttemptResult | HeraldOverload | undefined> {
  if (destination.topic === undefined) return undefined;
  const { account } = splitDestinationId(destination.id);
  const allowed = await deps.allowedTopics(account);
  if ('unreadable' in allowed) return { kind: 'herald-overload', durationMs: 0, error: `the allowedTopics of account ${account} could not be read: ${allowed.unreadable}` };
  const refusal = topicRefusal(destination.topic, account, allowed.entries, deps.names);
  return refusal === undefined ? undefined : { kind: 'topic', durationMs: 0, problem: 'not-allowed', error: refusal.message };
}
