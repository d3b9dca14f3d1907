import { LastError } from '../../domain/retry/delivery';

import { addHistograms, withSample } from '../../domain/stats/latency-histogram';
import { addSettled, bucketStart, RateBucket, RateOutcome, RateSummary, RECENT_ERRORS, summarize } from '../../domain/stats/success-rate';
import { Clock, Logger, CounterDelta, CounterStore, CountersNotWritten, UnsureCounterWrite } from '../../ports';
import { RecentEntry } from '../../domain/delivery/recent-log';
import { splitDestinationId } from '../../domain/ids';
import { randomBytes } from 'node:crypto';
import { foldRollup, heldFrom, RateRollup, rolledUp, RollupShape } from '../../domain/stats/rate-rollup';
import { forEachLimited } from '../support/for-each-limited';
import { errorMessage } from '../../domain/error-message';

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
  /** The console's day, divided by HERALD_TIME_SCALE; default 24 hours of `hourMs`. */
  dayMs?: number;
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

/** Points of the console's 24 h chart: a rollup keeps the day in buckets of one point each. */
export const DAY_POINTS = 96;
/** Destinations the suspension check folds at once (each a rollup write, some a read of their counters). */
const FOLD_CONCURRENCY = 32;
/**
 * Rollups a run catches up from their counter documents (none yet, or idle since the last
 * fold), at most, and for at most so long (real time: the function's timeout is): each reads
 * up to a day of its documents once. The rest are judged on their counter documents, as
 * before rollups, and caught up by the next runs, so that a first run over a busy deployment
 * still ends well within the function's 60 s.
 */
const CATCH_UP_PER_RUN = 1000;
const CATCH_UP_MS = 20_000;

/** What the suspension check read and folded in one run (DestinationCounters.foldRecent). */
export interface FoldRun {
  /** Destinations with counts since the last run, stored or in this writer's memory, sorted. */
  active: string[];
  /** Their windows (each its own length), from what the run read: a read more only for a window longer than the rollups hold. */
  windows(asked: readonly { destinationId: string; windowMs: number }[]): Promise<Map<string, RateSummary>>;
  /** Rollups written by this run. */
  folded: number;
}

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
  /** This writer's flushes so far: each is named by its number in the documents it writes (CounterFlushMark). */
  private flushes = 0;
  /** Commits of the last flush that failed, whether they landed not known yet (settleUnsure). */
  private unsure: UnsureCounterWrite[] = [];

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

  /** The day (the console's longest chart), in scaled time. */
  get dayMs(): number {
    return this.options.dayMs ?? this.hourMs * 24;
  }

  /** The rollups' layout: minutes for the rolling hour (and the chart's hour, a bucket longer), one chart point per coarse bucket for the day. */
  get rollupShape(): RollupShape {
    const { bucketMs } = this.options;
    return { bucketMs, minutesMs: this.hourMs + 2 * bucketMs, coarseMs: Math.max(bucketMs, Math.ceil(this.dayMs / DAY_POINTS / bucketMs) * bucketMs), dayMs: this.dayMs };
  }

  /**
   * How long after a bucket ended a flush may still write into it: counts flushed later go
   * into the current bucket instead (flush), so that a bucket the suspension check folded
   * (2 × lateMs after its end: a write issued in time has landed) takes no more counts.
   */
  get lateMs(): number {
    return Math.max(2 * this.options.flushMs, Math.round(this.options.bucketMs / 12));
  }

  /** The first bucket not yet complete at `now`: those before it take no more counts, and the check folds them. */
  foldTo(now: number): number {
    return bucketStart(now - 2 * this.lateMs, this.options.bucketMs);
  }

  /**
   * How long a check starting at `now` waits for the bucket just ended to be complete: at
   * the minute, a run that did not wait would fold a bucket less and read three buckets of
   * counters per busy destination instead of two.
   */
  foldWaitMs(now: number): number {
    return Math.max(0, 2 * this.lateMs - (now - bucketStart(now, this.options.bucketMs)));
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
    if ((this.pending.size === 0 && this.unsure.length === 0) || this.flushQueued || this.clock.now().getTime() - this.lastFlushAt < this.options.flushMs) return this.flushing;
    return this.flush();
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
   */
  flush(): Promise<void> {
    this.flushQueued = true;
    this.flushing = this.flushing.then(async () => {
      this.flushQueued = false;
      // No write until an earlier one's outcome is known: it would replace the mark the read looks for.
      if (!(await this.settleUnsure())) return;
      if (this.pending.size === 0) return;
      this.moveLate();
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
        await this.store.add(deltas, this.options.shard, { writer: this.writer, flush: ++this.flushes });
      } catch (e) {
        if (!(e instanceof CountersNotWritten)) {
          for (const d of deltas) this.merge(d);
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

  /** The destination's last `windowMs` (default: the scaled hour), this writer's unflushed counts included: its rollup and the counters after it. */
  async window(destinationId: string, windowMs = this.hourMs): Promise<RateSummary> {
    return (await this.windows([{ destinationId, windowMs }])).get(destinationId)!;
  }

  /**
   * Each destination's last `windowMs`, this writer's unflushed counts included, read together:
   * their rollups, and the counter documents after them (shared ones once for all), per window length.
   */
  async windows(asked: readonly { destinationId: string; windowMs: number }[]): Promise<Map<string, RateSummary>> {
    const now = this.clock.now().getTime();
    const summaries = new Map<string, RateSummary>();
    await Promise.all(
      [...groupBy(asked, (a) => a.windowMs)].map(async ([windowMs, group]) => {
        for (const [id, buckets] of await this.series(group.map((a) => a.destinationId), now - windowMs)) summaries.set(id, summarize(buckets, now, windowMs));
      }),
    );
    return summaries;
  }

  /**
   * Each destination's buckets that started at or after `since`, this writer's unflushed counts
   * included: its rollup's (`coarse`: the day's coarse buckets, for a chart of such points) and
   * the counter documents after it, one `in` query per 30 destinations; a destination with no
   * rollup that reaches `since`, from its counter documents alone.
   */
  async series(destinationIds: readonly string[], since: number, coarse = false): Promise<Map<string, RateBucket[]>> {
    const ids = [...new Set(destinationIds)];
    if (ids.length === 0) return new Map();
    const rollups = await this.store.rollups(ids);
    const parts = ids.map((id) => ({ id, ...rolledUp(rollups.get(id)?.rollup, since, coarse, this.rollupShape) }));
    return this.betweenFlushes(async () => {
      const raw = new Map<string, RateBucket[]>();
      await Promise.all([...groupBy(parts, (p) => p.rawSince)].map(async ([rawSince, group]) => (await this.store.windows(group.map((p) => p.id), rawSince)).forEach((b, id) => raw.set(id, b))));
      // Unflushed counts are in no document: all of them since `since`, whatever the rollup holds.
      return new Map(parts.map((p) => [p.id, [...p.buckets, ...(raw.get(p.id) ?? []), ...this.local(p.id, since)]]));
    });
  }

  /**
   * The suspension check's read, each run: every counter document since the last run (one
   * query for all destinations, whole documents), the active destinations' rollups (a read
   * each), the complete buckets folded into them and each written back (a write each, refused
   * if another run wrote it meanwhile: a bucket is never folded twice). Steady state, a busy
   * destination costs its rollup and the documents of two buckets. A rollup behind this read
   * (its destination idle for a while) or none yet is caught up from its own counter documents;
   * the cursor (where the last complete run folded to) lets a run missed be caught up by the next.
   */
  async foldRecent(): Promise<FoldRun> {
    const now = this.clock.now().getTime();
    const { bucketMs } = this.options;
    const shape = this.rollupShape;
    const foldTo = this.foldTo(now);
    const cursor = await this.store.foldCursor();
    const since = Math.max(Math.min(cursor ?? foldTo - bucketMs, foldTo - bucketMs), foldTo - this.hourMs);
    const [raw, local] = await this.betweenFlushes(async () => [await this.store.bucketsSince(since), [...this.pending.values()].filter((d) => d.bucketStart >= since - this.hourMs)] as const);
    const stored = await this.store.rollups([...raw.keys()]);
    const read = new Map<string, { rollup?: RateRollup; raw: RateBucket[] }>();
    const writes: { rollup: RateRollup; version: string | undefined }[] = [];
    /** Destinations caught up by a read after this writer's unflushed counts were taken: those may be in it, so are left out. */
    const caughtUp = new Set<string>();
    const catchUpUntil = performance.now() + CATCH_UP_MS;
    await forEachLimited([...raw.keys()], FOLD_CONCURRENCY, async (id) => {
      const had = stored.get(id);
      const from = had?.rollup.foldedThrough ?? heldFrom(foldTo, shape).coarse;
      // Beyond this run's share of catching up, judged on its counter documents (windows) and folded by a later run.
      if (from < since && (caughtUp.size >= CATCH_UP_PER_RUN || performance.now() > catchUpUntil)) return;
      if (from < since) caughtUp.add(id);
      const buckets = from < since ? await this.store.window(id, from) : raw.get(id)!;
      const next = foldRollup(had?.rollup, id, buckets, from, foldTo, shape);
      if (next) writes.push({ rollup: next, version: had?.version });
      const rollup = next ?? had?.rollup;
      read.set(id, { ...(rollup ? { rollup } : {}), raw: buckets.filter((b) => b.start >= (rollup?.foldedThrough ?? from)) });
    });
    let folded = 0;
    try {
      // Refused ones: another run folded them first, from the same documents; this run judges on its own folds all the same.
      folded = (await this.store.putRollups(writes)).filter(Boolean).length;
    } catch (e) {
      // A rollup left behind costs reads, never numbers: the next run that sees its destination active catches it up.
      this.log.warn('counter rollups not written; later runs fold them', { rollups: writes.length, error: (e as Error).message });
    }
    // The next run reads from here: a destination active since is folded and judged by it, whatever this run wrote.
    if (cursor === undefined || foldTo > cursor) await this.store.setFoldCursor(foldTo);
    const localOf = (id: string, from: number) => (caughtUp.has(id) ? [] : local.filter((d) => d.destinationId === id && d.bucketStart >= from).map((d) => ({ ...d, start: d.bucketStart })));
    return {
      active: [...new Set([...raw.keys(), ...local.filter((d) => d.bucketStart >= since).map((d) => d.destinationId)])].sort(),
      folded,
      windows: async (asked) => {
        const summaries = new Map<string, RateSummary>();
        const rest: { destinationId: string; windowMs: number }[] = [];
        for (const a of asked) {
          const got = read.get(a.destinationId);
          const windowSince = now - a.windowMs;
          const part = rolledUp(got?.rollup, windowSince, false, shape);
          if (!got || part.rawSince < (got.rollup?.foldedThrough ?? Infinity)) rest.push(a);
          else summaries.set(a.destinationId, summarize([...part.buckets, ...got.raw.filter((b) => b.start >= part.rawSince), ...localOf(a.destinationId, windowSince)], now, a.windowMs));
        }
        // Not folded by this run (beyond its catching up): their counter documents of the window, as before rollups.
        for (const [windowMs, group] of groupBy(rest, (a) => a.windowMs)) {
          const since = now - windowMs;
          const ids = group.map((a) => a.destinationId);
          const counted = await this.betweenFlushes(async () => new Map([...(await this.store.windows(ids, since))].map(([id, b]) => [id, [...b, ...this.local(id, since)]])));
          for (const [id, buckets] of counted) summaries.set(id, summarize(buckets, now, windowMs));
        }
        return summaries;
      },
    };
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

/** `items` by `key`, each group in the order met. */
function groupBy<T, K>(items: readonly T[], key: (item: T) => K): Map<K, T[]> {
  const groups = new Map<K, T[]>();
  for (const item of items) {
    const k = key(item);
    const group = groups.get(k);
    if (group) group.push(item);
    else groups.set(k, [item]);
  }
  return groups;
}

/**
 * Buckets of a minute of scaled time, but never shorter than a flush interval: one flush then
 * writes one document per destination even when HERALD_TIME_SCALE makes minutes very short.
 */
export function counterBucketMs(timeScale: number, flushMs: number): number {
  return Math.max(flushMs, Math.round(60_000 / timeScale));
}
