import { addHistograms } from '../../domain/stats/latency-histogram';
import { RateBucket, SettledCounts, SETTLED_KEYS } from '../../domain/stats/success-rate';
import { RecentBucket, RecentEntry, recentList } from '../../domain/delivery/recent-log';
import { CounterDelta, CounterFlushMark, CounterStore, CountersNotWritten, UnsureCounterWrite, UsageDelta } from '../../ports/counters';
import { addUsage, emptyUsage, UsageCounts } from '../../domain/usage/usage';
import { completeBuckets, mergeShards } from '../firestore/counters';
import { RateRollup } from '../../domain/stats/rate-rollup';

type Counts = Omit<CounterDelta, 'recent' | 'settled' | 'group'> & SettledCounts & { recent: Map<string, RecentEntry[]> };

/** A counter document: a destination's own (one entry) or a shared one (an entry per destination it lists). */
interface Doc {
  bucketStart: number;
  shared: boolean;
  entries: Map<string, Counts>;
}

/**
 * Success-rate counters in memory, for unit tests, laid out in documents as FirestoreCounterStore
 * lays them out (own per destination, bucket and shard; shared per group and bucket), so reads
 * limited to a number of documents behave alike; it records every add so tests can see the
 * write pattern.
 */
export class MemoryCounterStore implements CounterStore {
  private readonly docs = new Map<string, Doc>();
  /** Every add: when, and which documents it wrote (`<destination>~<bucket>~<shard>`, or `shared/<group>~<bucket>`). */
  readonly writes: { at: number; docs: string[] }[] = [];

  /** Each document's flush marks, by writer (CounterFlushMark). */
  private readonly marks = new Map<string, Map<string, number>>();
  /**
   * The next this many adds land and then fail, as a commit whose reply was lost (one commit
   * per add here): with a mark, a CountersNotWritten naming them; without, a plain error.
   */
  loseReplies = 0;

  /** Usage documents, `usage/<account>_<day>~<writer>`, as FirestoreCounterStore keeps them. */
  private readonly usageDocs = new Map<string, UsageDelta>();

  async add(deltas: readonly CounterDelta[], shard: number, mark?: CounterFlushMark, usage: readonly UsageDelta[] = []): Promise<void> {
    if (deltas.length === 0 && usage.length === 0) return;
    const docs = new Set<string>();
    for (const u of usage) {
      const key = `usage/${u.account}_${u.day}~${mark?.writer ?? `shard${shard}`}`;
      docs.add(key);
      if (mark) this.marks.set(key, new Map([...(this.marks.get(key) ?? []), [mark.writer, mark.flush]]));
      const doc = this.usageDocs.get(key) ?? { account: u.account, day: u.day, counts: emptyUsage() };
      addUsage(doc.counts, u.counts);
      this.usageDocs.set(key, doc);
    }
    for (const d of deltas) {
      const key = d.group === undefined ? `${d.destinationId}~${d.bucketStart}~${shard}` : `shared/${d.group}~${d.bucketStart}`;
      docs.add(key);
      if (mark) this.marks.set(key, new Map([...(this.marks.get(key) ?? []), [mark.writer, mark.flush]]));
      const doc = this.docs.get(key) ?? { bucketStart: d.bucketStart, shared: d.group !== undefined, entries: new Map<string, Counts>() };
      const row = doc.entries.get(d.destinationId) ?? { destinationId: d.destinationId, bucketStart: d.bucketStart, attempts: 0, successes: 0, failures: 0, lastErrors: [], recent: new Map<string, RecentEntry[]>() };
      row.attempts += d.attempts;
      row.successes += d.successes;
      row.failures += d.failures;
      if (d.lastErrors.length) row.lastErrors = d.lastErrors;
      if (d.latency && Object.keys(d.latency).length) row.latency = addHistograms(row.latency, d.latency);
      for (const key of SETTLED_KEYS) if (d.settled?.[key]) row[key] = (row[key] ?? 0) + d.settled[key];
      if (d.recent) row.recent.set(d.recent.writer, [...d.recent.entries]);
      doc.entries.set(d.destinationId, row);
      this.docs.set(key, doc);
    }
    this.writes.push({ at: Date.now(), docs: [...docs] });
    if (this.loseReplies > 0) {
      this.loseReplies--;
      const lost = Object.assign(new Error('4 DEADLINE_EXCEEDED: the reply was lost (test fault: the write took effect)'), { code: 4 });
      throw mark ? new CountersNotWritten([{ deltas: [...deltas], usage: [...usage], probe: { doc: [...docs][0]!, mark } }], lost) : lost;
    }
  }

  async usage(account: string | undefined, from: string, to: string): Promise<Map<string, Map<string, UsageCounts>>> {
    const out = new Map<string, Map<string, UsageCounts>>();
    for (const u of this.usageDocs.values()) {
      if ((account !== undefined && u.account !== account) || u.day < from || u.day > to) continue;
      const days = out.get(u.account) ?? new Map<string, UsageCounts>();
      days.set(u.day, addUsage(days.get(u.day) ?? emptyUsage(), u.counts));
      out.set(u.account, days);
    }
    return out;
  }

  async landed(probes: readonly UnsureCounterWrite['probe'][]): Promise<boolean[]> {
    return probes.map((p) => this.marks.get(p.doc)?.get(p.mark.writer) === p.mark.flush);
  }


  async recentLog(destinationId: string, since: number, maxDocs: number): Promise<RecentBucket[]> {
    // As Firestore reads them: the newest `maxDocs` of each kind that hold the destination.
    const read = (shared: boolean) => {
      const docs = this.holding(destinationId, since)
        .filter((d) => d.shared === shared)
        .sort((a, b) => b.bucketStart - a.bucketStart)
        .slice(0, maxDocs);
      return { lists: docs.flatMap((d) => [...d.entries.get(destinationId)!.recent.values()].map((l) => recentList(d.bucketStart, l))), limited: docs.length === maxDocs };
    };
    return completeBuckets([read(false), read(true)]);
  }

  async window(destinationId: string, since: number): Promise<RateBucket[]> {
    return mergeShards(this.holding(destinationId, since).map((d) => d.entries.get(destinationId)!));
  }

  async windows(destinationIds: readonly string[], since: number, before = Infinity): Promise<Map<string, RateBucket[]>> {
    this.windowReads++;
    return new Map(await Promise.all([...new Set(destinationIds)].map(async (id) => [id, (await this.window(id, since)).filter((b) => b.start < before)] as const)));
  }

  /** Calls of `windows` (each a query or a few, whatever the destinations asked). */
  windowReads = 0;

  async bucketsSince(since: number): Promise<Map<string, RateBucket[]>> {
    const ids = [...new Set([...this.docs.values()].filter((d) => d.bucketStart >= since).flatMap((d) => [...d.entries.keys()]))];
    return new Map(await Promise.all(ids.map(async (id) => [id, await this.window(id, since)] as const)));
  }

  private readonly rollupDocs = new Map<string, { rollup: RateRollup; version: string }>();
  private versions = 0;
  private cursor: number | undefined;
  /** Reads of rollups and the cursor, as Firestore bills the queries: one per rollup found, one per 30 asked with none found. */
  rollupReads = 0;

  async rollups(destinationIds: readonly string[]): Promise<Map<string, { rollup: RateRollup; version: string }>> {
    const ids = [...new Set(destinationIds)];
    for (let i = 0; i < ids.length; i += 30) this.rollupReads += Math.max(1, ids.slice(i, i + 30).filter((id) => this.rollupDocs.has(id)).length);
    return new Map(ids.flatMap((id) => (this.rollupDocs.has(id) ? [[id, structuredClone(this.rollupDocs.get(id)!)] as const] : [])));
  }

  async putRollups(writes: readonly { rollup: RateRollup; version: string | undefined }[]): Promise<boolean[]> {
    return writes.map(({ rollup, version }) => {
      if (this.rollupDocs.get(rollup.destinationId)?.version !== version) return false;
      this.rollupDocs.set(rollup.destinationId, { rollup: structuredClone(rollup), version: `v${++this.versions}` });
      return true;
    });
  }

  async foldCursor(): Promise<number | undefined> {
    this.rollupReads++;
    return this.cursor;
  }

  async setFoldCursor(foldedTo: number): Promise<void> {
    this.cursor = foldedTo;
  }

  private holding(destinationId: string, since: number): Doc[] {
    return [...this.docs.values()].filter((d) => d.bucketStart >= since && d.entries.has(destinationId));
  }
}
