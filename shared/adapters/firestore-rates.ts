import { FieldValue, Firestore } from '@google-cloud/firestore';
import { LastError } from '../domain/delivery';
import { addHistograms, LatencyHistogram } from '../domain/latency-histogram';
import { addSettled, RateBucket, RECENT_ERRORS } from '../domain/success-rate';
import { bucketsOf, RecentBucket, RecentEntry } from '../domain/recent-log';
import { RateDelta, RateStore } from '../ports';
import { COLLECTIONS, FIRESTORE_QUERIES, FIRESTORE_TTL_FIELDS, OperationCounter } from './firestore-stores';

/**
 * How long a counter document is worth keeping: Firestore's TTL policy on `expireAt`
 * (FIRESTORE_TTL_FIELDS) deletes it after. 25 h: the console charts a day of them
 * (GET /admin/stats?window=24h); suspension reads only the last hour.
 */
const KEEP_MS = 25 * 60 * 60 * 1000;

interface StoredRate {
  destinationId: string;
  bucketStart: number;
  shard: number;
  attempts: number;
  successes: number;
  failures: number;
  lastErrors?: LastError[];
  /** Deliveries that became DEAD, or QUEUED, in the bucket. */
  dead?: number;
  queued?: number;
  /** Each writer's newest records created in the bucket, `<publishedAt> <delivery id>` (domain/recent-log.ts). */
  recent?: Record<string, string[]>;
  /** Attempt latencies: a map of bin (`b00` … `b24`, domain/latency-histogram.ts) to count, only the bins ever hit. */
  latency?: LatencyHistogram;
  expireAt: Date;
}

/**
 * Success-rate counters in Firestore: one document per (destination, bucket, shard), added
 * to with server-side increments, so a flush is one write and never a read.
 */
export class FirestoreRateStore implements RateStore {
  constructor(
    private readonly db: Firestore,
    private readonly ops = new OperationCounter(),
  ) {}

  private get col() {
    return this.db.collection(COLLECTIONS.rates);
  }

  async add(deltas: readonly RateDelta[], shard: number): Promise<void> {
    if (deltas.length === 0) return;
    const batch = this.db.batch();
    for (const d of deltas) {
      const doc: Record<string, unknown> = {
        destinationId: d.destinationId,
        bucketStart: d.bucketStart,
        shard,
        attempts: FieldValue.increment(d.attempts),
        successes: FieldValue.increment(d.successes),
        failures: FieldValue.increment(d.failures),
        [FIRESTORE_TTL_FIELDS.rates.field]: new Date(d.bucketStart + KEEP_MS),
      };
      // The newest errors of this flush replace the shard's: a read to merge them would double the cost.
      if (d.lastErrors.length) doc.lastErrors = d.lastErrors.slice(0, RECENT_ERRORS);
      // One increment per latency bin hit (`latency.b07`), in the same write: a merged set merges into the map.
      const bins = Object.entries(d.latency ?? {}).filter(([, n]) => (n ?? 0) > 0);
      if (bins.length) doc.latency = Object.fromEntries(bins.map(([bin, n]) => [bin, FieldValue.increment(n!)]));
      if (d.settled?.dead) doc.dead = FieldValue.increment(d.settled.dead);
      if (d.settled?.queued) doc.queued = FieldValue.increment(d.settled.queued);
      // Each writer's list under its own key: writers that share a shard do not overwrite each other's.
      if (d.recent) doc.recent = { [d.recent.writer]: d.recent.entries.map(encodeEntry) };
      batch.set(this.col.doc(`${d.destinationId}~${d.bucketStart}~${shard}`), doc, { merge: true });
    }
    await batch.commit();
    this.ops.writes += deltas.length;
  }

  async window(destinationId: string, since: number): Promise<RateBucket[]> {
    const q = FIRESTORE_QUERIES.rateWindow;
    const snap = await this.col.where(q.equality[0], '==', destinationId).where(q.orderBy, '>=', since).orderBy(q.orderBy).get();
    this.ops.reads += Math.max(1, snap.size);
    return mergeShards(snap.docs.map((d) => d.data() as StoredRate));
  }

  async recentLog(destinationId: string, since: number, maxDocs: number): Promise<RecentBucket[]> {
    const q = FIRESTORE_QUERIES.logHead;
    const snap = await this.col.where(q.equality[0], '==', destinationId).where(q.orderBy, '>=', since).orderBy(q.orderBy, 'desc').limit(maxDocs).select(q.orderBy, 'recent').get();
    this.ops.reads += Math.max(1, snap.size);
    const lists = snap.docs.map((d) => {
      const r = d.data() as Pick<StoredRate, 'bucketStart' | 'recent'>;
      return { start: r.bucketStart, entries: Object.values(r.recent ?? {}).flat().flatMap(decodeEntry) };
    });
    return bucketsOf(lists, snap.size === maxDocs);
  }

  async activeSince(since: number): Promise<string[]> {
    // A single-field range: Firestore's automatic index serves it.
    const snap = await this.col.where(FIRESTORE_QUERIES.rateWindow.orderBy, '>=', since).select(FIRESTORE_QUERIES.rateWindow.equality[0]).get();
    this.ops.reads += Math.max(1, snap.size);
    return [...new Set(snap.docs.map((d) => (d.data() as Pick<StoredRate, 'destinationId'>).destinationId))];
  }
}

/** A log-head entry as stored: one string, as Firestore keeps no array inside an array. */
function encodeEntry(e: RecentEntry): string {
  return `${e[0]} ${e[1]}`;
}

function decodeEntry(text: string): RecentEntry[] {
  const space = text.indexOf(' ');
  return space > 0 ? [[text.slice(0, space), text.slice(space + 1)]] : [];
}

/** Shards of the same bucket, summed, latency histograms bin by bin. */
export function mergeShards(rows: readonly Omit<StoredRate, 'expireAt' | 'shard'>[]): RateBucket[] {
  const byStart = new Map<number, RateBucket>();
  for (const r of rows) {
    const b = byStart.get(r.bucketStart) ?? { destinationId: r.destinationId, start: r.bucketStart, attempts: 0, successes: 0, failures: 0, lastErrors: [] };
    b.attempts += r.attempts;
    b.successes += r.successes;
    b.failures += r.failures;
    b.lastErrors = [...(b.lastErrors ?? []), ...(r.lastErrors ?? [])].sort((x, y) => y.at.localeCompare(x.at)).slice(0, RECENT_ERRORS);
    if (r.latency && Object.keys(r.latency).length) b.latency = addHistograms(b.latency, r.latency);
    const settled = addSettled(b.settled, { ...(r.dead ? { dead: r.dead } : {}), ...(r.queued ? { queued: r.queued } : {}) });
    if (settled) b.settled = settled;
    byStart.set(r.bucketStart, b);
  }
  return [...byStart.values()].sort((a, b) => a.start - b.start);
}
