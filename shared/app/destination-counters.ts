import { LastError } from '../domain/delivery';

import { addHistograms, withSample } from '../domain/latency-histogram';
import { addSettled, bucketStart, RateBucket, RateOutcome, RateSummary, RECENT_ERRORS, summarize } from '../domain/success-rate';
import { Clock, Logger, CounterDelta, CounterStore } from '../ports';
import { RecentEntry } from '../domain/recent-log';
import { splitDestinationId } from '../domain/ids';
import { randomBytes } from 'node:crypto';

/** What rides in a destination's counter document besides its counts: the delivery log's head (DeliveryLogHead). */
export interface CarriedLists {
  listOf(destinationId: string, bucketStart: number): readonly RecentEntry[] | undefined;
}

/**
 * A destination is sparse in a bucket while this writer has counted at most this many attempts,
 * settled deliveries and created records in it: its counts then ride in a document shared with
 * other sparse destinations instead of taking a write of their own each flush.
 */
export const SPARSE_MAX = 16;
/**
 * Sparse destinations per shared document (one writer's, one bucket's): with an entry of at most
 * SHARED_ENTRY_BYTES each, a document stays at half Firestore's 1 MiB limit at worst (a few
 * hundred bytes an entry in practice).
 */
export const SHARED_PART_SIZE = 64;
/** An entry larger than this (long error texts, a long log-head list) goes to its own document. */
const SHARED_ENTRY_BYTES = 8 * 1024;
/** The counters, latency bins and names of an entry, at most. */
const ENTRY_FIXED_BYTES = 512;

export interface DestinationCountersOptions {
  /** A minute, divided by HERALD_TIME_SCALE (see counterBucketMs). */
  bucketMs: number;
  /** The rolling hour, divided by HERALD_TIME_SCALE; default 60 buckets. */
  hourMs?: number;
  /** At most one flush per this long (HERALD_RATE_FLUSH_MS): each counter document takes at most one write per flush. */
  flushMs: number;
  /** This writer's shard: writers on different shards never write the same document. */
  shard: number;
}

/**
 * Shards a destination's counters are spread over: a writer picks one at random when it
 * starts. Reading the window costs a read per document that exists (per writer), not per
 * shard, so the space is wide: two of ten processes share a shard (and its document takes
 * two writes a second) with a chance of about 1 in 23 (1 in 16 of 3 with 16 shards).
 */
export const COUNTER_SHARDS = 1024;

/**
 * Each destination's counters (attempts, successes and failures for its success rate, latency
 * bins, DEAD and QUEUED counts, its newest errors), kept on the hot path without a write per attempt: attempts are summed in
 * memory per (destination, bucket) and flushed as one increment per document at most every
 * `flushMs`, on this writer's shard. At 100 events/s to one destination that is one write a
 * second to one document, whatever the traffic. Counts not yet flushed when a process dies
 * are lost; only the success rate (never an event) is affected.
 */
export class DestinationCounters {
  private pending = new Map<string, CounterDelta>();
  /** What each write carries besides the counts: the delivery log's head. */
  private carried?: CarriedLists;
  /** Names this writer's documents and lists: writers that share a shard keep theirs apart. */
  private readonly writer = `w${randomBytes(6).toString('hex')}`;
  /**
   * Where each (destination, bucket) of this writer goes: `group`, the shared document it stays
   * in for the bucket, until it is no longer sparse (`own`: its own document, for good).
   */
  private readonly placement = new Map<string, { counted: number; errorBytes: number; group?: string; own?: true }>();
  /** Per (bucket, account), the shared document being filled and how many destinations it holds. */
  private readonly parts = new Map<string, { bucketStart: number; part: number; members: number }>();
  /** Buckets before this one have no placement kept (pruned): late counts in them go to own documents. */
  private placedFrom = -Infinity;
  /** When this writer's last write was issued (not asked for): the interval runs from it. */
  private lastFlushAt = -Infinity;
  /** A flush is queued and not started: asks meanwhile join it. */
  private flushQueued = false;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: CounterStore,
    private readonly clock: Clock,
    private readonly log: Logger,
    readonly options: DestinationCountersOptions,
  ) {}

  /** `lists` ride in the counter documents from now on (DeliveryLogHead). */
  carry(lists: CarriedLists): void {
    this.carried = lists;
  }

  /** The rolling hour, in scaled time. */
  get hourMs(): number {
    return this.options.hourMs ?? this.options.bucketMs * 60;
  }

  /** One attempt: its outcome, its failure (if it failed) and how long it took (`durationMs`, into the latency histogram). */
  record(destinationId: string, outcome: RateOutcome, at: Date, error?: LastError, durationMs?: number): void {
    const d = this.deltaAt(destinationId, at);
    d.attempts++;
    if (outcome === 'success') d.successes++;
    if (outcome === 'failure') d.failures++;
    if (error) d.lastErrors = [error, ...d.lastErrors].slice(0, RECENT_ERRORS);
    if (durationMs !== undefined) d.latency = withSample(d.latency, durationMs);
  }

  /** A delivery became DEAD or QUEUED at `at`: counted in the bucket, for the console's charts. */
  deadOrQueued(destinationId: string, status: 'DEAD' | 'QUEUED', at: Date): void {
    const d = this.deltaAt(destinationId, at);
    d.settled = addSettled(d.settled, status === 'DEAD' ? { dead: 1 } : { queued: 1 });
  }

  /**
   * The start of the destination's bucket holding `at`, whose next write is sure to come: what is
   * carried for it (a log-head list) goes out with that write even if nothing is counted.
   */
  bucketOf(destinationId: string, at: Date): number {
    return this.deltaAt(destinationId, at).bucketStart;
  }

  /** The unflushed counts of the destination's bucket holding `at`, created empty when there are none. */
  private deltaAt(destinationId: string, at: Date): CounterDelta {
    const start = bucketStart(at.getTime(), this.options.bucketMs);
    const key = `${destinationId}~${start}`;
    let d = this.pending.get(key);
    if (!d) {
      d = { destinationId, bucketStart: start, attempts: 0, successes: 0, failures: 0, lastErrors: [] };
      this.pending.set(key, d);
    }
    return d;
  }

  /**
   * Flushes unless this writer flushed less than `flushMs` ago or a flush is queued already:
   * every path that flushes (after a delivery, the timer) goes through here, so a counter
   * document never takes two writes from one writer within `flushMs`. A flush can queue behind
   * a window read; without the second check, each delivery that ended meanwhile queued one
   * more, and they went out back to back (writes 595 ms apart on one document, measured).
   */
  flushIfDue(): Promise<void> {
    if (this.pending.size === 0 || this.flushQueued || this.clock.now().getTime() - this.lastFlushAt < this.options.flushMs) return this.flushing;
    return this.flush();
  }

  /**
   * flushIfDue for a caller that must not wait for it (a push's answer): started, not awaited.
   * A failed write is logged by flush and its counts kept; anything else that fails is logged here.
   */
  flushInBackground(): void {
    this.flushIfDue().catch((e: unknown) => this.log.warn('success-rate counters not flushed', { error: e instanceof Error ? e.message : String(e) }));
  }

  /** Writes every unflushed count now (one write per document); a failed write keeps them for the next flush. On shutdown. */
  flush(): Promise<void> {
    this.flushQueued = true;
    this.flushing = this.flushing.then(async () => {
      this.flushQueued = false;
      if (this.pending.size === 0) return;
      const deltas = [...this.pending.values()].map((d) => {
        const list = this.carried?.listOf(d.destinationId, d.bucketStart);
        const { group: _previous, ...counts } = d;
        const delta: CounterDelta = list ? { ...counts, recent: { writer: this.writer, entries: [...list] } } : counts;
        const group = this.place(delta);
        return group === undefined ? delta : { ...delta, group };
      });
      this.pending = new Map();
      this.lastFlushAt = this.clock.now().getTime();
      try {
        await this.store.add(deltas, this.options.shard);
      } catch (e) {
        for (const d of deltas) this.merge(d);
        this.log.warn('success-rate counters not written; kept for the next flush', { error: (e as Error).message, destinations: [...new Set(deltas.map((d) => d.destinationId))] });
      }
    });
    return this.flushing;
  }

  /**
   * The shared document the delta goes into, or undefined for the destination's own. A
   * (destination, bucket) stays in one shared document while it is sparse (SPARSE_MAX) and its
   * entry small; past that it goes to its own for the rest of the bucket. Either way each write
   * carries this writer's whole log-head list of the bucket, so the list in the document written
   * last is complete and the other holds a part of it: reads take both.
   */
  private place(d: CounterDelta): string | undefined {
    if (d.bucketStart > this.placedFrom + 2 * this.options.bucketMs) {
      // Buckets this old take no more records (created() prunes their lists at the same age).
      this.placedFrom = d.bucketStart - 2 * this.options.bucketMs;
      for (const k of this.placement.keys()) if (Number(k.slice(k.lastIndexOf('~') + 1)) < this.placedFrom) this.placement.delete(k);
      for (const [k, part] of this.parts) if (part.bucketStart < this.placedFrom) this.parts.delete(k);
    }
    if (d.bucketStart < this.placedFrom) return undefined;
    const key = `${d.destinationId}~${d.bucketStart}`;
    const p = this.placement.get(key) ?? { counted: 0, errorBytes: 0 };
    this.placement.set(key, p);
    if (p.own) return undefined;
    p.counted += d.attempts + (d.settled?.dead ?? 0) + (d.settled?.queued ?? 0);
    p.errorBytes = Math.max(p.errorBytes, d.lastErrors.length ? JSON.stringify(d.lastErrors).length : 0);
    const records = d.recent?.entries ?? [];
    const bytes = ENTRY_FIXED_BYTES + d.destinationId.length + this.writer.length + p.errorBytes + records.reduce((n, e) => n + e[0].length + e[1].length + 8, 0);
    if (p.counted + records.length > SPARSE_MAX || bytes > SHARED_ENTRY_BYTES) {
      p.own = true;
      return undefined;
    }
    if (p.group === undefined) {
      // One account's destinations to a document, named with its prefix: erasing an account deletes its shared documents as it does its own (firestore-account-data.ts).
      const { account } = splitDestinationId(d.destinationId);
      const partKey = `${d.bucketStart}~${account}`;
      const part = this.parts.get(partKey) ?? { bucketStart: d.bucketStart, part: 0, members: 0 };
      if (part.members >= SHARED_PART_SIZE) Object.assign(part, { part: part.part + 1, members: 0 });
      part.members++;
      this.parts.set(partKey, part);
      p.group = `${account}_~${this.writer}~${part.part}`;
    }
    return p.group;
  }

  /**
   * Destinations with attempts counted in the last three buckets (stored, or still in this
   * writer's memory): the only ones whose success rate can have moved since a check a
   * bucket ago. Costs a read per recent bucket document, nothing per idle destination.
   */
  async recentlyActive(): Promise<string[]> {
    const since = bucketStart(this.clock.now().getTime(), this.options.bucketMs) - 2 * this.options.bucketMs;
    const stored = await this.store.activeSince(since);
    const local = [...this.pending.values()].filter((d) => d.bucketStart >= since).map((d) => d.destinationId);
    return [...new Set([...stored, ...local])].sort();
  }

  /** The destination's last `windowMs` (default: the scaled hour), this writer's unflushed counts included. */
  async window(destinationId: string, windowMs = this.hourMs): Promise<RateSummary> {
    const now = this.clock.now().getTime();
    return summarize(await this.buckets(destinationId, now - windowMs), now, windowMs);
  }

  /**
   * Each destination's last `windowMs`, this writer's unflushed counts included, read together:
   * the shared documents of the longest window once for all of them (the suspension check).
   */
  async windows(asked: readonly { destinationId: string; windowMs: number }[]): Promise<Map<string, RateSummary>> {
    if (asked.length === 0) return new Map();
    const now = this.clock.now().getTime();
    const since = now - Math.max(...asked.map((a) => a.windowMs));
    return this.betweenFlushes(async () => {
      const stored = await this.store.windows([...new Set(asked.map((a) => a.destinationId))], since);
      return new Map(asked.map((a) => [a.destinationId, summarize([...(stored.get(a.destinationId) ?? []), ...this.local(a.destinationId, since)], now, a.windowMs)]));
    });
  }

  /** The destination's buckets that started at or after `since` (epoch ms), this writer's unflushed counts included. */
  buckets(destinationId: string, since: number): Promise<RateBucket[]> {
    return this.betweenFlushes(async () => [...(await this.store.window(destinationId, since)), ...this.local(destinationId, since)]);
  }

  /** This writer's unflushed counts of the destination since `since`, as buckets. */
  private local(destinationId: string, since: number): RateBucket[] {
    return [...this.pending.values()].filter((d) => d.destinationId === destinationId && d.bucketStart >= since).map((d) => ({ ...d, start: d.bucketStart }));
  }

  /**
   * Reads between flushes, never during one: the counts a flush is writing are in neither
   * `pending` nor the store until it commits, and a read then would miss them. `read` takes
   * the unflushed counts itself, before the next flush can start.
   */
  private betweenFlushes<T>(read: () => Promise<T>): Promise<T> {
    const done = this.flushing.then(read);
    this.flushing = done.then(
      () => undefined,
      () => undefined,
    );
    return done;
  }

  private merge(d: CounterDelta): void {
    const key = `${d.destinationId}~${d.bucketStart}`;
    const into = this.pending.get(key);
    if (!into) {
      this.pending.set(key, d);
      return;
    }
    into.attempts += d.attempts;
    into.successes += d.successes;
    into.failures += d.failures;
    into.lastErrors = [...into.lastErrors, ...d.lastErrors].sort((a, b) => b.at.localeCompare(a.at)).slice(0, RECENT_ERRORS);
    if (d.latency) into.latency = addHistograms(into.latency, d.latency);
    if (d.settled) into.settled = addSettled(into.settled, d.settled);
  }
}

/**
 * Buckets of a minute of scaled time, but never shorter than a flush interval: one flush then
 * writes one document per destination even when HERALD_TIME_SCALE makes minutes very short.
 */
export function counterBucketMs(timeScale: number, flushMs: number): number {
  return Math.max(flushMs, Math.round(60_000 / timeScale));
}
