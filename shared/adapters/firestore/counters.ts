import { DocumentReference, DocumentSnapshot, FieldPath, FieldValue, Query, Timestamp } from '@google-cloud/firestore';
import { LastError } from '../../domain/retry/delivery';
import { addHistograms, LatencyHistogram } from '../../domain/stats/latency-histogram';
import { addSettled, RateBucket, RECENT_ERRORS, SETTLED_KEYS, settledOf } from '../../domain/stats/success-rate';
import { bucketsOf, RecentBucket, RecentEntry, recentList } from '../../domain/delivery/recent-log';
import { CounterDelta, CounterFlushMark, CounterStore, CountersNotWritten, UnsureCounterWrite, UsageDelta } from '../../ports/counters';
import { UsageCounts } from '../../domain/usage/usage';
import { readUsage, usageWrite } from './usage/usage-docs';
import { FirestoreStore } from './stores';
import { COLLECTIONS, FIRESTORE_QUERIES, FIRESTORE_TTL_FIELDS } from '../../firestore-schema';
import { RateRollup } from '../../domain/stats/rate-rollup';
import { GRPC, grpcCode } from '../../domain/retry/grpc-status';

/**
 * How long a counter document is worth keeping: Firestore's TTL policy on `expireAt`
 * (FIRESTORE_TTL_FIELDS) deletes it after. 25 h: the console charts a day of them
 * (GET /admin/stats?window=24h); suspension reads only the last hour.
 */
const KEEP_MS = 25 * 60 * 60 * 1000;

/** Firestore takes at most 500 writes in one commit. */
const BATCH = 500;
/** Values an `in` or `array-contains-any` filter takes at most. */
const DISJUNCTION = 30;

/** One destination's counts in one bucket, as stored: the fields of its own document, or its entry in a shared one. */
interface StoredCounts {
  attempts: number;
  successes: number;
  failures: number;
  lastErrors?: LastError[];
  /** Deliveries that became DEAD, or QUEUED, in the bucket. */
  dead?: number;
  queued?: number;
  filterPassed?: number;
  filtered?: number;
  filterErrors?: number;
  /** Each writer's newest records created in the bucket, `<publishedAt> <delivery id>` (domain/delivery/recent-log.ts). */
  recent?: Record<string, string[]>;
  /** Attempt latencies: a map of bin (`b00` … `b24`, domain/stats/latency-histogram.ts) to count, only the bins ever hit. */
  latency?: LatencyHistogram;
}

/** `rates/<destination>~<bucket>~<shard>`: one destination's counts from the writers on one shard. */
interface StoredRate extends StoredCounts {
  destinationId: string;
  bucketStart: number;
  shard: number;
  expireAt: Date;
}

/**
 * `rates-shared/<group>~<bucket>`: one writer's counts of many sparse destinations of one
 * account in one bucket (the group, `<account>_~<writer>~<part>`, is the writer's choice:
 * app/destinations/counter-writer.ts), each under `d.<destination>`, and the destinations listed for
 * array-contains queries.
 */
interface StoredShared {
  bucketStart: number;
  destinations: string[];
  d: Record<string, StoredCounts>;
  expireAt: Date;
}

type Row = Omit<StoredRate, 'expireAt' | 'shard'>;

/** `rates-rollup/<destination>`: its counters folded (domain/stats/rate-rollup.ts), each bucket under its start. */
interface StoredRollup {
  destinationId: string;
  foldedThrough: number;
  m: Record<string, StoredCounts>;
  c: Record<string, StoredCounts>;
  expireAt: Date;
}

/** Each writer's last flush (CounterFlushMark), in every counter document it writes. */
export const MARK_FIELD = 'flushes';

/** The suspension check's cursor, beside the rollups: `~` is in no destination id. */
const CURSOR_DOC = '~check';
/** A refused precondition: an answer, not a fault. */
const refused = (code: number | undefined) => code === GRPC.ALREADY_EXISTS || code === GRPC.FAILED_PRECONDITION;

/**
 * Success-rate counters in Firestore, added to with server-side increments, so a flush is
 * writes and never a read: a busy destination's in a document per (destination, bucket,
 * shard); sparse destinations' (the writer decides which: `CounterDelta.group`) many to a shared
 * document, so that 500 destinations with one event each cost a few writes a flush, not 500.
 * Every read takes both kinds and sums them per bucket.
 */
export class FirestoreCounterStore extends FirestoreStore implements CounterStore {
  private get col() {
    return this.db.collection(COLLECTIONS.rates);
  }

  private get shared() {
    return this.db.collection(COLLECTIONS.sharedRates);
  }

  async add(deltas: readonly CounterDelta[], shard: number, mark?: CounterFlushMark, usage: readonly UsageDelta[] = []): Promise<void> {
    if (deltas.length === 0 && usage.length === 0) return;
    const writes: { ref: DocumentReference; doc: Record<string, unknown>; deltas: CounterDelta[]; usage?: UsageDelta }[] = [];
    const groups = new Map<string, CounterDelta[]>();
    // The flush's mark, under its writer's key: writers that share a document keep theirs apart.
    const marked = mark ? { [MARK_FIELD]: { [mark.writer]: mark.flush } } : {};
    for (const d of deltas) {
      if (d.group === undefined) {
        const doc = { destinationId: d.destinationId, bucketStart: d.bucketStart, shard, ...countFields(d), ...marked, [FIRESTORE_TTL_FIELDS.rates.field]: expiry(d.bucketStart) };
        writes.push({ ref: this.col.doc(`${d.destinationId}~${d.bucketStart}~${shard}`), doc, deltas: [d] });
      } else {
        const key = `${d.group}~${d.bucketStart}`;
        groups.set(key, [...(groups.get(key) ?? []), d]);
      }
    }
    for (const [key, group] of groups) {
      // A merged set takes a map's keys as they are (never as dotted paths): the destination ids are keys of `d`.
      const doc = {
        bucketStart: group[0]!.bucketStart,
        destinations: FieldValue.arrayUnion(...group.map((d) => d.destinationId)),
        d: Object.fromEntries(group.map((d) => [d.destinationId, countFields(d)])),
        ...marked,
        [FIRESTORE_TTL_FIELDS.sharedRates.field]: expiry(group[0]!.bucketStart),
      };
      writes.push({ ref: this.shared.doc(key), doc, deltas: group });
    }
    // Usage rides in the same commits: a document per (account, day) and writer, under the flush's mark.
    for (const u of usage) writes.push({ ...usageWrite(this.db, u, mark?.writer ?? `shard${shard}`, marked), deltas: [], usage: u });
    const commits = Array.from({ length: Math.ceil(writes.length / BATCH) }, (_, b) => writes.slice(b * BATCH, (b + 1) * BATCH));
    const failed = await Promise.all(
      commits.map(async (part) => {
        const batch = this.db.batch();
        for (const w of part) batch.set(w.ref, w.doc, { merge: true });
        try {
          await batch.commit();
        } catch (e) {
          return { part, error: e };
        }
        // One document written, one write: increments, the array union and the mark ride in the same write.
        this.ops.writes += part.length;
        return undefined;
      }),
    );
    const unsure = failed.filter((f) => f !== undefined);
    if (unsure.length === 0) return;
    if (!mark) throw unsure[0]!.error;
    // A commit is all or nothing: one of its documents tells whether the whole of it landed.
    throw new CountersNotWritten(
      unsure.map(({ part }) => ({ deltas: part.flatMap((w) => w.deltas), usage: part.flatMap((w) => (w.usage ? [w.usage] : [])), probe: { doc: part[0]!.ref.path, mark } })),
      unsure[0]!.error,
    );
  }

  async landed(probes: readonly UnsureCounterWrite['probe'][]): Promise<boolean[]> {
    if (probes.length === 0) return [];
    const snaps = await this.db.getAll(...probes.map((p) => this.db.doc(p.doc)));
    this.ops.reads += probes.length;
    return probes.map((p, i) => snaps[i]!.exists && snaps[i]!.get(new FieldPath(MARK_FIELD, p.mark.writer)) === p.mark.flush);
  }

  async window(destinationId: string, since: number): Promise<RateBucket[]> {
    const q = FIRESTORE_QUERIES.rateWindow;
    const s = FIRESTORE_QUERIES.sharedRateWindow;
    const [own, shared] = await Promise.all([
      this.read(this.col.where(q.equality[0], '==', destinationId).where(q.orderBy, '>=', since).orderBy(q.orderBy)),
      this.read(this.shared.where(s.contains, 'array-contains', destinationId).where(s.orderBy, '>=', since).orderBy(s.orderBy).select(s.orderBy, new FieldPath('d', destinationId))),
    ]);
    return mergeShards([...own.map((d) => d.data() as StoredRate), ...shared.flatMap((d) => sharedRow(d, destinationId))]);
  }

  /**
   * The destinations' own documents by `in` (30 to a query), and the shared ones: with 30
   * destinations or fewer those that list any of them (one query), with more every shared
   * document of the window, once — fewer than a query per destination's.
   */
  async windows(destinationIds: readonly string[], since: number, before?: number): Promise<Map<string, RateBucket[]>> {
    const ids = [...new Set(destinationIds)];
    const rows = new Map<string, Row[]>(ids.map((id) => [id, []]));
    if (ids.length === 0) return new Map();
    const q = FIRESTORE_QUERIES.rateWindow;
    const s = FIRESTORE_QUERIES.sharedRateWindow;
    const chunks = Array.from({ length: Math.ceil(ids.length / DISJUNCTION) }, (_, i) => ids.slice(i * DISJUNCTION, (i + 1) * DISJUNCTION));
    const sharedQuery = ids.length <= DISJUNCTION ? this.shared.where(s.contains, 'array-contains-any', ids).where(s.orderBy, '>=', since) : this.shared.where(FIRESTORE_QUERIES.sharedRatesSince.orderBy, '>=', since);
    // The same field's range, closed: the same indexes serve it.
    const upTo = (query: Query) => (before === undefined ? query : query.where(q.orderBy, '<', before));
    const [own, shared] = await Promise.all([Promise.all(chunks.map((chunk) => this.read(upTo(this.col.where(q.equality[0], 'in', chunk).where(q.orderBy, '>=', since))))), this.read(upTo(sharedQuery))]);
    for (const doc of own.flat()) {
      const r = doc.data() as StoredRate;
      rows.get(r.destinationId)?.push(r);
    }
    for (const doc of shared) for (const id of (doc.get('destinations') as StoredShared['destinations'] | undefined) ?? []) rows.get(id)?.push(...sharedRow(doc, id));
    return new Map([...rows].map(([id, r]) => [id, mergeShards(r)]));
  }

  async recentLog(destinationId: string, since: number, maxDocs: number): Promise<RecentBucket[]> {
    const q = FIRESTORE_QUERIES.logHead;
    const s = FIRESTORE_QUERIES.sharedLogHead;
    const [own, shared] = await Promise.all([
      this.read(this.col.where(q.equality[0], '==', destinationId).where(q.orderBy, '>=', since).orderBy(q.orderBy, 'desc').limit(maxDocs).select(q.orderBy, 'recent')),
      this.read(
        this.shared
          .where(s.contains, 'array-contains', destinationId)
          .where(s.orderBy, '>=', since)
          .orderBy(s.orderBy, 'desc')
          .limit(maxDocs)
          .select(s.orderBy, new FieldPath('d', destinationId, 'recent')),
      ),
    ]);
    const lists = (docs: DocumentSnapshot[], recent: (d: DocumentSnapshot) => unknown) =>
      docs.flatMap((d) => Object.values((recent(d) as Record<string, string[]> | undefined) ?? {}).map((l) => recentList(d.get('bucketStart') as number, l.flatMap(decodeEntry))));
    return completeBuckets([
      { lists: lists(own, (d) => d.get('recent')), limited: own.length === maxDocs },
      { lists: lists(shared, (d) => d.get(new FieldPath('d', destinationId, 'recent'))), limited: shared.length === maxDocs },
    ]);
  }

  async bucketsSince(since: number): Promise<Map<string, RateBucket[]>> {
    // Single-field ranges (Firestore's automatic indexes serve them), whole documents: the check folds what it reads.
    const [own, shared] = await Promise.all([
      this.read(this.col.where(FIRESTORE_QUERIES.rateWindow.orderBy, '>=', since)),
      this.read(this.shared.where(FIRESTORE_QUERIES.sharedRatesSince.orderBy, '>=', since)),
    ]);
    const rows = new Map<string, Row[]>();
    const push = (r: Row) => rows.set(r.destinationId, [...(rows.get(r.destinationId) ?? []), r]);
    for (const doc of own) push(doc.data() as StoredRate);
    for (const doc of shared) for (const id of (doc.get('destinations') as StoredShared['destinations'] | undefined) ?? []) sharedRow(doc, id).forEach(push);
    return new Map([...rows].map(([id, r]) => [id, mergeShards(r)]));
  }

  async usage(account: string | undefined, from: string, to: string): Promise<Map<string, Map<string, UsageCounts>>> {
    const { usage, reads } = await readUsage(this.db, account, from, to);
    this.ops.reads += reads;
    return usage;
  }

  private get rollupCol() {
    return this.db.collection(COLLECTIONS.rateRollups);
  }

  async rollups(destinationIds: readonly string[]): Promise<Map<string, { rollup: RateRollup; version: string }>> {
    const ids = [...new Set(destinationIds)];
    const found = new Map<string, { rollup: RateRollup; version: string }>();
    // A query by document id, 30 to a query, not a getAll: a getAll bills a read per document
    // asked for, found or not; a query, one per document found (one when none is).
    await Promise.all(
      Array.from({ length: Math.ceil(ids.length / DISJUNCTION) }, async (_, i) => {
        const refs = ids.slice(i * DISJUNCTION, (i + 1) * DISJUNCTION).map((id) => this.rollupCol.doc(id));
        for (const snap of await this.read(this.rollupCol.where(FieldPath.documentId(), 'in', refs))) {
          if (snap.exists && snap.updateTime) found.set(snap.id, { rollup: rollupOf(snap.data() as StoredRollup), version: `${snap.updateTime.seconds}.${snap.updateTime.nanoseconds}` });
        }
      }),
    );
    return found;
  }

  async putRollups(writes: readonly { rollup: RateRollup; version: string | undefined }[]): Promise<boolean[]> {
    if (writes.length === 0) return [];
    // Many writes to a request, each with its own precondition and its own outcome (a batch would be all or nothing).
    const bulk = this.db.bulkWriter();
    // A refused precondition is an answer, not a fault: never retried.
    bulk.onWriteError((e) => !refused(e.code) && e.failedAttempts < 3);
    const results = writes.map(({ rollup, version }) => {
      const ref = this.rollupCol.doc(rollup.destinationId);
      const doc: StoredRollup = {
        destinationId: rollup.destinationId,
        foldedThrough: rollup.foldedThrough,
        m: Object.fromEntries(rollup.minutes.map((b) => [String(b.start), storedCounts(b)])),
        c: Object.fromEntries(rollup.coarse.map((b) => [String(b.start), storedCounts(b)])),
        [FIRESTORE_TTL_FIELDS.rateRollups.field]: expiry(rollup.foldedThrough),
      };
      const [seconds, nanos] = (version ?? '0.0').split('.').map(Number);
      // An update names every field: the maps are replaced whole, never merged into.
      const written = version === undefined ? bulk.create(ref, doc) : bulk.update(ref, { ...doc }, { lastUpdateTime: new Timestamp(seconds!, nanos!) });
      return written.then(
        () => {
          this.ops.writes++;
          return true;
        },
        (e: unknown) => {
          if (refused(grpcCode(e))) return false;
          throw e;
        },
      );
    });
    // Closing sends what is queued (a writer sends a part-filled batch only then) and waits for every answer.
    await bulk.close();
    const settled = await Promise.allSettled(results);
    const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
    return settled.map((r) => (r as PromiseFulfilledResult<boolean>).value);
  }

  async foldCursor(): Promise<number | undefined> {
    const snap = await this.rollupCol.doc(CURSOR_DOC).get();
    this.ops.reads++;
    return snap.exists ? (snap.get('foldedTo') as number) : undefined;
  }

  async setFoldCursor(foldedTo: number): Promise<void> {
    await this.rollupCol.doc(CURSOR_DOC).set({ foldedTo });
    this.ops.writes++;
  }

  /** A query's documents, counted as billed: one read each, one for a query that finds none. */
  private async read(query: Query): Promise<DocumentSnapshot[]> {
    const snap = await query.get();
    this.ops.reads += Math.max(1, snap.size);
    return snap.docs;
  }
}

function expiry(bucketStart: number): Date {
  return new Date(bucketStart + KEEP_MS);
}

/** A bucket's counts as a rollup stores them: the raw documents' fields, as plain values. */
function storedCounts(b: RateBucket): StoredCounts {
  return {
    attempts: b.attempts,
    successes: b.successes,
    failures: b.failures,
    ...(b.lastErrors?.length ? { lastErrors: b.lastErrors } : {}),
    ...b.settled,
    ...(b.latency && Object.keys(b.latency).length ? { latency: b.latency } : {}),
  };
}

function rollupOf(doc: StoredRollup): RateRollup {
  const buckets = (m: Record<string, StoredCounts>) => mergeShards(Object.entries(m).map(([start, counts]) => ({ ...counts, destinationId: doc.destinationId, bucketStart: Number(start) })));
  return { destinationId: doc.destinationId, foldedThrough: doc.foldedThrough, minutes: buckets(doc.m ?? {}), coarse: buckets(doc.c ?? {}).map(({ lastErrors: _none, ...b }) => b) };
}

/** A delta as the fields it adds to (own document) or under its destination's key (shared document): one write either way. */
function countFields(d: CounterDelta): Record<string, unknown> {
  const doc: Record<string, unknown> = {
    attempts: FieldValue.increment(d.attempts),
    successes: FieldValue.increment(d.successes),
    failures: FieldValue.increment(d.failures),
  };
  // The newest errors of this flush replace the shard's: a read to merge them would double the cost.
  if (d.lastErrors.length) doc.lastErrors = d.lastErrors.slice(0, RECENT_ERRORS);
  // One increment per latency bin hit (`latency.b07`), in the same write: a merged set merges into the map.
  const bins = Object.entries(d.latency ?? {}).filter(([, n]) => (n ?? 0) > 0);
  if (bins.length) doc.latency = Object.fromEntries(bins.map(([bin, n]) => [bin, FieldValue.increment(n!)]));
  for (const key of SETTLED_KEYS) if (d.settled?.[key]) doc[key] = FieldValue.increment(d.settled[key]);
  // Each writer's list under its own key: writers that share a document do not overwrite each other's.
  if (d.recent) doc.recent = { [d.recent.writer]: d.recent.entries.map(encodeEntry) };
  return doc;
}

/** The destination's entry in a shared document, as a row of its own document would be. */
function sharedRow(doc: DocumentSnapshot, destinationId: string): Row[] {
  const counts = doc.get(new FieldPath('d', destinationId)) as StoredCounts | undefined;
  return counts ? [{ ...counts, destinationId, bucketStart: doc.get('bucketStart') as StoredShared['bucketStart'] }] : [];
}

/** A log-head entry as stored: one string, as Firestore keeps no array inside an array. */
export function encodeEntry(e: RecentEntry): string {
  return `${e[0]} ${e[1]}`;
}

export function decodeEntry(text: string): RecentEntry[] {
  const space = text.indexOf(' ');
  return space > 0 ? [[text.slice(0, space), text.slice(space + 1)]] : [];
}

/**
 * The log-head lists of several reads (own documents, shared ones), newest first, as buckets
 * whose lists are all there. A read that stopped at its limit knows nothing older than its
 * oldest bucket and may lack part of that one: every bucket that old or older is left out, the
 * other reads' too — a bucket kept with a writer's list missing would prove a head it does not
 * hold (domain/delivery/recent-log.ts).
 */
export function completeBuckets(reads: readonly { lists: readonly RecentBucket[]; limited: boolean }[]): RecentBucket[] {
  const cuts = reads.filter((r) => r.limited && r.lists.length > 0).map((r) => Math.min(...r.lists.map((l) => l.start)));
  const cut = cuts.length ? Math.max(...cuts) : -Infinity;
  return bucketsOf(reads.flatMap((r) => r.lists.filter((l) => l.start > cut))).sort((a, b) => b.start - a.start);
}

/** Shards (and shared documents) of the same bucket, summed, latency histograms bin by bin. */
export function mergeShards(rows: readonly Omit<Row, 'recent'>[]): RateBucket[] {
  const byStart = new Map<number, RateBucket>();
  for (const r of rows) {
    const b = byStart.get(r.bucketStart) ?? { destinationId: r.destinationId, start: r.bucketStart, attempts: 0, successes: 0, failures: 0, lastErrors: [] };
    b.attempts += r.attempts;
    b.successes += r.successes;
    b.failures += r.failures;
    b.lastErrors = [...(b.lastErrors ?? []), ...(r.lastErrors ?? [])].sort((x, y) => y.at.localeCompare(x.at)).slice(0, RECENT_ERRORS);
    if (r.latency && Object.keys(r.latency).length) b.latency = addHistograms(b.latency, r.latency);
    const settled = addSettled(b.settled, settledOf(r));
    if (settled) b.settled = settled;
    byStart.set(r.bucketStart, b);
  }
  return [...byStart.values()].sort((a, b) => a.start - b.start);
}
