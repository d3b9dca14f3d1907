/**
 * The numbers of `npm run bench -- rate` for one receiver capacity C, from the receiver's log
 * (every request: time and status) and the workers' write logs. Pure: times are epoch ms,
 * the run is [t0, t0 + seconds·1000).
 */
import { docStats, maxInWindow } from './counter-writes';
import { DocWrite, LeaseLog } from './rate-protocol';
import { round } from './stats';

/** Herald's ceiling (seed 000: between 1 and 100 events/s). */
export const HERALD_MAX_RATE = 100;

/** The targets. */
export const RATE_TARGETS = {
  /** Seconds until the delivered rate first reaches 80 % of min(C, 100). */
  reachSeconds: 60,
  reachFraction: 0.8,
  /** Steady-state delivered rate ÷ min(C, 100), at least. */
  steadyRatio: 0.9,
  /** Share of 429s, at most. */
  throttledShare: 0.05,
  /** Delivered in any one-second window, at most: 100 + 5 %. */
  peak: HERALD_MAX_RATE * 1.05,
  /** Firestore writes/s on the hottest document, at most. */
  hottestWritesPerSecond: 1,
} as const;

/** Writes at least this much under 1 s apart still count as one a second (timer granularity; counter-writes.ts). */
const TOLERANCE_MS = 10;

export interface RequestLog {
  at: number;
  status: number;
  id?: string;
}

export interface DocWriteStats {
  doc: string;
  writes: number;
  /** Most writes in any window of 1 s (less the tolerance). */
  maxIn1s: number;
  /** (writes − 1) ÷ (last − first), per second. */
  meanPerSecond?: number;
  /** Writes over the whole run, per second of the run. */
  perRunSecond: number;
  minGapMs?: number;
}

export interface RateAnalysis {
  capacity: number;
  /** min(C, 100): what Herald should deliver at. */
  target: number;
  seconds: number;
  requests: number;
  accepted: number;
  throttled: number;
  otherStatuses: number;
  /** Events accepted more than once (Herald sent a delivered event again). */
  duplicateAccepts: number;
  /** First second (from t0) at whose end the accepted count of the 1 s before it reached 80 % of target; sliding. */
  reachSeconds?: number;
  steady: { fromSecond: number; toSecond: number; acceptedPerSecond: number; ratio: number; throttledShare?: number; requestsPerSecond: number };
  overallThrottledShare?: number;
  /** Most 2xx (delivered) in any 1 s window, and most requests of any status. */
  peakAcceptedIn1s: number;
  peakRequestsIn1s: number;
  /** Most attempts Herald's workers started in any 1 s window (their clock, not the receiver's). */
  peakAttemptStartsIn1s?: number;
  /** Per second of the run: accepted, 429. */
  perSecond: { accepted: number[]; throttled: number[] };
  /** The rate-control document of this destination: one write per lease. */
  rateDoc?: DocWriteStats & { leaseErrors?: number; rateAtEnd?: number; rates: (number | undefined)[] };
  /** The hottest success-rate counter document of this destination. */
  hottestCounter?: DocWriteStats;
  counterDocs: number;
  /** The hottest delivery record (each event's record takes a few writes, close together). */
  hottestRecord?: DocWriteStats;
  targets: {
    reach: { limit: number; measured?: number; met: boolean };
    steady: { limit: number; measured: number; met: boolean };
    throttledShare: { limit: number; measured?: number; met: boolean; over: 'steady half' };
    peak: { limit: number; measured: number; met: boolean; attempts: number; attemptsMet: boolean };
    hottestDoc: { limit: number; doc?: string; meanPerSecond?: number; maxIn1s?: number; meanMet: boolean };
  };
}

function writeStats(doc: string, times: number[], t0: number, seconds: number): DocWriteStats {
  const s = docStats(doc, times, { windowMs: 1000, toleranceMs: TOLERANCE_MS });
  return {
    doc,
    writes: s.writes,
    maxIn1s: s.maxInWindow,
    ...(s.meanPerSecond !== undefined ? { meanPerSecond: s.meanPerSecond } : {}),
    perRunSecond: round(times.filter((t) => t >= t0 && t < t0 + seconds * 1000).length / seconds, 2)!,
    ...(s.minGapMs !== undefined ? { minGapMs: s.minGapMs } : {}),
  };
}

function hottest(writes: readonly DocWrite[], t0: number, seconds: number): { stats?: DocWriteStats; docs: number } {
  const byDoc = new Map<string, number[]>();
  for (const w of writes) {
    const list = byDoc.get(w.doc) ?? [];
    list.push(w.at);
    byDoc.set(w.doc, list);
  }
  let best: DocWriteStats | undefined;
  for (const [doc, times] of byDoc) {
    const s = writeStats(doc, times, t0, seconds);
    if (!best || s.maxIn1s > best.maxIn1s || (s.maxIn1s === best.maxIn1s && (s.meanPerSecond ?? 0) > (best.meanPerSecond ?? 0))) best = s;
  }
  return { ...(best ? { stats: best } : {}), docs: byDoc.size };
}

/** First time (ms after t0) at which `sorted` holds ≥ `threshold` entries in the second ending then. */
export function firstReach(sorted: readonly number[], t0: number, threshold: number): number | undefined {
  if (threshold <= 0) return 0;
  let from = 0;
  for (let to = 0; to < sorted.length; to++) {
    while (sorted[to]! - sorted[from]! >= 1000) from++;
    if (to - from + 1 >= threshold) return sorted[to]! - t0;
  }
  return undefined;
}

export interface RateInputs {
  capacity: number;
  destinationId: string;
  t0: number;
  seconds: number;
  requests: readonly RequestLog[];
  leases: readonly LeaseLog[];
  leaseErrors?: number;
  counterWrites: readonly DocWrite[];
  recordWrites: readonly DocWrite[];
  /** Attempt start times in the workers, doc = the receiver path. */
  attemptStarts?: readonly DocWrite[];
  path?: string;
}

export function analyseRate(input: RateInputs): RateAnalysis {
  const { capacity, t0, seconds } = input;
  const end = t0 + seconds * 1000;
  const target = Math.min(capacity, HERALD_MAX_RATE);
  const inRun = input.requests.filter((r) => r.at >= t0 && r.at < end).sort((a, b) => a.at - b.at);
  const ok = inRun.filter((r) => r.status >= 200 && r.status < 300);
  const throttled = inRun.filter((r) => r.status === 429);
  const okTimes = ok.map((r) => r.at);
  const seen = new Set<string>();
  let duplicateAccepts = 0;
  for (const r of ok) {
    if (r.id === undefined) continue;
    if (seen.has(r.id)) duplicateAccepts++;
    seen.add(r.id);
  }

  const perSecond = { accepted: new Array<number>(seconds).fill(0), throttled: new Array<number>(seconds).fill(0) };
  for (const r of inRun) {
    const s = Math.floor((r.at - t0) / 1000);
    if (r.status >= 200 && r.status < 300) perSecond.accepted[s]!++;
    else if (r.status === 429) perSecond.throttled[s]!++;
  }

  const reachMs = firstReach(okTimes, t0, Math.ceil(RATE_TARGETS.reachFraction * target));
  const fromSecond = Math.floor(seconds / 2);
  const steadyFrom = t0 + fromSecond * 1000;
  const steadyAll = inRun.filter((r) => r.at >= steadyFrom);
  const steadyOk = steadyAll.filter((r) => r.status >= 200 && r.status < 300).length;
  const steadyThrottled = steadyAll.filter((r) => r.status === 429).length;
  const steadySeconds = seconds - fromSecond;
  const acceptedPerSecond = steadyOk / steadySeconds;
  const ratio = round(acceptedPerSecond / target, 3)!;
  const share = (part: number, all: number) => (all > 0 ? round(part / all, 4) : undefined);
  const steadyShare = share(steadyThrottled, steadyAll.length);
  const peakAccepted = maxInWindow(okTimes, 1000);
  const peakRequests = maxInWindow(inRun.map((r) => r.at), 1000);
  const starts = input.attemptStarts?.filter((w) => w.doc === input.path && w.at >= t0 && w.at < end).map((w) => w.at).sort((a, b) => a - b);

  const leases = input.leases.filter((l) => l.destinationId === input.destinationId).sort((a, b) => a.at - b.at);
  const rates: (number | undefined)[] = [];
  for (let s = 0, i = 0, last: number | undefined; s < seconds; s++) {
    while (i < leases.length && leases[i]!.at < t0 + (s + 1) * 1000) last = leases[i++]!.rate;
    rates.push(last === undefined ? undefined : round(last, 1));
  }
  const leaseTimes = leases.filter((l) => l.at < end).map((l) => l.at);
  const rateDoc = leaseTimes.length
    ? {
        ...writeStats(`rate-control/${input.destinationId}`, leaseTimes, t0, seconds),
        ...(input.leaseErrors !== undefined ? { leaseErrors: input.leaseErrors } : {}),
        rateAtEnd: rates[rates.length - 1],
        rates,
      }
    : undefined;
  const mine = (w: DocWrite) => w.at < end && w.doc.startsWith(`${input.destinationId}~`);
  const counters = hottest(input.counterWrites.filter(mine), t0, seconds);
  const records = hottest(
    input.recordWrites.filter((w) => w.at < end && w.doc.startsWith(`${input.destinationId}.`)),
    t0,
    seconds,
  );

  const docs = [rateDoc, counters.stats].filter((d): d is DocWriteStats => d !== undefined);
  const hot = docs.sort((a, b) => b.maxIn1s - a.maxIn1s || (b.meanPerSecond ?? 0) - (a.meanPerSecond ?? 0))[0];
  const reachSeconds = reachMs === undefined ? undefined : round(reachMs / 1000, 1);
  return {
    capacity,
    target,
    seconds,
    requests: inRun.length,
    accepted: ok.length,
    throttled: throttled.length,
    otherStatuses: inRun.length - ok.length - throttled.length,
    duplicateAccepts,
    ...(reachSeconds !== undefined ? { reachSeconds } : {}),
    steady: {
      fromSecond,
      toSecond: seconds,
      acceptedPerSecond: round(acceptedPerSecond, 2)!,
      ratio,
      ...(steadyShare !== undefined ? { throttledShare: steadyShare } : {}),
      requestsPerSecond: round(steadyAll.length / steadySeconds, 2)!,
    },
    ...(share(throttled.length, inRun.length) !== undefined ? { overallThrottledShare: share(throttled.length, inRun.length) } : {}),
    peakAcceptedIn1s: peakAccepted,
    peakRequestsIn1s: peakRequests,
    ...(starts ? { peakAttemptStartsIn1s: maxInWindow(starts, 1000) } : {}),
    perSecond,
    ...(rateDoc ? { rateDoc } : {}),
    ...(counters.stats ? { hottestCounter: counters.stats } : {}),
    counterDocs: counters.docs,
    ...(records.stats ? { hottestRecord: records.stats } : {}),
    targets: {
      reach: { limit: RATE_TARGETS.reachSeconds, ...(reachSeconds !== undefined ? { measured: reachSeconds } : {}), met: reachSeconds !== undefined && reachSeconds <= RATE_TARGETS.reachSeconds },
      steady: { limit: RATE_TARGETS.steadyRatio, measured: ratio, met: ratio >= RATE_TARGETS.steadyRatio },
      // No request at all in the steady half measures nothing: not met.
      throttledShare: { limit: RATE_TARGETS.throttledShare, ...(steadyShare !== undefined ? { measured: steadyShare } : {}), met: steadyShare !== undefined && steadyShare <= RATE_TARGETS.throttledShare, over: 'steady half' },
      peak: { limit: RATE_TARGETS.peak, measured: peakAccepted, met: peakAccepted <= RATE_TARGETS.peak, attempts: peakRequests, attemptsMet: peakRequests <= RATE_TARGETS.peak },
      hottestDoc: {
        limit: RATE_TARGETS.hottestWritesPerSecond,
        ...(hot ? { doc: hot.doc, maxIn1s: hot.maxIn1s } : {}),
        ...(hot?.meanPerSecond !== undefined ? { meanPerSecond: hot.meanPerSecond } : {}),
        // Firestore's limit is a sustained rate; a burst (instances that join lease close together) is shown, not judged.
        meanMet: (hot?.meanPerSecond ?? 0) <= RATE_TARGETS.hottestWritesPerSecond,
      },
    },
  };
}

export interface RecoveryInputs {
  /** min(C, 100). */
  target: number;
  /** When the receiver answered again (epoch ms): the measured run is [t0, t0 + seconds·1000). */
  t0: number;
  seconds: number;
  /** The ids of the events published while the receiver hung. */
  duringHang: readonly string[];
  /** What the hanging receiver was sent (only the ids are read: those events were attempted, and timed out). */
  hangRequests: readonly RequestLog[];
  /** What the receiver answered after, epoch ms. */
  requests: readonly RequestLog[];
}

export interface RecoveryAnalysis {
  publishedDuringHang: number;
  /** Of those, attempted while it hung (timed out: their retry policy has them now). */
  attemptedDuringHang: number;
  /** The rest: deferred by rate control, waiting for turns when the receiver answered again. */
  backlog: number;
  /** Of the backlog, delivered during the run. */
  backlogDelivered: number;
  /** Seconds from when the receiver answered until the last of the backlog was delivered; undefined if some never were. */
  drainedSeconds?: number;
  /** Seconds the backlog would take at the minimum rate it was deferred at (1/s). */
  atMinimumRateSeconds: number;
  /** Delivered/s (backlog and new events) from first reaching 80 % of the target until the backlog drained (or the run ended), ÷ target. */
  drainingRatio?: number;
}

/** How the recovery scenario's deferred backlog came back (`npm run bench -- rate --hang`). Pure. */
export function analyseRecovery(input: RecoveryInputs): RecoveryAnalysis {
  const { t0, target } = input;
  const end = t0 + input.seconds * 1000;
  const attempted = new Set(input.hangRequests.flatMap((r) => (r.id === undefined ? [] : [r.id])));
  const backlog = input.duringHang.filter((id) => !attempted.has(id));
  const delivered = input.requests.filter((r) => r.at >= t0 && r.at < end && r.status >= 200 && r.status < 300).sort((a, b) => a.at - b.at);
  const firstDelivered = new Map<string, number>();
  for (const r of delivered) if (r.id !== undefined && !firstDelivered.has(r.id)) firstDelivered.set(r.id, r.at);
  const backlogTimes = backlog.flatMap((id) => (firstDelivered.has(id) ? [firstDelivered.get(id)!] : []));
  const drainedAt = backlogTimes.length === backlog.length ? Math.max(t0, ...backlogTimes) : undefined;
  const reachMs = firstReach(delivered.map((r) => r.at), t0, Math.ceil(RATE_TARGETS.reachFraction * target));
  const from = reachMs === undefined ? undefined : t0 + reachMs;
  const to = drainedAt ?? end;
  const drainingRatio = from !== undefined && to - from >= 1000 ? round(delivered.filter((r) => r.at >= from && r.at <= to).length / ((to - from) / 1000) / target, 3) : undefined;
  return {
    publishedDuringHang: input.duringHang.length,
    attemptedDuringHang: input.duringHang.length - backlog.length,
    backlog: backlog.length,
    backlogDelivered: backlogTimes.length,
    ...(drainedAt !== undefined ? { drainedSeconds: round((drainedAt - t0) / 1000, 1) } : {}),
    atMinimumRateSeconds: backlog.length,
    ...(drainingRatio !== undefined ? { drainingRatio } : {}),
  };
}
