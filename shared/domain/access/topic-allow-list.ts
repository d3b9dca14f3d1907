import { z } from 'zod';
import { DEFAULT_ACCOUNT } from '../ids';
import { heraldTopology, lanePrefixes, TopologyNames } from '../../topology';

/**
 * Which Pub/Sub topics an account's destinations may publish to. The runtime identity is one
 * identity for every account, and each customer grants it publisher on their topic, so IAM
 * alone cannot keep account B's destination off account A's topic: Herald checks the
 * account's allow-list, which only the operator sets, at registration and again at every
 * publish. Herald's own topics are never a destination, whatever a list says.
 */

const PROJECT = '[a-z][a-z0-9-]{4,28}[a-z0-9]';
/** A topic's resource name as Pub/Sub spells it: a project id, then a name of 3–255 characters starting with a letter. */
export const TOPIC_RESOURCE = new RegExp(`^projects\\/${PROJECT}\\/topics\\/[A-Za-z][\\w.~+%-]{2,254}$`);
/** An allow-list prefix: a project's topics whose names start with what precedes the `*` (`projects/p/topics/*`: all of p's). */
const TOPIC_PREFIX = new RegExp(`^projects\\/${PROJECT}\\/topics\\/(?:[A-Za-z][\\w.~+%-]{0,253})?\\*$`);

export const MAX_ALLOWED_TOPICS = 100;

const ENTRY_HELP = 'an allowed topic is a topic (projects/PROJECT/topics/TOPIC) or a prefix ending in * (projects/PROJECT/topics/acme-*: every topic of PROJECT whose name starts with acme-)';

/** One entry of an allow-list, as the operator gives it. */
export const allowedTopicEntrySchema = z.string({ error: ENTRY_HELP }).refine((e) => TOPIC_RESOURCE.test(e) || TOPIC_PREFIX.test(e), { message: ENTRY_HELP });

/** An account's allow-list: at most MAX_ALLOWED_TOPICS entries, each once, in the order given. */
export const allowedTopicsSchema = z
  .array(allowedTopicEntrySchema, { error: 'allowedTopics must be an array of topics (projects/P/topics/T) or prefixes (projects/P/topics/acme-*)' })
  .max(MAX_ALLOWED_TOPICS, `at most ${MAX_ALLOWED_TOPICS} allowed topics; a prefix (projects/P/topics/acme-*) covers many`)
  .transform((entries) => [...new Set(entries)]);

/** Whether `topic` is on the list: equal to an entry, or under an entry's prefix. */
export function topicAllowed(topic: string, entries: readonly string[]): boolean {
  return entries.some((entry) => (entry.endsWith('*') ? topic.startsWith(entry.slice(0, -1)) : topic === entry));
}

/**
 * The list in force for an account: its own, and for `default` also the deployment's
 * (HERALD_DEFAULT_ACCOUNT_TOPICS, which the Pulumi program fills with the topics of the
 * destinations the stack declares).
 */
export function allowedTopicsInForce(account: string, own: readonly string[] | undefined, defaultAccountTopics: readonly string[]): string[] {
  return [...new Set([...(own ?? []), ...(account === DEFAULT_ACCOUNT ? defaultAccountTopics : [])])];
}

/** A topic name as Pub/Sub might resolve it: percent-decoded (REST decodes the path), and case folded to be safe. */
function folded(name: string): string {
  try {
    return decodeURIComponent(name).toLowerCase();
  } catch {
    return name.toLowerCase();
  }
}

/**
 * Why a topic named like one of Herald's own (events, dead letter, replay, notifications, the
 * batch lanes, any lane) may not be a destination, in any project: publishing there would
 * route events again or feed the wrong function. Judged on the name alone, so no spelling of
 * Herald's project (its number, an alias, the emulator's any-project) gets one through.
 */
export function ownTopicProblem(topic: string, names: TopologyNames): string | undefined {
  const name = folded(topic.slice(topic.lastIndexOf('/') + 1));
  const own = Object.values(heraldTopology(names).topics).map((t) => t.name.toLowerCase());
  const lanes = lanePrefixes(names).map((p) => p.toLowerCase());
  if (!own.includes(name) && !lanes.some((lane) => name.startsWith(lane))) return undefined;
  return `topic ${topic} is named like one of Herald's own topics (${names.prefix}-events, ${names.prefix}-dead-letter, ${names.prefix}-lane-…), which no destination may be, in any project; give the topic another name`;
}

export type TopicRefusal = { kind: 'own' | 'not-allowed'; message: string };

/** Why `account` may not publish to `topic` (Herald's own, or not on its list), else undefined. */
export function topicRefusal(topic: string, account: string, allowed: readonly string[], names: TopologyNames): TopicRefusal | undefined {
  const own = ownTopicProblem(topic, names);
  if (own !== undefined) return { kind: 'own', message: own };
  if (topicAllowed(topic, allowed)) return undefined;
  const list = allowed.length > 0 ? `its allowedTopics: ${allowed.join(', ')}` : 'it has no allowedTopics';
  return {
    kind: 'not-allowed',
    message: `topic ${topic} is not among the topics account ${account} may publish to (${list}); the operator allows it with PATCH /admin/accounts/${account} {"allowedTopics": [...]} (herald accounts update ${account} --allowed-topic ${topic})`,
  };
}
