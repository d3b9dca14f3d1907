import { LastError } from '../../domain/retry/delivery';
import { addHistograms, withSample } from '../../domain/stats/latency-histogram';
import { addSettled, bucketStart, RateBucket, RateOutcome, RECENT_ERRORS, SettledCounts } from '../../domain/stats/success-rate';
import { Clock, Logger } from '../../ports/clock';
import { CounterDelta, CounterStore, CountersNotWritten, UnsureCounterWrite, UsageDelta } from '../../ports/counters';
import { addUsage, emptyUsage, UsageCounts, usageDay } from '../../domain/usage/usage';
import { RecentEntry } from '../../domain/delivery/recent-log';
import { splitDestinationId } from '../../domain/ids';
import { randomBytes } from 'node:crypto';
import { errorMessage } from '../../domain/error-message';
import type { DeliveryStatus } from '../../domain/delivery-statuses';

/** What rides in a destination's counter document besides its counts: the delivery log's head (DeliveryLogHead). */
export interface CarriedLists {
  listOf(destinationId: string, bucketStart: number): readonly RecentEntry[] | undefined;
}

/**
 * A destination is sparse in a bucket while this writer has counted at most this many attempts,
 * settled deliveries and created records in it: its counts then ride in a document shared with
 * other sparse destinations instead of taking a write of their own each flush. In a minute's
 * bucket, a destination at up to about 0.8 events a second rides (one a filter thins out, a quiet
 * one): at 16, those of 0.5 a second went to their own documents, a write each every other flush.
 * Below RECENT_KEPT, so that a list that fills up is always in a document of its own.
 */
export const SPARSE_MAX = 48;
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
  /** The console's day, divided by HERALD_TIME_SCALE; default 24 hours of `hourMs`. */
  dayMs?: number;
  /** At most one flush per this long (HERALD_RATE_FLUSH_MS): each counter document takes at most one write per flush. */
  flushMs: number;
  /** This writer's shard: writers on different shards never write the same document. */
  shard: number;
}

/**
 * Each destination's counters (attempts, successes and failures for its success rate, latency
 * bins, DEAD and QUEUED counts, its newest errors), kept on the hot path without a write per attempt: attempts are summed in
 * memory per (destination, bucket) and flushed as one increment per document at most every
 * `flushMs`, on this writer's shard. At 100 events/s to one destination that is one write a
 * second to one document, whatever the traffic. Counts not yet flushed when a process dies
 * are lost; only the success rate (never an event) is affected.
 */
export class CounterWriter {
  protected pending = new Map<string, CounterDelta>();
  /**
   * Keys of `pending` that take a write at the next flush. The others hold filter counts alone
   * (filterCounted): they wait for the destination's next count, or for their bucket's end
   * (`heldUntil`, the first such end), so that a filter dropping events never adds a write per flush.
   */
  private writable = new Set<string>();
  private heldUntil = Infinity;
  /** Usage per (account, UTC day) not yet flushed (domain/usage/usage.ts): written by the flushes, in the same commits as the counters. */
  private usagePending = new Map<string, UsageDelta>();
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
  /** This writer's flushes so far: each is named by its number in the documents it writes (CounterFlushMark). */
  private flushes = 0;
  /** Commits of the last flush that failed, whether they landed not known yet (settleUnsure). */
  private unsure: UnsureCounterWrite[] = [];

  constructor(
    protected readonly store: CounterStore,
    protected readonly clock: Clock,
    protected readonly log: Logger,
    readonly options: DestinationCountersOptions,
  ) {}

  /** `lists` ride in the counter documents from now on (DeliveryLogHead). */
  carry(lists: CarriedLists): void {
    this.carried = lists;
  }

  /**
   * How long after a bucket ended a flush may still write into it: counts flushed later go
   * into the current bucket instead (flush), so that a bucket the suspension check folded
   * (2 × lateMs after its end: a write issued in time has landed) takes no more counts.
   */
  get lateMs(): number {
    return Math.max(2 * this.options.flushMs, Math.round(this.options.bucketMs / 12));
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

  /**
   * Usage of `account` in the UTC day of `at`, counted where the thing counted has happened for
   * good (docs/usage.md): added to the next flush, no write of its own.
   */
  meter(account: string, at: Date, counts: Partial<UsageCounts>): void {
    this.mergeUsage({ account, day: usageDay(at.getTime()), counts: addUsage(emptyUsage(), counts) });
  }

  /**
   * A delivery's record was written `status` at `at` (after its write, never for a redelivery
   * settled against it): DEAD and QUEUED are counted in the bucket, for the console's charts;
   * DELIVERED in its account's usage. Other statuses count nothing.
   */
  settled(destinationId: string, status: DeliveryStatus, at: Date): void {
    if (status === 'DELIVERED') return this.meter(splitDestinationId(destinationId).account, at, { delivered: 1 });
    if (status !== 'DEAD' && status !== 'QUEUED') return;
    const d = this.deltaAt(destinationId, at);
    d.settled = addSettled(d.settled, status === 'DEAD' ? { dead: 1 } : { queued: 1 });
  }

  /**
   * What a destination's filter did with the events routed at `at` (app/destinations/destination-filters.ts):
   * summed here and written with the flush, never a write per event.
   */
  filterCounted(destinationId: string, counts: Pick<SettledCounts, 'filterPassed' | 'filtered' | 'filterErrors'>, at: Date): void {
    const d = this.deltaAt(destinationId, at, false);
    d.settled = addSettled(d.settled, counts);
    this.heldUntil = Math.min(this.heldUntil, d.bucketStart + this.options.bucketMs);
  }

  /**
   * The start of the destination's bucket holding `at`, whose next write is sure to come: what is
   * carried for it (a log-head list) goes out with that write even if nothing is counted.
   */
  bucketOf(destinationId: string, at: Date): number {
    return this.deltaAt(destinationId, at).bucketStart;
  }

  /** The unflushed counts of the destination's bucket holding `at`, created empty when there are none; `write`: they take a write at the next flush. */
  private deltaAt(destinationId: string, at: Date, write = true): CounterDelta {
    const start = bucketStart(at.getTime(), this.options.bucketMs);
    const key = `${destinationId}~${start}`;
    if (write) this.writable.add(key);
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
    const now = this.clock.now().getTime();
    if ((this.writable.size === 0 && this.heldUntil > now && this.usagePending.size === 0 && this.unsure.length === 0) || this.flushQueued || now - this.lastFlushAt < this.options.flushMs) return this.flushing;
    return this.flush(false);
  }

  /**
   * flushIfDue for a caller that must not wait for it (a push's answer): started, not awaited.
   * A failed write is logged by flush and its counts kept; anything else that fails is logged here.
   */
  flushInBackground(): void {
    this.flushIfDue().catch((e: unknown) => this.log.warn('success-rate counters not flushed', { error: errorMessage(e) }));
  }

  /**
   * Writes every unflushed count now (one write per document); a failed write keeps them for the
   * next flush. On shutdown. A write whose reply was lost has landed: its counts are put back only
   * once a read says it did not (settleUnsure), since increments added twice count twice.
   * `everything` false (flushIfDue): filter counts alone of a bucket not yet ended stay held.
   */
  flush(everything = true): Promise<void> {
    this.flushQueued = true;
    this.flushing = this.flushing.then(async () => {
      this.flushQueued = false;
      // No write until an earlier one's outcome is known: it would replace the mark the read looks for.
      if (!(await this.settleUnsure())) return;
      const now = this.clock.now().getTime();
      const held = everything ? [] : [...this.pending].filter(([key, d]) => !this.writable.has(key) && d.bucketStart + this.options.bucketMs > now);
      if (this.pending.size === held.length && this.usagePending.size === 0) return;
      for (const [key] of held) this.pending.delete(key);
      this.moveLate();
      const deltas = [...this.pending.values()].map((d) => {
        const list = this.carried?.listOf(d.destinationId, d.bucketStart);
        const { group: _previous, ...counts } = d;
        const delta: CounterDelta = list ? { ...counts, recent: { writer: this.writer, entries: [...list] } } : counts;
        const group = this.place(delta);
        return group === undefined ? delta : { ...delta, group };
      });
      const usage = [...this.usagePending.values()];
      this.pending = new Map(held);
      this.writable = new Set();
      this.heldUntil = Math.min(Infinity, ...held.map(([, d]) => d.bucketStart + this.options.bucketMs));
      this.usagePending = new Map();
      this.lastFlushAt = this.clock.now().getTime();
      try {
        await this.store.add(deltas, this.options.shard, { writer: this.writer, flush: ++this.flushes }, usage);
      } catch (e) {
        if (!(e instanceof CountersNotWritten)) {
          for (const d of deltas) this.merge(d);
          for (const u of usage) this.mergeUsage(u);
          this.log.warn('success-rate counters not written; kept for the next flush', { error: (e as Error).message, destinations: [...new Set(deltas.map((d) => d.destinationId))] });
          return;
        }
        this.unsure = e.unsure;
        await this.settleUnsure(e.message);
      }
    });
    return this.flushing;
  }

  /**
   * Settles the commits of the last flush that failed: a read of one document of each says
   * whether it landed (its flush's mark is there); those that did not are put back for the next
   * flush. False when the read fails too: they stay unsure, and nothing is written until a later
   * flush has read them (their counts are then missing from this writer's reads meanwhile, never
   * counted twice).
   */
  private async settleUnsure(writeError?: string): Promise<boolean> {
    if (this.unsure.length === 0) return true;
    const unsure = this.unsure;
    let landed: boolean[];
    try {
      landed = await this.store.landed(unsure.map((u) => u.probe));
    } catch (e) {
      this.log.warn('success-rate counter writes failed and whether they landed is unknown; read again before the next write', { error: writeError, readError: (e as Error).message, commits: unsure.length });
      return false;
    }
    this.unsure = [];
    const lost = unsure.filter((_, i) => !landed[i]);
    for (const u of lost) for (const d of u.deltas) this.merge(d);
    for (const u of lost) for (const d of u.usage) this.mergeUsage(d);
    const destinations = (us: UnsureCounterWrite[]) => [...new Set(us.flatMap((u) => u.deltas.map((d) => d.destinationId)))];
    if (lost.length) this.log.warn('success-rate counters not written; kept for the next flush', { error: writeError, destinations: destinations(lost) });
    if (lost.length < unsure.length) this.log.info('success-rate counter writes failed but had landed (their replies were lost): not written again', { error: writeError, destinations: destinations(unsure.filter((_, i) => landed[i])) });
    return true;
  }

  /**
   * Counts of a bucket that ended more than `lateMs` ago (a flush that failed and is retried,
   * a process stalled) go into the current bucket: the check may have folded theirs, and a
   * count written there would be in no read after (domain/stats/rate-rollup.ts). The success rate
   * and the charts then show them up to a few minutes late, never lose them. A log-head list
   * carried for the old bucket still goes out with an empty delta of it.
   */
  private moveLate(): void {
    const now = this.clock.now().getTime();
    const current = bucketStart(now, this.options.bucketMs);
    for (const [key, d] of [...this.pending]) {
      if (d.bucketStart + this.options.bucketMs + this.lateMs >= now) continue;
      this.pending.delete(key);
      this.merge({ ...d, bucketStart: current });
      if (this.carried?.listOf(d.destinationId, d.bucketStart)) this.pending.set(key, { destinationId: d.destinationId, bucketStart: d.bucketStart, attempts: 0, successes: 0, failures: 0, lastErrors: [] });
    }
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
      // One account's destinations to a document, named with its prefix: erasing an account deletes its shared documents as it does its own (adapters/firestore/account-data.ts).
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
   * Each account's usage per day from `from` to `to` (`YYYY-MM-DD`), `account`'s only unless
   * undefined: the store's, and this writer's not yet flushed, read between flushes (a flush's
   * counts are in neither until it commits).
   */
  usage(account: string | undefined, from: string, to: string): Promise<Map<string, Map<string, UsageCounts>>> {
    return this.betweenFlushes(async () => {
      const local = [...this.usagePending.values()].filter((u) => (account === undefined || u.account === account) && u.day >= from && u.day <= to).map((u) => ({ ...u, counts: addUsage(emptyUsage(), u.counts) }));
      const stored = await this.store.usage(account, from, to);
      for (const u of local) {
        const days = stored.get(u.account) ?? new Map<string, UsageCounts>();
        days.set(u.day, addUsage(days.get(u.day) ?? emptyUsage(), u.counts));
        stored.set(u.account, days);
      }
      return stored;
    });
  }

  /** This writer's unflushed counts of the destination since `since`, as buckets. */
  protected local(destinationId: string, since: number): RateBucket[] {
    return [...this.pending.values()].filter((d) => d.destinationId === destinationId && d.bucketStart >= since).map((d) => ({ ...d, start: d.bucketStart }));
  }

  /**
   * Reads between flushes, never during one: the counts a flush is writing are in neither
   * `pending` nor the store until it commits, and a read then would miss them. `read` takes
   * the unflushed counts itself, before the next flush can start.
   */
  protected betweenFlushes<T>(read: () => Promise<T>): Promise<T> {
    const done = this.flushing.then(read);
    this.flushing = done.then(
      () => undefined,
      () => undefined,
    );
    return done;
  }

  private mergeUsage(u: UsageDelta): void {
    const key = `${u.account}~${u.day}`;
    const into = this.usagePending.get(key);
    if (into) addUsage(into.counts, u.counts);
    else this.usagePending.set(key, { ...u, counts: addUsage(emptyUsage(), u.counts) });
  }

  private merge(d: CounterDelta): void {
    const key = `${d.destinationId}~${d.bucketStart}`;
    this.writable.add(key);
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
