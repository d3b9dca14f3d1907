import { DeliveryRecord, deliveryId } from '../../domain/retry/delivery';
import { orderedRecord, parkedRecord, promotedRecord } from '../../domain/delivery/delivery-record';
import { Destination } from '../../domain/destinations/destination';
import { eventKey, HeraldEvent } from '../../domain/events/event';
import {
  admitted,
  BlockedHead,
  isParked,
  keyFor,
  newKeyState,
  orderedKeyId,
  OrderedKeyState,
  OrderingFailureMode,
  partitionKeyOf,
  resequenced,
  MAX_WAITING_PER_KEY,
  settled,
  settleVerdict,
  skipped,
  takeWaiting,
} from '../../domain/modes/ordering';
import { Clock, Logger } from '../../ports/clock';
import { OrderedKeyRecords, OrderedKeyStore, OrderedKeyWrite } from '../../ports/ordered-keys';
import { RecordExistsError } from '../../ports/deliveries';
import { keyTurnsFor } from './key-turns';
import { LaneDeps, publishToLane } from '../lanes/lanes';

/**
 * Ordered delivery per key (domain/modes/ordering.ts has the rules): what runs them against the store.
 * An ordered event does not ride a first-attempt lane: intake creates its record with its place,
 * in one atomic write with its key, and only the key's head goes to the lanes — claimed, as the
 * retry pump sends a retry, so `deliver` attempts it under its claim (app/delivery/claimed-attempt.ts).
 * When it settles, the next place is claimed and sent in its turn. Every step is one atomic write
 * of the key and its records, committed only if nothing it read changed meanwhile
 * (OrderedKeyStore.transact), so instances and crashes cannot reorder a key: a lost lane message
 * leaves a claimed record the pump claims again when its claim expires.
 */

export interface OrderedDeps extends LaneDeps {
  keys: OrderedKeyStore;
  clock: Clock;
  log: Logger;
  /** Where created records go into the delivery log's head (absent in tests that do not read the log). */
  logHead?: { created(destinationId: string, deliveryId: string, publishedAt: string, at: Date): void };
}

type LaneDestination = Pick<Destination, 'id' | 'lane' | 'batch'>;
/** What intake needs of an ordered destination: its lane, and when it was created (domain/modes/ordering.ts keyFor). */
type IntakeDestination = LaneDestination & Pick<Destination, 'createdAt'>;

/** One accepted event for an ordered destination. */
export interface OrderedItem {
  event: HeraldEvent;
  publishedAt: string;
  intake?: string;
}

/** Whether `destination` takes `event` in order: it asks for ordering and the event has a partitionkey. */
export function takesInOrder(destination: Pick<Destination, 'ordering'>, event: Pick<HeraldEvent, 'attributes'>): boolean {
  return destination.ordering !== undefined && partitionKeyOf(event) !== undefined;
}

/**
 * Accepts `items` (in the order Herald accepted them) for an ordered destination: per key, one
 * atomic write gives each its place and creates its record; the head, if one of them is, is sent.
 * An event that has a record already (a producer's resend) keeps it and its place. Resolves
 * once every record is durable and a head made here was published; a lane publish that fails
 * after that is left to the pump. The publish is outside the key's turn: Pub/Sub answering
 * slowly (the client waits up to 60 s an RPC) then delays the requests that made a head, not
 * every later event of the key, whose placing needs only Firestore.
 */
export async function admitOrdered(deps: OrderedDeps, destination: IntakeDestination, items: readonly OrderedItem[]): Promise<void> {
  const byKey = new Map<string, OrderedItem[]>();
  for (const item of items) {
    const key = partitionKeyOf(item.event)!;
    byKey.set(key, [...(byKey.get(key) ?? []), item]);
  }
  await Promise.all([...byKey].map(([key, group]) => admitKey(deps, destination, key, group)));
}

async function admitKey(deps: OrderedDeps, destination: IntakeDestination, key: string, items: readonly OrderedItem[]): Promise<void> {
  const placed = await keyTurnsFor(deps.keys).join(orderedKeyId(destination.id, key), items, (group) => admitGroup(deps, destination, key, group));
  await placed.headSent;
}

/** A group placed in its key's turn; `headSent`: its head's publish, begun as the turn ended (a wrapper, so the turn does not wait for it). */
interface Placed {
  headSent: Promise<void>;
}

async function admitGroup(deps: OrderedDeps, destination: IntakeDestination, key: string, items: readonly OrderedItem[]): Promise<Placed> {
  const now = deps.clock.now();
  const unique = [...new Map(items.map((it) => [deliveryId(destination.id, eventKey(it.event.attributes)), it])).entries()];
  // Created unread (an event's first intake, nearly always); if one has a record (a producer's resend), read them and skip those.
  const place = (checked: boolean) =>
    deps.keys.transact(destination.id, key, async (state, records) => {
      const found = checked ? await records.byIds(unique.map(([id]) => id)) : [];
      const fresh = unique.filter((_, i) => found[i] === undefined);
      if (fresh.length === 0) return { result: [] as DeliveryRecord[] };
      const a = admitted(keyFor(state, destination.id, key, destination.createdAt, now), fresh.map(([id]) => id), now);
      if (!a) throw new Error(`ordered key ${key} of ${destination.id} has ${MAX_WAITING_PER_KEY} events waiting behind its head: none more accepted until it moves (a held key: skip or redeliver its head)`);
      const created = fresh.map(([id, it], i) =>
        orderedRecord({ id, destination, event: it.event, ...(it.intake !== undefined ? { intake: it.intake } : {}) }, it.publishedAt, now, { key, seq: a.seqs[i]! }, i === 0 && a.headFirst),
      );
      return { state: a.state, create: created, result: created };
    });
  const made = await place(false).catch((e: unknown) => {
    if (e instanceof RecordExistsError) return place(true);
    throw e;
  });
  for (const r of made) deps.logHead?.created(destination.id, r.id, r.publishedAt!, now);
  const head = made.find((r) => r.status === 'IN_FLIGHT');
  return { headSent: head ? sendHead(deps, destination, head) : Promise.resolve() };
}

/**
 * An ordered delivery settled (DELIVERED, DEAD or QUEUED): its key moves on, promoting the next
 * place, or holds (`block`, or its destination is suspended). A copy that settles late, or a
 * delivery the key is not on, changes nothing.
 */
export async function settleOrdered(deps: OrderedDeps, destination: LaneDestination, record: DeliveryRecord, onFailure: OrderingFailureMode, suspended: boolean): Promise<void> {
  const order = record.order;
  if (!order) return;
  const verdict = settleVerdict(record.status, onFailure, suspended);
  if (verdict.kind === 'none') return;
  const now = deps.clock.now();
  const outcome = await inTurn(deps, record.destinationId, order.key, async (state, records) => {
    if (!state) return { result: { changed: false, promoted: undefined as DeliveryRecord | undefined } };
    const after = settled(state, { ...record, order }, verdict, now);
    if (after.state === state) return { result: { changed: false, promoted: undefined } };
    const promoted = await promoteFrom(records, after.state, after.promote, now);
    return { ...promoted, result: { changed: true, promoted: promoted.result } };
  });
  if (outcome.changed && verdict.kind === 'hold') {
    deps.log.warn(`ordered key held by its head (${verdict.why}): the events after it wait`, { destinationId: record.destinationId, deliveryId: record.id, eventId: record.eventId, key: order.key, seq: order.seq, status: record.status });
  }
  if (outcome.promoted) await sendHead(deps, destination, outcome.promoted);
}

/**
 * After an outcome was recorded: an ordered delivery that settled moves its key on (or holds
 * it). Nothing for any other delivery, or where no key store is wired (unit tests of other things).
 */
export async function afterOrderedOutcome(
  deps: Omit<OrderedDeps, 'keys'> & { keys?: OrderedKeyStore },
  destination: LaneDestination & Pick<Destination, 'ordering'>,
  record: DeliveryRecord,
  suspended: boolean,
): Promise<void> {
  if (!record.order || !deps.keys) return;
  await settleOrdered({ ...deps, keys: deps.keys }, destination, record, destination.ordering?.onFailure ?? 'skip', suspended);
}

/**
 * The key's next place claimed (`promote`, from the state settled or skipped). A place whose
 * record settled already (a recovery) is passed over; a place with no record, or one that is
 * neither parked nor settled, leaves the key where it is.
 */
async function promoteFrom(records: OrderedKeyRecords, state: OrderedKeyState, promote: number | undefined, now: Date): Promise<{ state: OrderedKeyState; records?: DeliveryRecord[]; result: DeliveryRecord | undefined }> {
  let current = state;
  let seq = promote;
  while (seq !== undefined) {
    const taken = takeWaiting(current, seq);
    const [next] = taken.deliveryId !== undefined ? await records.byIds([taken.deliveryId]) : [undefined];
    if (next && isParked(next) && next.order?.seq === seq) {
      const claimed = promotedRecord(next, now);
      return { state: taken.state, records: [claimed], result: claimed };
    }
    const settledAlready = next && next.order?.seq === seq && !next.order.again && (next.status === 'DELIVERED' || next.status === 'DEAD' || next.status === 'QUEUED');
    if (!settledAlready) break;
    current = { ...taken.state, done: seq, updatedAt: now.toISOString() };
    seq = seq < current.last ? seq + 1 : undefined;
  }
  return { state: current, result: undefined };
}

/**
 * Redelivered deliveries of `record`'s key (`order.again`: an operator, a replay or a
 * reactivation made them PENDING) get their places again, in the order of their old ones
 * (domain/modes/ordering.ts resequenced), the head among them claimed and sent. The pump calls it
 * when it claims one of them; the others of the key are placed in the same transaction.
 */
export async function resequenceOrdered(deps: OrderedDeps, destination: LaneDestination, record: DeliveryRecord): Promise<number> {
  const order = record.order;
  if (!order?.again) return 0;
  const now = deps.clock.now();
  // Found by a query outside the transaction (one inside would lock a range of deliveries), read again by id inside it.
  const ids = await deps.keys.again(record.destinationId, order.key);
  const result = await inTurn(deps, record.destinationId, order.key, async (state, records) => {
    const again = (await records.byIds(ids)).filter((r): r is DeliveryRecord => r?.order?.again === true && r.order.key === order.key && (r.status === 'PENDING' || r.status === 'IN_FLIGHT'));
    if (again.length === 0) return { result: { placed: 0, head: undefined as DeliveryRecord | undefined } };
    const r = resequenced(state ?? newKeyState(record.destinationId, order.key, now), again.map((a) => ({ id: a.id, seq: a.order!.seq })), now);
    const placed = again.map((a, i) => {
      const place = { key: order.key, seq: r.seqs[i]! };
      return place.seq === r.head ? promotedRecord(a, now, place) : parkedRecord(a, place);
    });
    return { state: r.state, records: placed, result: { placed: placed.length, head: placed.find((p) => p.order!.seq === r.head) } };
  });
  if (result.placed > 0) deps.log.info(`${result.placed} redelivered ordered deliveries placed again at the end of their key, in their old order`, { destinationId: record.destinationId, key: order.key });
  if (result.head) await sendHead(deps, destination, result.head);
  return result.placed;
}

/**
 * An operator moves a held key past its head (which stays DEAD or QUEUED, redeliverable on its
 * own: it then goes to the key's end). Undefined when the key is not held.
 */
export async function skipKey(deps: OrderedDeps, destination: LaneDestination, key: string): Promise<BlockedHead | undefined> {
  const now = deps.clock.now();
  const result = await inTurn(deps, destination.id, key, async (state, records) => {
    const after = state && skipped(state, now);
    if (!state || !after) return { result: undefined };
    const promoted = await promoteFrom(records, after.state, after.promote, now);
    return { ...promoted, result: { skipped: state.blocked!, head: promoted.result } };
  });
  if (!result) return undefined;
  deps.log.info('ordered key skipped past its held head by an operator', { destinationId: destination.id, key, deliveryId: result.skipped.deliveryId, eventId: result.skipped.eventId, seq: result.skipped.seq });
  if (result.head) await sendHead(deps, destination, result.head);
  return result.skipped;
}

/**
 * Keys whose head has not moved for `staleAfterMs` are looked at once (the scheduled pump run;
 * local mode's reconciler interval): a head that settled while the push that carried it was
 * lost for good (its key's move not made) moves the key on now, and a parked head is sent. A
 * head still waiting for its retry or its turn is left to the pump. Resolves with how many
 * keys moved.
 */
export async function repairStalledKeys(deps: OrderedDeps & { directory: { get(id: string): Promise<Destination | undefined> } }, staleAfterMs: number, limit = 100): Promise<number> {
  const now = deps.clock.now();
  const stalled = await deps.keys.stalled(new Date(now.getTime() - staleAfterMs), limit);
  let moved = 0;
  for (const key of stalled) {
    const destination = await deps.directory.get(key.destinationId);
    const head = await inTurn(deps, key.destinationId, key.key, async (state, records) => {
      if (!state || state.blocked || state.done >= state.last) return { result: undefined };
      const headSeq = state.done + 1;
      if (state.waiting?.[String(headSeq)] !== undefined) return promoteFrom(records, state, headSeq, now);
      const [record] = state.headId !== undefined ? await records.byIds([state.headId]) : [undefined];
      const final = record && !record.order?.again && (record.status === 'DELIVERED' || record.status === 'DEAD' || record.status === 'QUEUED');
      if (!record || !final) return { state: { ...state, updatedAt: now.toISOString() }, result: undefined };
      const verdict = settleVerdict(record.status, destination?.ordering?.onFailure ?? 'skip', record.status === 'QUEUED' && destination?.status === 'suspended');
      const after = settled(state, { ...record, order: record.order! }, verdict, now);
      return after.state === state ? { state: { ...state, updatedAt: now.toISOString() }, result: undefined } : promoteFrom(records, after.state, after.promote, now);
    });
    if (!head) continue;
    moved++;
    deps.log.warn('an ordered key had stalled (its head settled or waited unsent): moved on now', { destinationId: key.destinationId, key: key.key, deliveryId: head.id, eventId: head.eventId });
    if (destination) await sendHead(deps, destination, head);
  }
  return moved;
}

/** A transaction on the key, in its turn in this process (app/ordering/key-turns.ts). */
function inTurn<T>(deps: Pick<OrderedDeps, 'keys'>, destinationId: string, key: string, plan: (state: OrderedKeyState | undefined, records: OrderedKeyRecords) => Promise<OrderedKeyWrite<T>>): Promise<T> {
  return keyTurnsFor(deps.keys).run(orderedKeyId(destinationId, key), () => deps.keys.transact(destinationId, key, plan));
}

/**
 * The claimed head onto its destination's lane. A failed publish is only logged: the record is
 * durable and claimed, and the pump claims it again when the claim expires.
 */
async function sendHead(deps: OrderedDeps, destination: LaneDestination, head: DeliveryRecord): Promise<void> {
  try {
    await publishToLane(deps, destination, { kind: 'claimed', destinationId: head.destinationId, event: head.event!, claim: head.claimedAt!, ...(head.publishedAt ? { publishedAt: head.publishedAt } : {}) });
  } catch (e) {
    deps.log.warn('could not send an ordered key\'s head to its lane; the retry pump sends it when its claim expires', { destinationId: head.destinationId, deliveryId: head.id, eventId: head.eventId, error: (e as Error).message });
  }
}
