/**
 * The head of each destination's delivery log, kept beside its success-rate counters: every
 * writer keeps, per (destination, counter bucket), the newest RECENT_KEPT records it created
 * there, by publish time, and writes them with the bucket's counters (the same one write per
 * flush). The log's unfiltered first page is then read from the newest buckets and the
 * records fetched by id — a page, never a query over every delivery of the destination.
 *
 * Why the head is exact: a record's entry goes to the bucket in which it was created, and a
 * record is created after it was published. So once the buckets read reach back to time T,
 * every record not among them was published before T, and a head of `limit + 1` entries all
 * published at or after T is the log's first page and the proof of a next one. A record is
 * dropped from a bucket's list only when RECENT_KEPT newer ones are in it, which puts it
 * behind a whole page. What the head cannot know of — a record whose writer died before it
 * flushed (at most HERALD_RATE_FLUSH_MS of them) — is in every filtered view and by id.
 *
 * Each delivery is one entry, however many times it was recorded (a batch sent again after part
 * of it committed, a push redelivered while its first attempt runs, a copy alone beside a group
 * copy): entries of one delivery id are merged (domain/delivery/grouped-outcomes.ts mergedHeadEntryId),
 * in a list and across lists, so the first page shows it once and a list's RECENT_KEPT are
 * RECENT_KEPT deliveries.
 */
import { headEntryDelivery, mergedHeadEntryId } from './grouped-outcomes';

/** A record in the head: [publishedAt, id], so it sorts and stores small. */
export type RecentEntry = readonly [publishedAt: string, id: string];

/** Entries kept per (destination, bucket, writer): more than the largest first page the console asks for (50). */
export const RECENT_KEPT = 64;

/** Newest published first, then by id descending: the log's order (delivery-log.ts logOrder). */
export function newestFirst(a: RecentEntry, b: RecentEntry): number {
  if (a[0] !== b[0]) return a[0] < b[0] ? 1 : -1;
  // By delivery id, as the log orders: the groups an entry names are not part of it.
  return -compareDeliveries(a[1], b[1]);
}

/**
 * `list` (newest first, at most `cap`) with `entry` in its place; unchanged if it is too old or
 * there already. An entry of a delivery the list holds is merged into that one (the newer publish
 * time of the two, the groups of both).
 */
export function keepNewest(list: readonly RecentEntry[], entry: RecentEntry, cap = RECENT_KEPT): RecentEntry[] {
  const delivery = headEntryDelivery(entry[1]);
  // Per record of a batch of a hundred against a full list: a prefix test, not a slice per entry.
  const found = list.findIndex((e) => namesDelivery(e[1], delivery));
  if (found >= 0) {
    const merged = mergedEntry(list[found]!, entry);
    if (merged[0] === list[found]![0] && merged[1] === list[found]![1]) return [...list];
    return keepNewest([...list.slice(0, found), ...list.slice(found + 1)], merged, cap);
  }
  const at = list.findIndex((e) => newestFirst(entry, e) < 0);
  if (at < 0) return list.length < cap ? [...list, entry] : list.slice(0, cap);
  const next = list.slice(0, at);
  next.push(entry);
  for (let i = at; i < list.length && next.length < cap; i++) next.push(list[i]!);
  return next;
}

/** Whether a head entry (`<delivery id>~<groups>`) is `delivery`'s. */
function namesDelivery(text: string, delivery: string): boolean {
  return text.startsWith(delivery) && (text.length === delivery.length || text.charCodeAt(delivery.length) === TILDE);
}

const TILDE = '~'.charCodeAt(0);

/** The delivery ids two head entries name, compared as strings (code units), without cutting either out. */
function compareDeliveries(a: string, b: string): number {
  for (let i = 0; ; i++) {
    const x = i < a.length && a.charCodeAt(i) !== TILDE ? a.charCodeAt(i) : -1;
    const y = i < b.length && b.charCodeAt(i) !== TILDE ? b.charCodeAt(i) : -1;
    if (x !== y) return x < y ? -1 : 1;
    if (x === -1) return 0;
  }
}

/** Two entries of one delivery as one: the newer publish time (copies share theirs), every group named. */
function mergedEntry(a: RecentEntry, b: RecentEntry): RecentEntry {
  return [a[0] >= b[0] ? a[0] : b[0], mergedHeadEntryId(a[1], b[1]) ?? a[1]];
}

/** The lists of one counter bucket, from every writer. */
export interface RecentBucket {
  start: number;
  entries: readonly RecentEntry[];
  /**
   * A list of this bucket held RECENT_KEPT entries, so it may have dropped older ones: nothing
   * older than this entry (the newest such list's oldest) is proved by what was read.
   */
  floor?: RecentEntry;
}

/** One writer's list of a bucket, as stored: with its floor when it is full (RecentBucket.floor). */
export function recentList(start: number, entries: readonly RecentEntry[]): RecentBucket {
  if (entries.length < RECENT_KEPT) return { start, entries };
  return { start, entries, floor: entries.reduce((oldest, e) => (newestFirst(e, oldest) > 0 ? e : oldest)) };
}

/** The newer of two floors: the one that proves less. */
function newerFloor(a: RecentEntry | undefined, b: RecentEntry | undefined): RecentEntry | undefined {
  if (!a || !b) return a ?? b;
  return newestFirst(a, b) <= 0 ? a : b;
}

/**
 * Lists of counter documents (any writer's, any order) as buckets, each bucket's entries
 * together. `limited`: the read stopped at its limit, so the oldest bucket may be missing some
 * writers' lists — what it holds proves nothing, and it is left out.
 */
export function bucketsOf(lists: readonly RecentBucket[], limited = false): RecentBucket[] {
  const cut = limited && lists.length > 0 ? Math.min(...lists.map((l) => l.start)) : undefined;
  const byStart = new Map<number, RecentBucket>();
  for (const l of lists) {
    if (l.start === cut) continue;
    const had = byStart.get(l.start);
    const floor = newerFloor(had?.floor, l.floor);
    byStart.set(l.start, { start: l.start, entries: [...(had?.entries ?? []), ...l.entries], ...(floor ? { floor } : {}) });
  }
  return [...byStart.values()];
}

/**
 * The first `want` entries of the log, from buckets read newest first: complete once `want`
 * of them were published at or after the oldest bucket's start, none older than a full list's
 * oldest (undefined until then: read older buckets, or ask the store's index).
 */
export function headOf(buckets: readonly RecentBucket[], want: number): RecentEntry[] | undefined {
  if (buckets.length === 0) return undefined;
  const oldest = Math.min(...buckets.map((b) => b.start));
  const since = new Date(oldest).toISOString();
  // One entry per delivery: its entries in several lists (writers, buckets), each naming the copies it knew of, merged.
  const all = new Map<string, RecentEntry>();
  for (const b of buckets) {
    for (const e of b.entries) {
      const delivery = headEntryDelivery(e[1]);
      const seen = all.get(delivery);
      all.set(delivery, seen ? mergedEntry(seen, e) : e);
    }
  }
  const head = [...all.values()].sort(newestFirst).slice(0, want);
  const floor = buckets.reduce<RecentEntry | undefined>((f, b) => newerFloor(f, b.floor), undefined);
  return head.length === want && head.every((e) => e[0] >= since && (!floor || newestFirst(e, floor) <= 0)) ? head : undefined;
}
