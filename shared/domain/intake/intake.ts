import { eventAccount } from '../access/account';
import { DeliveryRecord, deliveryId } from '../retry/delivery';
import { eventKey, eventSize, HeraldEvent } from '../events/event';
import { mayReceive } from '../operational/operational-events';

/**
 * The intake journal: Herald's own memory of every event ingest accepted, kept until the
 * reconciler has seen a delivery record for each destination the event was meant for.
 * Pub/Sub's unacked message is otherwise the only trace of an accepted event, and a push
 * that Pub/Sub never makes again (the emulator strands some after an outage; production
 * gives up after the retention period) would lose it without anyone noticing.
 */

/** One journal document: the events of one or more ingest requests, written at once. */
export interface IntakeBatch {
  /** Sortable by acceptance time (intakeBatchId). */
  id: string;
  /** When ingest accepted the events (ISO). */
  acceptedAt: string;
  events: HeraldEvent[];
  /**
   * The batched destinations whose batch lane took these events by reference (their places in
   * `events`: lanes.ts publishJournalled), as ingest routed them: the reconciler expects a
   * record for each whatever the routing says by then, so the journal outlives every message
   * that names it (a message late past a filter's change would name events no longer anywhere).
   */
  refs?: Record<string, number[]>;
  /**
   * The reconciler's progress through a batch it could not finish in one round: every event
   * before this index has a record for each destination it was meant for.
   */
  progress?: number;
}

/**
 * A journal document stays well under Firestore's 1 MiB document limit: the events' bytes plus
 * what Firestore adds per field. An event alone is at most HERALD_MAX_EVENT_BYTES (900 KiB).
 */
export const INTAKE_BATCH_BYTES = 900 * 1024;
/** At most this many events in one document, so a reconciliation pass reads a bounded amount. */
export const INTAKE_BATCH_EVENTS = 500;

/** `i-<ms since epoch, 13 digits>-<random>`: ordered by time, unique by its tail. */
export function intakeBatchId(now: Date, random: string): string {
  return `i-${String(now.getTime()).padStart(13, '0')}-${random}`;
}

/** The acceptance time (epoch ms) an intakeBatchId starts with; undefined for an id of another form. */
export function intakeBatchTime(id: string): number | undefined {
  const match = /^i-(\d{13})-/.exec(id);
  return match ? Number(match[1]) : undefined;
}

/**
 * The reconciler expects an event at the destinations created at or before its batch's
 * `acceptedAt` (expectedInRuns), so no event may join a batch whose `acceptedAt` is older than a
 * destination the event was routed to: events join an open batch until its write starts, and
 * one routed to a destination created after the batch opened was never expected there (its lost
 * lane message never recovered). `newestRouted`: the latest `createdAt` (ISO) of the destinations
 * the events go to (absent: none). Such events open a batch of their own instead: a destination
 * created meanwhile is rare, and a later `acceptedAt` for the whole batch would make the
 * reconciler expect the earlier events at a destination they were never routed to.
 */
export function joinsOpenBatch(acceptedAt: string, newestRouted: string | undefined): boolean {
  return newestRouted === undefined || newestRouted <= acceptedAt;
}

/**
 * When a new batch opens at `now`: at least the newest `createdAt` of its first events'
 * destinations, taken by the clock of the process that created them, which may be ahead of this one.
 */
export function openedAt(now: Date, newestRouted: string | undefined): string {
  const at = now.toISOString();
  return newestRouted !== undefined && newestRouted > at ? newestRouted : at;
}

/** Whether `events` may join a batch that already holds `held` events of `heldBytes`. */
export function fitsBatch(held: number, heldBytes: number, event: HeraldEvent): boolean {
  if (held === 0) return true;
  return held + 1 <= INTAKE_BATCH_EVENTS && heldBytes + eventSize(event) <= INTAKE_BATCH_BYTES;
}

/** One (event, destination) pair the reconciler expects a delivery record for. */
export interface ExpectedDelivery {
  deliveryId: string;
  destinationId: string;
  event: HeraldEvent;
}

/** What of a destination decides whether an accepted event was meant for it. */
export interface RoutableDestination {
  id: string;
  eventTypes: readonly string[];
  createdAt: string;
  /** Whether its filter takes the event (absent: no filter, every event of its types): routing created nothing for one it did not. */
  takes?: (event: HeraldEvent) => boolean;
}

/**
 * The destinations an event of a type and account goes to now, and whether a destination
 * still exists (absent: every one does): what the reconciler routes a batch's events by.
 */
export type Routing = ((type: string, account: string) => readonly RoutableDestination[]) & { exists?: (destinationId: string) => boolean };

/**
 * Every delivery a batch should have led to: each event to each destination that takes its
 * type (`destinationsFor`: the directory's index, not a look at every destination) and existed when the event was accepted (route matched against those; one created
 * later may or may not have been matched, and is not owed the event). Deleted destinations
 * are owed nothing: `deliver` dead-letters what reaches their lanes.
 */
export function expectedDeliveries(batch: IntakeBatch, destinationsFor: Routing): ExpectedDelivery[] {
  const expected: ExpectedDelivery[] = [];
  for (const run of expectedInRuns(batch, destinationsFor, 0, Infinity)) expected.push(...run.expected);
  return expected;
}

/** A run of a batch's events, [start, end), and the deliveries they should have led to. */
export interface ExpectedRun {
  start: number;
  end: number;
  expected: ExpectedDelivery[];
}

/**
 * expectedDeliveries of the events from `from` on, cut into runs of whole events of at least
 * `records` deliveries each (the last may hold fewer, an event alone more): the reconciler's unit
 * of work, and of progress, in a batch too large for one round. Lazy: a run is worked out only
 * when asked for, so a batch of 500 events × 100 destinations is never held whole.
 */
export function* expectedInRuns(batch: IntakeBatch, destinationsFor: Routing, from: number, records: number): Generator<ExpectedRun> {
  const byType = new Map<string, RoutableDestination[]>();
  const seen = new Set<string>();
  const referencing = refsByEvent(batch, destinationsFor.exists ?? (() => true));
  let run: ExpectedRun = { start: from, end: from, expected: [] };
  for (let i = from; i < batch.events.length; i++) {
    const event = batch.events[i]!;
    const type = event.attributes.type;
    const account = eventAccount(event.attributes);
    const cacheKey = `${account}\n${type}`;
    let targets = byType.get(cacheKey);
    if (!targets) byType.set(cacheKey, (targets = destinationsFor(type, account).filter((d) => d.createdAt <= batch.acceptedAt)));
    const key = eventKey(event.attributes);
    for (const d of targets) {
      if (!mayReceive(event, d)) continue;
      if (d.takes && !d.takes(event)) continue;
      const id = deliveryId(d.id, key);
      // The same event twice in one batch (a producer's retry joined to its first try) is one delivery.
      if (seen.has(id)) continue;
      seen.add(id);
      run.expected.push({ deliveryId: id, destinationId: d.id, event });
    }
    // What a batch lane took by reference is owed as ingest routed it (a destination deleted since is owed nothing).
    for (const destinationId of referencing.get(i) ?? []) {
      const id = deliveryId(destinationId, key);
      if (seen.has(id)) continue;
      seen.add(id);
      run.expected.push({ deliveryId: id, destinationId, event });
    }
    run.end = i + 1;
    if (run.expected.length >= records) {
      yield run;
      run = { start: i + 1, end: i + 1, expected: [] };
    }
  }
  if (run.end > run.start) yield run;
}

/** Per event place, the destinations of `refs` that still exist. */
function refsByEvent(batch: IntakeBatch, exists: (destinationId: string) => boolean): Map<number, string[]> {
  const byEvent = new Map<number, string[]>();
  for (const [destinationId, places] of Object.entries(batch.refs ?? {})) {
    if (!exists(destinationId)) continue;
    for (const i of places) byEvent.set(i, [...(byEvent.get(i) ?? []), destinationId]);
  }
  return byEvent;
}

/**
 * The record the reconciler creates for an expected delivery it found missing: PENDING and
 * due now, holding the event, so the retry pump sends it like any retry; `recoveredAt` says why
 * it exists. Created only if absent, so a first attempt recorded meanwhile wins.
 */
export function recoveredRecord(e: ExpectedDelivery, batch: Pick<IntakeBatch, 'id' | 'acceptedAt'>, now: Date): DeliveryRecord {
  const at = now.toISOString();
  const { id, source, type } = e.event.attributes;
  return {
    id: e.deliveryId,
    destinationId: e.destinationId,
    eventId: id,
    eventSource: source,
    eventType: type,
    status: 'PENDING',
    attempts: 0,
    availableAt: at,
    publishedAt: batch.acceptedAt,
    intake: batch.id,
    recoveredAt: at,
    event: e.event,
  };
}

/**
 * A record missing for a destination whose senders leased within the activity window is most
 * likely still in its lane behind a backlog: its batch waits. Recovering it then would only
 * send the backlog through the retry pump as well, at three times the cost, and slow the lane
 * further. The window is half the grace, at most 30 s.
 */
export function activityWindowMs(graceMs: number): number {
  return Math.min(30_000, graceMs / 2);
}

/** Whether a destination's lane is moving: one of its senders leased (epoch ms `at`) within the window. */
export function laneMoving(leases: readonly { at: number }[], now: number, graceMs: number): boolean {
  return leases.some((l) => l.at >= now - activityWindowMs(graceMs));
}

/** Past this many graces a batch is reconciled all the same: a lane may take new messages while it holds old ones back for ever. */
export const HARD_LIMIT_GRACES = 4;

/** Whether a batch may still wait for a moving lane. */
export function mayWaitForLanes(acceptedAt: string, now: number, graceMs: number): boolean {
  return Date.parse(acceptedAt) > now - HARD_LIMIT_GRACES * graceMs;
}

/** How long before the grace ends a first attempt's success is written checked (mayMeetRecovered): room for its group commit to land. */
export const RECOVERY_MARGIN_MS = 60_000;

/**
 * Whether a first attempt ending at `now`, for an event accepted at `acceptedAt`, may meet a
 * record the reconciler made (it recovers a batch's missing records once the grace has passed).
 * A success then is created checked, a read, instead of grouped unchecked: beside the
 * reconciler's record a grouped copy would be a second DELIVERED, counted twice in usage. Before
 * it (nearly every attempt) the reconciler has not looked, and whatever the attempt writes
 * lands before it does: a quarter of the grace is left for the write, at most RECOVERY_MARGIN_MS.
 */
export function mayMeetRecovered(acceptedAt: string, now: number, graceMs: number): boolean {
  return now - Date.parse(acceptedAt) > graceMs - Math.min(graceMs / 4, RECOVERY_MARGIN_MS);
}

/** Which batches the next rounds leave alone: those accepted up to `through`, until `until` (epoch ms). */
export interface SkipPostponed {
  through: string;
  until: number;
}

/**
 * After a round postponed batches (accepted at `postponed`): the rounds of the activity
 * window look only at later batches, rather than read the postponed ones again each round. A
 * window already running keeps its end and takes the latest time.
 */
export function skipAfterPostponed(current: SkipPostponed | undefined, postponed: readonly string[], now: number, graceMs: number): SkipPostponed | undefined {
  if (postponed.length === 0) return current;
  const latest = [current?.through, ...postponed].filter((t): t is string => t !== undefined).reduce((a, b) => (a > b ? a : b));
  return { through: latest, until: current?.until ?? now + activityWindowMs(graceMs) };
}
