import { z } from 'zod';
import { issuesFromZod } from '../../domain/events/event';
import { DEFAULT_ACCOUNT, INTERNAL_DESTINATION_ID, splitDestinationId } from '../../domain/ids';
import { BlockedHead, PARTITION_KEY_MAX } from '../../domain/modes/ordering';
import { DestinationStore } from '../../ports/destinations';
import { OrderedKeyStore } from '../../ports/ordered-keys';
import { OrderedDeps, skipKey } from '../ordering/ordered-delivery';
import { badId, notFound } from './destinations-admin';
import { Outcome } from '../support/outcome';

/**
 * The operator's side of ordered delivery per key (domain/modes/ordering.ts): which keys a held head
 * event stops, and moving one past it. Redelivering the DEAD head (…/redeliver, a replay)
 * releases its key too: it goes first, then the rest.
 */

/** At most this many held keys in one answer, oldest first: more means the receiver, not a key, needs looking at. */
export const BLOCKED_KEYS_LIMIT = 100;

/** `keys` is the account keys' verifier in the admin API's deps: the ordered keys go by another name there. */
export type OrderedKeysDeps = Omit<OrderedDeps, 'keys'> & { destinations: Pick<DestinationStore, 'get'>; orderedKeys: OrderedKeyStore };

/** A held key as the API shows it: the head that holds it, and since when. */
export interface HeldKeyView {
  key: string;
  seq: number;
  deliveryId: string;
  eventId: string;
  status: BlockedHead['status'];
  why: BlockedHead['why'];
  since: string;
}

/** Where a destination's admin routes are for its account (the operator's token reaches any account only this way). */
function destinationPath(internalId: string): string {
  const { account, id } = splitDestinationId(internalId);
  return account === DEFAULT_ACCOUNT ? `/admin/destinations/${id}` : `/admin/accounts/${account}/destinations/${id}`;
}

/** `GET /admin/destinations/{id}/ordered-keys/blocked`: its held keys, oldest first. */
export async function listBlockedKeys(deps: Pick<OrderedKeysDeps, 'destinations' | 'orderedKeys'>, id: string): Promise<Outcome<{ keys: HeldKeyView[] }>> {
  if (!INTERNAL_DESTINATION_ID.test(id)) return badId(id);
  const destination = await deps.destinations.get(id);
  if (!destination) return notFound(id);
  // Most destinations are unordered: the console asks for every one it shows, and this spares the query.
  if (!destination.ordering) return { kind: 'ok', body: { keys: [] } };
  const held = await deps.orderedKeys.blocked(id, BLOCKED_KEYS_LIMIT);
  const keys = held.flatMap(({ key, blocked: b }) => (b ? [{ key, seq: b.seq, deliveryId: b.deliveryId, eventId: b.eventId, status: b.status, why: b.why, since: b.at }] : []));
  return { kind: 'ok', body: { keys } };
}

export const skipKeyBodySchema = z.strictObject(
  {
    key: z
      .string({ error: 'key must be a string: the partition key (the events\' partitionkey) to move past its held event' })
      .min(1, 'key must not be empty: name the partition key to move past its held event')
      .max(PARTITION_KEY_MAX, `key is at most ${PARTITION_KEY_MAX} characters, as partition keys are`),
  },
  {
    error: (issue) =>
      issue.code === 'unrecognized_keys'
        ? `unknown field${issue.keys.length === 1 ? '' : 's'} ${issue.keys.join(', ')}: a skip request is {"key": string}`
        : 'the body must be a JSON object {"key": string}',
  },
);

/**
 * `POST /admin/destinations/{id}/ordered-keys/skip` with `{"key"}`: the key moves past the event
 * that holds it, which stays DEAD or QUEUED (redeliverable on its own, at the key's end), and
 * the key's next event is sent.
 */
export async function postSkipKey(deps: OrderedKeysDeps, id: string, body: unknown): Promise<Outcome<{ skipped: Omit<HeldKeyView, 'why' | 'since'> }>> {
  if (!INTERNAL_DESTINATION_ID.test(id)) return badId(id);
  const parsed = skipKeyBodySchema.safeParse(body);
  if (!parsed.success) return { kind: 'invalid', body: { error: 'invalid skip request', issues: issuesFromZod(parsed.error) } };
  const destination = await deps.destinations.get(id);
  if (!destination) return notFound(id);
  const { key } = parsed.data;
  const { orderedKeys, ...rest } = deps;
  const head = await skipKey({ ...rest, keys: orderedKeys }, destination, key);
  if (!head) return { kind: 'conflict', body: { error: notHeld(destination.ordering !== undefined, id, key) } };
  return { kind: 'ok', body: { skipped: { key, seq: head.seq, deliveryId: head.deliveryId, eventId: head.eventId, status: head.status } } };
}

function notHeld(ordered: boolean, id: string, key: string): string {
  const path = destinationPath(id);
  if (!ordered) {
    return `destination ${JSON.stringify(id)} does not deliver in order (its spec has no ordering), so no key of it is held; to deliver per key in order, PUT ${path} with "ordering": "key"`;
  }
  return `key ${JSON.stringify(key)} of destination ${JSON.stringify(id)} is not held: nothing to skip (it may have been released already, by a skip or a redelivery); the held keys are listed by GET ${path}/ordered-keys/blocked`;
}
