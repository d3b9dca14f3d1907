import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { DeliveryStatus } from '../delivery-statuses';
import { HeraldEvent } from '../events/event';

/**
 * Ordered delivery per key (issue 38): a destination with `ordering` receives the events that
 * share a CloudEvents Partitioning `partitionkey` one at a time, in the order Herald accepted
 * them. Herald keeps the order itself, in Firestore: each (destination, key) has a sequence —
 * `last` handed out at intake, `done` the highest that no longer holds the key — and each
 * ordered delivery record its place in it. Only the record at `done + 1` may be attempted; the
 * others wait, parked, until the one before them settles. These are the rules, as pure
 * functions of that state; app/ordering/ordered-delivery.ts runs them in transactions.
 */

/** The CloudEvents Partitioning extension's attribute. */
export const PARTITION_KEY = 'partitionkey';

/** Longest partition key honoured (longer ones are refused at intake by the attribute limits anyway). */
export const PARTITION_KEY_MAX = 256;

export const ORDERING_FAILURE_MODES = ['skip', 'block'] as const;
export type OrderingFailureMode = (typeof ORDERING_FAILURE_MODES)[number];

export interface OrderingSpec {
  by: 'key';
  /** What a key does when its event ends DEAD or QUEUED: move on (`skip`) or wait for an operator (`block`). */
  onFailure: OrderingFailureMode;
}

/** The object form of `ordering` (the OpenAPI document shows it beside the string `"key"`). */
export const orderingObjectSchema = z.strictObject(
  {
    by: z.literal('key', { error: 'ordering.by must be "key"' }),
    onFailure: z.enum(ORDERING_FAILURE_MODES, { error: 'ordering.onFailure must be "skip" or "block"' }).optional(),
  },
  { error: 'ordering must be "key" or an object {by: "key", onFailure?: "skip" | "block"}' },
);

/** `"key"` is `{by: "key", onFailure: "skip"}`; an object's fields each get their own message (a union would say only "invalid"). */
export const orderingSpecSchema = z.preprocess((v) => (v === 'key' ? { by: 'key' } : v), orderingObjectSchema.transform((o): OrderingSpec => ({ by: 'key', onFailure: o.onFailure ?? 'skip' })));

/** The event's partition key, if it has one Herald orders by. */
export function partitionKeyOf(event: Pick<HeraldEvent, 'attributes'>): string | undefined {
  const key = event.attributes[PARTITION_KEY];
  return key !== undefined && key.length > 0 && key.length <= PARTITION_KEY_MAX ? key : undefined;
}

/** What a publish to an ordered destination's topic carries: the event's key, so the topic keeps its order. */
export function orderingKeyOf(destination: { ordering?: OrderingSpec }, event: Pick<HeraldEvent, 'attributes'>): { orderingKey?: string } {
  const key = destination.ordering ? partitionKeyOf(event) : undefined;
  return key !== undefined ? { orderingKey: key } : {};
}

/** The key's document id: the destination and a hash of the key (any string may be a key). */
export function orderedKeyId(destinationId: string, key: string): string {
  return `${destinationId}~${createHash('sha256').update(key).digest('base64url').slice(0, 22)}`;
}

/** An ordered delivery's place in its key's sequence, on its record. */
export interface OrderPlace {
  key: string;
  seq: number;
  /**
   * Redelivered (by an operator, a replay or a reactivation) after its key had moved past it:
   * the pump gives it a new place at the key's end, in the order of the old ones, before it goes.
   */
  again?: true;
}

/** One (destination, key)'s sequence, as stored. */
export interface OrderedKeyState {
  destinationId: string;
  key: string;
  /** The highest place handed out. */
  last: number;
  /** Every place up to this one has settled: `done + 1` is the head, the only one that may be attempted. */
  done: number;
  /** The head ended DEAD or QUEUED and holds the key (`block`, or its destination is suspended), until an operator acts. */
  blocked?: BlockedHead;
  /**
   * The parked places and their deliveries' ids (place → id): how a settling head finds the
   * next one by id, with no query (a query in a transaction locks a range of the collection).
   */
  waiting?: Record<string, string>;
  /** The delivery at `done + 1` once it was sent (claimed): how a stalled key's head is found. */
  headId?: string;
  /**
   * When the destination these places belong to was created: a destination deleted (its open
   * deliveries made DEAD) and made again with the same id starts its keys afresh, behind nothing.
   */
  generation?: string;
  updatedAt: string;
}

/** Places that may wait behind a key's head: its document stays far below Firestore's 1 MiB. */
export const MAX_WAITING_PER_KEY = 10_000;

export interface BlockedHead {
  seq: number;
  deliveryId: string;
  eventId: string;
  status: Extract<DeliveryStatus, 'DEAD' | 'QUEUED'>;
  /** `block`: the destination asked for it; `suspended`: its destination is suspended (every mode). */
  why: 'block' | 'suspended';
  at: string;
}

/**
 * A parked delivery waits for the one before it: PENDING, never due (the pump's due query
 * passes it by), until its key's head settles and promotes it.
 */
export const PARKED_AT = '9999-12-31T23:59:59.999Z';

export function isParked(record: { status: DeliveryStatus; availableAt?: string }): boolean {
  return record.status === 'PENDING' && record.availableAt === PARKED_AT;
}

export function newKeyState(destinationId: string, key: string, now: Date, generation?: string): OrderedKeyState {
  return { destinationId, key, last: 0, done: 0, ...(generation !== undefined ? { generation } : {}), updatedAt: now.toISOString() };
}

/**
 * The key as intake finds it for the destination created at `generation`: a key left by an
 * earlier destination with this id (deleted with places still open) is started afresh, its
 * places numbered on from the old ones (so no new place reuses an old one's number).
 */
export function keyFor(state: OrderedKeyState | undefined, destinationId: string, key: string, generation: string, now: Date): OrderedKeyState {
  if (!state) return newKeyState(destinationId, key, now, generation);
  if (state.generation === undefined || state.generation === generation) return state.generation === generation ? state : { ...state, generation };
  return { ...newKeyState(destinationId, key, now, generation), last: state.last, done: state.last };
}

/**
 * New places at the key's end for the deliveries `ids`: their numbers, and whether the first is
 * the head (nothing before it is unsettled); every other one waits. Undefined when the key
 * already has MAX_WAITING_PER_KEY waiting.
 */
export function admitted(state: OrderedKeyState, ids: readonly string[], now: Date): { state: OrderedKeyState; seqs: number[]; headFirst: boolean } | undefined {
  const seqs = ids.map((_, i) => state.last + 1 + i);
  const headFirst = ids.length > 0 && state.done === state.last;
  const waiting = { ...state.waiting };
  ids.forEach((id, i) => {
    if (!(i === 0 && headFirst)) waiting[String(seqs[i])] = id;
  });
  if (Object.keys(waiting).length > MAX_WAITING_PER_KEY) return undefined;
  const head = headFirst ? { headId: ids[0]! } : {};
  return { state: { ...state, last: state.last + ids.length, waiting, ...head, updatedAt: now.toISOString() }, seqs, headFirst };
}

/** The delivery waiting at place `seq`, if one is, and the state without it (it is about to go). */
export function takeWaiting(state: OrderedKeyState, seq: number): { state: OrderedKeyState; deliveryId?: string } {
  const id = state.waiting?.[String(seq)];
  if (id === undefined) return { state };
  const { [String(seq)]: _taken, ...rest } = state.waiting!;
  return { state: { ...state, waiting: rest, headId: id }, deliveryId: id };
}

/** How an ordered delivery's outcome leaves its key. */
export type SettleVerdict =
  /** The key moves on: the next place becomes the head. */
  | { kind: 'advance' }
  /** The key stays on this delivery until an operator redelivers or skips it. */
  | { kind: 'hold'; why: BlockedHead['why'] }
  /** Not final for the key (a retry is waiting): nothing changes. */
  | { kind: 'none' };

/**
 * DELIVERED moves the key on. DEAD or QUEUED moves it on under `skip`, holds it under `block`;
 * QUEUED because the destination is suspended always holds it (reactivation sends the head
 * first, then the rest in order). Anything else is not final.
 */
export function settleVerdict(status: DeliveryStatus, onFailure: OrderingFailureMode, suspended: boolean): SettleVerdict {
  if (status === 'DELIVERED') return { kind: 'advance' };
  if (status === 'QUEUED' && suspended) return { kind: 'hold', why: 'suspended' };
  if (status === 'DEAD' || status === 'QUEUED') return onFailure === 'block' ? { kind: 'hold', why: 'block' } : { kind: 'advance' };
  return { kind: 'none' };
}

/**
 * The key after the delivery at `record.order.seq` settled with `verdict`, and the place that
 * becomes the head (to be promoted), if any. A delivery that is not the head (a copy settling
 * late, or one the key already passed) changes nothing.
 */
export function settled(
  state: OrderedKeyState,
  record: { id: string; eventId: string; status: DeliveryStatus; order: OrderPlace },
  verdict: SettleVerdict,
  now: Date,
): { state: OrderedKeyState; promote?: number } {
  const seq = record.order.seq;
  if (verdict.kind === 'none' || seq !== state.done + 1) return { state };
  const at = now.toISOString();
  if (verdict.kind === 'hold') {
    const status = record.status === 'DEAD' ? 'DEAD' : 'QUEUED';
    return { state: { ...state, blocked: { seq, deliveryId: record.id, eventId: record.eventId, status, why: verdict.why, at }, updatedAt: at } };
  }
  const { blocked: _cleared, ...rest } = state;
  return { state: { ...rest, done: seq, updatedAt: at }, ...(seq < state.last ? { promote: seq + 1 } : {}) };
}

/** An operator moves a blocked key past its head: the next place becomes the head. Undefined when the key is not blocked. */
export function skipped(state: OrderedKeyState, now: Date): { state: OrderedKeyState; skippedSeq: number; promote?: number } | undefined {
  if (!state.blocked) return undefined;
  const seq = state.blocked.seq;
  const { blocked: _cleared, ...rest } = state;
  return { state: { ...rest, done: seq, updatedAt: now.toISOString() }, skippedSeq: seq, ...(seq < state.last ? { promote: seq + 1 } : {}) };
}

/**
 * Redelivered deliveries of one key (their ids and old places) get their places again: the
 * blocked or held head keeps its own (it is still `done + 1`), every other goes to the key's
 * end, in the order of its old place, and waits. Returns each one's new place, and the head
 * among them, if one is.
 */
export function resequenced(state: OrderedKeyState, olds: readonly { id: string; seq: number }[], now: Date): { state: OrderedKeyState; seqs: number[]; head?: number } {
  const order = olds.map((o, i) => ({ ...o, i })).sort((a, b) => a.seq - b.seq);
  const seqs = new Array<number>(olds.length);
  const waiting = { ...state.waiting };
  let last = state.last;
  let head: number | undefined;
  let headId = state.headId;
  for (const { id, seq, i } of order) {
    if (seq === state.done + 1) {
      seqs[i] = seq;
      head = seq;
      headId = id;
    } else {
      seqs[i] = ++last;
      waiting[String(last)] = id;
    }
  }
  // Nothing before the first new place is unsettled: it is the head, and does not wait.
  if (head === undefined && state.done === state.last && last > state.last) {
    head = state.last + 1;
    headId = waiting[String(head)];
    delete waiting[String(head)];
  }
  const { blocked, headId: _old, ...rest } = state;
  const keepBlocked = blocked !== undefined && head !== blocked.seq ? { blocked } : {};
  return { state: { ...rest, ...keepBlocked, last, waiting, ...(headId !== undefined ? { headId } : {}), updatedAt: now.toISOString() }, seqs, ...(head !== undefined ? { head } : {}) };
}
