import { DeliveryRecord } from '../retry/delivery';
import { DeliveryState, transition, Transition, TransitionResult } from '../retry/delivery-state';
import { HeraldEvent } from '../events/event';
import { OrderPlace, PARKED_AT } from '../modes/ordering';

/** What a delivery's first record is made of besides its state. */
export interface RecordedDelivery {
  id: string;
  destination: { id: string };
  event: HeraldEvent;
  /** The intake batch the event came in (ingest's journal), written on the record for the reconciler. */
  intake?: string;
}

/** A delivery's first record: its first claim, never stored, played in memory at `claimedAt`, then `next`. */
export function firstRecord(d: RecordedDelivery, publishedAt: string, claimedAt: Date, next: Transition): DeliveryRecord {
  const initial: DeliveryState = { status: 'PENDING', attempts: 0, availableAt: claimedAt.toISOString() };
  const claimed = applied(transition(initial, { type: 'claim', now: claimedAt, claimTtlMs: 0 }));
  return newRecord(d, publishedAt, applied(transition(claimed, next)));
}

/**
 * An ordered delivery's first record, made at intake with its place: the head of its key
 * claimed at once (IN_FLIGHT, its claim on the lane message that carries it), any other parked
 * (domain/modes/ordering.ts PARKED_AT) until the one before it settles.
 */
export function orderedRecord(d: RecordedDelivery, publishedAt: string, now: Date, order: OrderPlace, head: boolean): DeliveryRecord {
  const initial: DeliveryState = { status: 'PENDING', attempts: 0, availableAt: head ? now.toISOString() : PARKED_AT };
  const state = head ? applied(transition(initial, { type: 'claim', now, claimTtlMs: 0 })) : initial;
  return { ...newRecord(d, publishedAt, state), order };
}

/** An ordered delivery becomes its key's head: claimed now (parked or not, it is due now). */
export function promotedRecord(record: DeliveryRecord, now: Date, order: OrderPlace = record.order!): DeliveryRecord {
  const due = { ...record, status: 'PENDING' as const, availableAt: now.toISOString(), order };
  return applied(transition(due, { type: 'claim', now, claimTtlMs: 0 }));
}

/** An ordered delivery that must wait for the one before it: parked at its (new) place. */
export function parkedRecord(record: DeliveryRecord, order: OrderPlace): DeliveryRecord {
  const { claimedAt: _claim, ...rest } = record;
  return { ...rest, status: 'PENDING', availableAt: PARKED_AT, order };
}

/** A delivery's first record when its destination is suspended: QUEUED without an attempt. */
export function queuedRecord(d: RecordedDelivery, publishedAt: string, now: Date, reason: string): DeliveryRecord {
  const initial: DeliveryState = { status: 'PENDING', attempts: 0, availableAt: now.toISOString() };
  return newRecord(d, publishedAt, applied(transition(initial, { type: 'queue', now, reason })));
}

/** A delivery's first record: its ids, the event's, and `state` (with the event while it may be sent again). */
function newRecord(d: RecordedDelivery, publishedAt: string, state: DeliveryState): DeliveryRecord {
  const { event } = d;
  const base = { id: d.id, destinationId: d.destination.id, eventId: event.attributes.id, eventSource: event.attributes.source, eventType: event.attributes.type, publishedAt };
  return withEvent({ ...base, ...(d.intake !== undefined ? { intake: d.intake } : {}), ...state }, event);
}

/** The event stays on the record while it may be sent again (or redelivered by an operator); not once DELIVERED. */
export function withEvent<R extends DeliveryState>(record: R, event: HeraldEvent): R & { event?: HeraldEvent } {
  const { event: _old, ...rest } = record as R & { event?: HeraldEvent };
  if (record.status === 'DELIVERED') return rest as R;
  return { ...(rest as R), event: { attributes: { ...event.attributes }, data: event.data } };
}

/** A transition Herald built itself, from a state it built: a refusal here is a bug, not input. */
export function applied<S>(result: TransitionResult<S>): S {
  if (!result.ok) throw new Error(`delivery state machine refused ${result.error.transition} from ${result.error.from}: ${result.error.message}`);
  return result.state;
}

/**
 * Whether `existing` is what this process's own write of `mine` left. A write whose reply was
 * lost (DEADLINE_EXCEEDED after the commit took effect) is tried again — by Herald, or by the
 * Firestore client running a transaction again — and then finds its own record, which is not
 * another writer's: its attempt is counted and ended by this writer, once. Known by the
 * attempt's count and time, and the time it waits until (no other write of the delivery has
 * all three: they change with every attempt, deferral and back-off), and its status and claim;
 * a record the pump has claimed since for its retry (PENDING then, IN_FLIGHT now) is still it.
 */
export function isOwnWrite(existing: DeliveryState, mine: DeliveryState): boolean {
  if (existing.attempts !== mine.attempts || existing.lastAttemptAt !== mine.lastAttemptAt || existing.availableAt !== mine.availableAt) return false;
  if (mine.status === 'PENDING' && existing.status === 'IN_FLIGHT') return true;
  return existing.status === mine.status && existing.claimedAt === mine.claimedAt;
}
