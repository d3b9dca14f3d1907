import { bucketStart, RateBucket, RateSummary, summarize } from '../../domain/stats/success-rate';
import { foldRollup, heldFrom, RateRollup, rolledUp, RollupShape } from '../../domain/stats/rate-rollup';
import { forEachLimited } from '../support/for-each-limited';
import { CounterWriter } from './counter-writer';

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
/**
 * A destination earns a rollup once its rolling hour holds counts in this many buckets: a read
 * of its hour then costs about this many counter documents without one, where a rollup costs a
 * read and a write each run it is active (a write bills three reads). Fewer (one event an hour,
 * a few), and its counter documents answer every read for less.
 */
export const ROLLUP_MIN_BUCKETS = 5;
/**
 * A destination with at most this many counts since the last check run, and no rollup, is quiet:
 * judged on its hour's counter documents, read together, rather than caught up into a rollup.
 */
export const QUIET_MAX = 16;
/** Destinations per read of the quiet ones' hour: an `in` and an `array-contains-any` take 30 values at most. */
const QUIET_READ_CHUNK = 30;

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
 * A destination's counters as read: its windows and series, and the suspension check's fold into
 * rollups, over what CounterWriter (counter-writer.ts) keeps and flushes.
 */
export class DestinationCounters extends CounterWriter {
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
   * query for all destinations, whole documents), and which active destinations have a rollup
   * (a query per 30: a read per rollup found). A destination with one is folded: the complete
   * buckets added and the rollup written back (a write, refused if another run wrote it
   * meanwhile: a bucket is never folded twice); steady state, a busy destination costs its
   * rollup and the documents of two buckets; a busy one without is caught up. A quiet one
   * without (at most QUIET_MAX counts since the last run: a few events an hour) is judged on its counter documents of the hour, read together (two queries per 30
   * destinations, and the documents found), and earns a rollup only once its hour holds
   * ROLLUP_MIN_BUCKETS buckets with counts: before that, a read of its hour or its day costs as
   * few documents without one, and its traffic no rollup read or write. A rollup behind this
   * read (its destination idle for a while), or a first one, is caught up from its own counter
   * documents; the cursor (where the last complete run folded to) lets a run missed be caught
   * up by the next.
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
    const hourSince = now - this.hourMs;
    // Their hour before `since` (the rest is in `raw`). Counts this writer flushes meanwhile land at or after `since` (older ones move to the current bucket: CounterWriter.moveLate): never in this read and in `local` both.
    const quiet = await this.hoursBefore([...raw.keys()].filter((id) => !stored.has(id) && counted(raw.get(id)!) <= QUIET_MAX), hourSince, since);
    for (const [id, older] of quiet) quiet.set(id, [...older, ...raw.get(id)!]);
    const read = new Map<string, { rollup?: RateRollup; raw: RateBucket[] }>();
    const writes: { rollup: RateRollup; version: string | undefined }[] = [];
    /** Destinations caught up by a read after this writer's unflushed counts were taken: those may be in it, so are left out. */
    const caughtUp = new Set<string>();
    const catchUpUntil = performance.now() + CATCH_UP_MS;
    const folding = [...raw.keys()].filter((id) => !quiet.has(id) || earnsRollup(quiet.get(id)!, hourSince));
    await forEachLimited(folding, FOLD_CONCURRENCY, async (id) => {
      const had = stored.get(id);
      const from = had?.rollup.foldedThrough ?? heldFrom(foldTo, shape).coarse;
      // Beyond this run's share of catching up, judged on its counter documents (windows) and folded by a later run.
      if (from < since && (caughtUp.size >= CATCH_UP_PER_RUN || performance.now() > catchUpUntil)) return;
      if (from < since) caughtUp.add(id);
      quiet.delete(id);
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
          const windowSince = now - a.windowMs;
          const hour = quiet.get(a.destinationId);
          if (hour && a.windowMs <= this.hourMs) {
            summaries.set(a.destinationId, summarize([...hour.filter((b) => b.start >= windowSince), ...localOf(a.destinationId, windowSince)], now, a.windowMs));
            continue;
          }
          const got = read.get(a.destinationId);
          const part = rolledUp(got?.rollup, windowSince, false, shape);
          if (!got || part.rawSince < (got.rollup?.foldedThrough ?? Infinity)) rest.push(a);
          else summaries.set(a.destinationId, summarize([...part.buckets, ...got.raw.filter((b) => b.start >= part.rawSince), ...localOf(a.destinationId, windowSince)], now, a.windowMs));
        }
        // Not folded by this run (beyond its catching up), or a window longer than the hour read: their counter documents of the window, as before rollups.
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

  /**
   * Each destination's counter documents of [from, before), 30 destinations to a read: their
   * own by `in`, the shared ones that list any of them — a quiet destination's hour is mostly
   * none, a read for the 30 of them.
   */
  private async hoursBefore(ids: readonly string[], from: number, before: number): Promise<Map<string, RateBucket[]>> {
    const found = new Map<string, RateBucket[]>(ids.map((id) => [id, []]));
    if (from >= before) return found;
    const chunks = Array.from({ length: Math.ceil(ids.length / QUIET_READ_CHUNK) }, (_, i) => ids.slice(i * QUIET_READ_CHUNK, (i + 1) * QUIET_READ_CHUNK));
    await forEachLimited(chunks, FOLD_CONCURRENCY, async (chunk) => (await this.store.windows(chunk, from, before)).forEach((b, id) => found.set(id, b)));
    return found;
  }

  /** The destination's buckets that started at or after `since` (epoch ms), this writer's unflushed counts included. */
  buckets(destinationId: string, since: number): Promise<RateBucket[]> {
    return this.betweenFlushes(async () => [...(await this.store.window(destinationId, since)), ...this.local(destinationId, since)]);
  }
}

/** Attempts, DEAD and QUEUED deliveries in the buckets. */
function counted(buckets: readonly RateBucket[]): number {
  return buckets.reduce((n, b) => n + b.attempts + (b.settled?.dead ?? 0) + (b.settled?.queued ?? 0), 0);
}

/** Whether a destination's buckets of the hour (since `hourSince`) are enough to earn it a rollup. */
function earnsRollup(buckets: readonly RateBucket[], hourSince: number): boolean {
  return new Set(buckets.filter((b) => b.start >= hourSince && (b.attempts > 0 || b.settled)).map((b) => b.start)).size >= ROLLUP_MIN_BUCKETS;
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
