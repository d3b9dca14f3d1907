/**
 * The write pattern of Herald's success-rate counter documents (collection `rates`, one per
 * destination, bucket and shard), from the writes the bench's Herald process logged: how many,
 * per delivered event, and how hot the hottest document got. Firestore sustains about one
 * write a second on one document: the target is ≤ 1 write/s on the hottest one.
 *
 * "Writes in any 1 s window" slides a window over the write times. Herald flushes on a
 * 1000 ms timer, so two writes a timer tick apart land 999–1001 ms apart (timer and clock
 * granularity): a window of exactly 1000 ms would count those as two writes in one second.
 * The window is therefore 1000 ms less a tolerance (10 ms): writes at least 990 ms apart count
 * as one a second; anything closer (a second flush from another path) counts as two.
 */
import { round } from './stats';

/** One counter document written by one flush. */
export interface CounterWrite {
  /** The document id, `${destinationId}~${bucketStart}~${shard}` (FirestoreCounterStore's). */
  doc: string;
  /** When the flush that wrote it was issued, ms (performance.timeOrigin + performance.now() in Herald's process). */
  at: number;
  /** What asked for the flush: 'timer', 'after a delivery' (flushIfDue), 'suspension check', 'shutdown' (see cost-stack.ts). */
  via?: string;
}

export interface CounterDocStats {
  doc: string;
  writes: number;
  /** Most writes issued in any window of `windowMs − toleranceMs` (half-open: [t, t + windowMs − toleranceMs)). */
  maxInWindow: number;
  /** Writes per second while the document was being written: (writes − 1) ÷ (last − first); needs two writes. */
  meanPerSecond?: number;
  /** Shortest time between two consecutive writes, ms; needs two writes. */
  minGapMs?: number;
  /** What asked for those two writes' flushes, "first → second", when known. */
  minGapVia?: string;
  /** Writes issued less than `windowMs − toleranceMs` after the document's previous write. */
  closeWrites: number;
}

export interface CounterWriteStats {
  /** Counter document writes (one per document per flush). */
  writes: number;
  /** Distinct counter documents written. */
  documents: number;
  perDelivered?: number;
  /** The document with the most writes in one window (then the most writes overall). */
  hottest?: CounterDocStats;
  /** Writes by what asked for their flush, when known. */
  byVia?: Record<string, number>;
  windowMs: number;
  toleranceMs: number;
}

export interface WindowOptions {
  /** The window, ms (default 1000). */
  windowMs?: number;
  /** Taken off the window for timer and clock granularity, ms (default 10). */
  toleranceMs?: number;
}

/** Most of the ascending `times` that fall in any half-open window [t, t + windowMs). */
export function maxInWindow(times: readonly number[], windowMs: number): number {
  let best = 0;
  let from = 0;
  for (let to = 0; to < times.length; to++) {
    while (times[to]! - times[from]! >= windowMs) from++;
    best = Math.max(best, to - from + 1);
  }
  return best;
}

/** One document's writes: their times, or the writes themselves (which may say what asked for them). */
export function docStats(doc: string, writes: readonly (number | Omit<CounterWrite, 'doc'>)[], { windowMs = 1000, toleranceMs = 10 }: WindowOptions = {}): CounterDocStats {
  const ordered = writes.map((w) => (typeof w === 'number' ? { at: w } : w)).sort((a, b) => a.at - b.at);
  const sorted = ordered.map((w) => w.at);
  const span = sorted.length > 1 ? sorted[sorted.length - 1]! - sorted[0]! : 0;
  let minGap = Infinity;
  let minGapVia: string | undefined;
  let closeWrites = 0;
  for (let i = 1; i < sorted.length; i++) {
    const gap = sorted[i]! - sorted[i - 1]!;
    if (gap < windowMs - toleranceMs) closeWrites++;
    if (gap < minGap) {
      minGap = gap;
      const [a, b] = [ordered[i - 1]!.via, ordered[i]!.via];
      minGapVia = a !== undefined && b !== undefined ? `${a} → ${b}` : undefined;
    }
  }
  return {
    doc,
    writes: sorted.length,
    maxInWindow: maxInWindow(sorted, windowMs - toleranceMs),
    ...(span > 0 ? { meanPerSecond: round(((sorted.length - 1) / span) * 1000, 2) } : {}),
    ...(Number.isFinite(minGap) ? { minGapMs: round(minGap) } : {}),
    ...(minGapVia !== undefined ? { minGapVia } : {}),
    closeWrites,
  };
}

export function counterWriteStats(writes: readonly CounterWrite[], delivered: number, { windowMs = 1000, toleranceMs = 10 }: WindowOptions = {}): CounterWriteStats {
  const byDoc = new Map<string, CounterWrite[]>();
  const byVia: Record<string, number> = {};
  for (const w of writes) {
    const list = byDoc.get(w.doc) ?? [];
    list.push(w);
    byDoc.set(w.doc, list);
    if (w.via !== undefined) byVia[w.via] = (byVia[w.via] ?? 0) + 1;
  }
  const docs = [...byDoc].map(([doc, list]) => docStats(doc, list, { windowMs, toleranceMs }));
  docs.sort((a, b) => b.maxInWindow - a.maxInWindow || b.writes - a.writes || a.doc.localeCompare(b.doc));
  return {
    writes: writes.length,
    documents: byDoc.size,
    ...(delivered > 0 ? { perDelivered: round(writes.length / delivered, 4) } : {}),
    ...(docs[0] ? { hottest: docs[0] } : {}),
    ...(Object.keys(byVia).length ? { byVia } : {}),
    windowMs,
    toleranceMs,
  };
}
