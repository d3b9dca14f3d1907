import { createHash } from 'node:crypto';
import { z } from 'zod';
import { structuredEvent } from '../events/cloudevents-http';
import { HeraldEvent } from '../events/event';
import { BATCH_LIMITS } from './batch-limits';

/**
 * Batched delivery (docs/what-a-destination-receives.md; issue 37): a destination that opts in receives many
 * events in one request, the CloudEvents batched content mode — a JSON array of structured-mode
 * events — signed once over the whole body. These are the rules: the bounds of a destination's
 * `batch`, when an open batch is sent, and what its request carries. No I/O; the clock is passed in.
 */

/** Bounds of `batch` (docs/what-a-destination-receives.md#batches), in a module the console can bundle. */
export { BATCH_LIMITS } from './batch-limits';

export const BATCH_CONTENT_TYPE = 'application/cloudevents-batch+json';

const int = (name: string, min: number, max: number) =>
  z
    .number({ error: `batch.${name} must be a number` })
    .int(`batch.${name} must be a whole number`)
    .min(min, `batch.${name} must be ${min}–${max}`)
    .max(max, `batch.${name} must be ${min}–${max}`);

export const batchSpecSchema = z.strictObject(
  {
    maxEvents: int('maxEvents', BATCH_LIMITS.minEvents, BATCH_LIMITS.maxEvents),
    maxWaitMs: int('maxWaitMs', BATCH_LIMITS.minWaitMs, BATCH_LIMITS.maxWaitMs),
    maxBytes: int('maxBytes', BATCH_LIMITS.minBytes, BATCH_LIMITS.maxBytes).optional(),
  },
  { error: 'batch must be an object {maxEvents, maxWaitMs, maxBytes?}' },
);

export type BatchSpec = z.infer<typeof batchSpecSchema>;

/** A batch's body size limit: the destination's, or the largest allowed. */
export function batchBytesOf(spec: BatchSpec): number {
  return spec.maxBytes ?? BATCH_LIMITS.maxBytes;
}

/** Where an event's delivery stood in the batch that carried it: on its record, in the log and the API. */
export interface BatchPlace {
  /** The batch's id: its `webhook-id`, the same on every attempt of the batch. */
  id: string;
  /** 0-based index in the body's array. */
  position: number;
  /** Events in the batch. */
  size: number;
}

/**
 * A batch's id, from what it carries (its members' delivery ids, in order): the same events
 * batched again (their messages redelivered after a Herald fault) are the same batch, and a
 * receiver that deduplicates on `webhook-id` takes them once. `b_` + 128 bits, base64url.
 */
export function batchIdOf(deliveryIds: readonly string[]): string {
  return `b_${createHash('sha256').update(deliveryIds.join('\n')).digest('base64url').slice(0, 22)}`;
}

/**
 * The id a retry of batch `place.id` is sent under: the batch's own when every member came back
 * together, else one of its own — a request that carries other events must not share a
 * `webhook-id` with the batch, or a receiver that deduplicates would drop it.
 */
export function retryBatchId(batchId: string, size: number, positions: readonly number[]): string {
  return positions.length === size ? batchId : batchIdOf([batchId, ...positions.map(String)]);
}

/** A batch's `webhook-id`: stable across its retries, so receivers deduplicate a batch as they do an event. */
export function batchWebhookId(batchId: string): string {
  return `msg_${batchId}`;
}

/**
 * An event in the CloudEvents JSON format, as text. Kept for the event while it lives: the
 * batcher weighs each event as it gathers it and writes the same text into the body it sends,
 * and the data is parsed to be written out (a JSON payload goes in as JSON), once.
 */
const structuredText = new WeakMap<HeraldEvent, string>();

function structuredJson(event: HeraldEvent): string {
  let text = structuredText.get(event);
  if (text === undefined) structuredText.set(event, (text = JSON.stringify(structuredEvent(event))));
  return text;
}

/** The request body: the events in order, each in the CloudEvents JSON format. */
export function batchBody(events: readonly HeraldEvent[]): Buffer {
  return Buffer.from(`[${events.map(structuredJson).join(',')}]`, 'utf8');
}

/** An event's share of a batch body: its JSON and a comma. */
export function batchShare(event: HeraldEvent): number {
  return Buffer.byteLength(structuredJson(event)) + 1;
}

/** One event waiting in an open batch; `T` is what the caller needs back to acknowledge it. */
export interface Waiting<T> {
  event: HeraldEvent;
  /** When Herald accepted the event (ms): the batch's wait counts from its oldest. */
  acceptedAt: number;
  bytes: number;
  ticket: T;
}

export interface ClosedBatch<T> {
  /** The key it was gathered under (a destination, or a destination and a batch being retried). */
  key: string;
  members: Waiting<T>[];
  why: 'full' | 'bytes' | 'waited' | 'drained';
}

interface OpenBatch<T> {
  members: Waiting<T>[];
  bytes: number;
  oldest: number;
  limits: GatherLimits;
}

/** What closes one open batch: `maxEvents`, `maxBytes`, and the wait. */
export interface GatherLimits {
  maxEvents: number;
  maxWaitMs: number;
  maxBytes: number;
}

/**
 * Open batches, one per key, filled in arrival order. A batch is closed when it is full
 * (`maxEvents`), when the next event would overflow `maxBytes` (that event then opens the next
 * one), or when its oldest event has waited `maxWaitMs` since Herald accepted it — whichever
 * comes first. An event accepted long ago (a backlog, a redelivery after a crash) closes its
 * batch at the next look, so a backlog drains in full batches: everything pulled is added
 * before `due` is asked.
 */
export class BatchGatherer<T> {
  private readonly open = new Map<string, OpenBatch<T>>();

  /** Adds one event; returns the batches this closed (full, or overflowed by it). */
  add(key: string, limits: GatherLimits, member: Waiting<T>): ClosedBatch<T>[] {
    const closed: ClosedBatch<T>[] = [];
    let batch = this.open.get(key);
    // An event alone larger than maxBytes still goes, alone: refusing it would lose it.
    if (batch && batch.members.length > 0 && batch.bytes + member.bytes + 2 > limits.maxBytes) {
      closed.push({ key, members: batch.members, why: 'bytes' });
      batch = undefined;
    }
    if (!batch) {
      batch = { members: [], bytes: 0, oldest: member.acceptedAt, limits };
      this.open.set(key, batch);
    }
    batch.members.push(member);
    batch.bytes += member.bytes;
    batch.oldest = Math.min(batch.oldest, member.acceptedAt);
    batch.limits = limits;
    if (batch.members.length >= limits.maxEvents) {
      closed.push({ key, members: batch.members, why: 'full' });
      this.open.delete(key);
    } else if (closed.length > 0) {
      // The overflowing event opened a new batch.
      this.open.set(key, batch);
    }
    return closed;
  }

  /** How many events are waiting under `key`. */
  size(key: string): number {
    return this.open.get(key)?.members.length ?? 0;
  }

  /** Every batch whose oldest event has waited its `maxWaitMs` by `now`. */
  due(now: number): ClosedBatch<T>[] {
    const closed: ClosedBatch<T>[] = [];
    for (const [key, batch] of this.open) {
      if (now - batch.oldest >= batch.limits.maxWaitMs) {
        closed.push({ key, members: batch.members, why: 'waited' });
        this.open.delete(key);
      }
    }
    return closed;
  }

  /** When the next batch falls due (ms), or undefined when none is open. */
  nextDueAt(): number | undefined {
    let next: number | undefined;
    for (const batch of this.open.values()) {
      const at = batch.oldest + batch.limits.maxWaitMs;
      if (next === undefined || at < next) next = at;
    }
    return next;
  }

  /** Every open batch, closed (the run is ending: the batcher sends some, and gives the rest back to the queue). */
  drain(): ClosedBatch<T>[] {
    const all = [...this.open].map(([key, b]) => ({ key, members: b.members, why: 'drained' as const }));
    this.open.clear();
    return all;
  }

  get waiting(): number {
    let n = 0;
    for (const b of this.open.values()) n += b.members.length;
    return n;
  }
}
