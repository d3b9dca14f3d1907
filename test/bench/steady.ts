/**
 * The steady-rate phase of `npm run bench`: events sent into POST /ingest at a steady R events/s
 * (one event per request, one every 1000/R ms, paced, not in bursts) for S seconds to ONE
 * destination whose receiver answers 204, through a Herald at HERALD_TIME_SCALE=1 (minute
 * counter buckets, as deployed) in a process of its own (cost-stack.ts).
 *
 * What it measures is the success-rate counters' write pattern under that load: counter writes
 * per delivered event, and the hottest counter document's most writes in any 1 s window and
 * its mean writes/s (Firestore sustains about one write a second on one document; the issue's
 * target is ≤ 1). The local emulators may not carry R events/s end to end: the delivered rate
 * is reported as it is; the counters are measured at whatever rate the destination got.
 */
import { performance } from 'node:perf_hooks';
import { CostContext, CostStack, ingestSender, TARGETS } from './cost';
import { subtract } from './cost-counters';
import { counterWriteStats, CounterWriteStats } from './counter-writes';
import { collectionTable, opsDelta, OpsByCollection, perEvent as opsPerEvent, totalOps } from './firestore-meter';
import { Interrupted, runLoad, sleep } from './load';
import { Tracker } from './receiver';
import { distribution, Distribution, round, table } from './stats';
import { UsageMetering, usageMetering } from './usage-metering';

export const STEADY_PROJECT = 'herald-bench-steady';
const DESTINATION = { id: 'steady', path: '/steady', type: 'com.example.bench.steady' } as const;
/** The issue's target: writes per second on the hottest counter document. */
export const COUNTER_DOC_WRITES_PER_SECOND = 1;
/** Ingest requests in flight at most: past it the sender falls behind its schedule (and says so). */
const MAX_IN_FLIGHT = 64;

export interface SteadyOptions {
  /** How long to send, s. */
  seconds: number;
  /** Events per second. */
  rate: number;
  /** Unmeasured events sent first (lane, connections, JIT). */
  warmup: number;
  stallMs: number;
}

export interface SteadyReport {
  settings: { seconds: number; rate: number; events: number; destinations: 1; timeScale: number; pumpIntervalMs: number; rateFlushMs: number; counterBucketMs: number; maxInFlight: number };
  send: {
    sent: number;
    accepted: number;
    errors: number;
    firstError?: string;
    /** First send to the last, plus one interval: what a perfect pace takes `seconds` for. */
    seconds?: number;
    eventsPerSecond?: number;
    /** How far behind its schedule the sender ever was, ms (ingest slower than the pace). */
    maxBehindMs?: number;
    /** POST /ingest round trips, ms. */
    ingestMs: Distribution;
  };
  delivered: number;
  /** First send to the last arrival. */
  deliveredSeconds?: number;
  deliveredPerSecond?: number;
  latencyMs: Distribution;
  duplicates: number;
  firestore: {
    writes: number;
    recordWrites: number;
    counterWrites: number;
    counterFlushes: number;
    writesPerDelivered?: number;
    recordWritesPerDelivered?: number;
    /** As billed (the meter on the client), everything in the counted span (polling included), per delivered event. */
    readsPerDelivered?: number;
    deletesPerDelivered?: number;
    byCollection?: OpsByCollection;
  };
  /** Herald CPU per delivered event, ms (raw: the process's CPU over the counted span). */
  cpuMsPerDelivered?: number;
  /** What usage metering added (usage-metering.ts). */
  usageMetering?: UsageMetering;
  counters: CounterWriteStats & {
    /** Counter writes over the counted span (first send to the settled snapshot), per second. */
    perSecond?: number;
  };
  /** Herald's process: CPU time over wall time, % of one core. */
  heraldCpuPercent?: number;
  target: { limit: number; measure: 'hottest counter document, most writes in any 1 s window'; measured?: number; met: boolean };
  /** Every event here is a first-attempt success to one destination, at HERALD_TIME_SCALE=1: the issue's dense Firestore target, met only at ≥ minRate delivered. */
  firestorePerFirstAttempt: { reads: { limit: number; measured?: number }; writes: { limit: number; measured?: number }; minRate: number; rate?: number; met: boolean };
  problems: string[];
  complete: boolean;
  problem?: string;
}

export async function runSteadyPhase(options: SteadyOptions, ctx: CostContext): Promise<SteadyReport> {
  const { emulators, receiver, signal, progress } = ctx;
  progress(`steady: starting Herald in its own process (project ${STEADY_PROJECT}, HERALD_TIME_SCALE=1)`, true);
  const stack = await CostStack.start(
    CostStack.env(emulators, STEADY_PROJECT, {
      HERALD_TIME_SCALE: '1',
    }),
    signal,
    "the steady-rate phase's Herald",
    'steady stack',
  );
  ctx.addCleanup(`stopping the steady-rate phase's Herald (project ${STEADY_PROJECT})`, () => stack.stop());
  const { url, adminToken, ingestToken } = stack.ready;
  const res = await fetch(`${url}/admin/destinations/${DESTINATION.id}`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url: `${receiver.url}${DESTINATION.path}`, eventTypes: [DESTINATION.type] }),
    signal: AbortSignal.timeout(30_000),
  });
  if (res.status !== 201 && res.status !== 200) throw new Error(`PUT /admin/destinations/${DESTINATION.id} answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
  const send = ingestSender(`${url}/ingest`, ingestToken, DESTINATION.type);
  const ids = (label: string, n: number) => Array.from({ length: n }, (_, i) => `${ctx.runId}-steady-${label}-${i}`);

  if (options.warmup > 0) {
    const tracker = new Tracker('steady warm-up');
    receiver.route(DESTINATION.path, tracker, 'ce-id-header');
    const warm = await runLoad(send, tracker, ids('warm', options.warmup), { batchSize: 1, concurrency: 4, stallMs: options.stallMs, signal, progress });
    if (!warm.complete) throw new Error(`steady warm-up failed: ${warm.problem}`);
    // Its counts flush within HERALD_RATE_FLUSH_MS: not in the measured window.
    await sleep(stack.ready.rateFlushMs + 300, signal);
  }

  const n = Math.max(1, Math.round(options.seconds * options.rate));
  const eventIds = ids('load', n);
  const tracker = new Tracker('steady');
  receiver.route(DESTINATION.path, tracker, 'ce-id-header');
  const before = await stack.snapshot();
  const interval = 1000 / options.rate;
  const ingestMs: number[] = [];
  let inFlight = 0;
  let accepted = 0;
  let errors = 0;
  let firstError: string | undefined;
  let maxBehind = 0;
  let lastLaunch = 0;
  let lastReport = 0;
  const inFlightSends = new Set<Promise<void>>();
  const arrivedCount = () => tracker.arrived.size;
  const t0 = performance.now();
  for (let i = 0; i < n; ) {
    if (signal.aborted) throw new Interrupted('interrupted');
    const now = performance.now();
    const due = Math.min(n, Math.floor((now - t0) / interval) + 1);
    while (i < due && inFlight < MAX_IN_FLIGHT) {
      const id = eventIds[i]!;
      maxBehind = Math.max(maxBehind, now - (t0 + i * interval));
      i++;
      inFlight++;
      const sentAt = performance.now();
      tracker.markSent([id], sentAt);
      lastLaunch = sentAt;
      const p: Promise<void> = send([id]).then(
        () => {
          accepted++;
          ingestMs.push(performance.now() - sentAt);
        },
        (e: unknown) => {
          errors++;
          firstError ??= (e as Error).message;
        },
      );
      inFlightSends.add(p);
      void p.finally(() => {
        inFlight--;
        inFlightSends.delete(p);
      });
    }
    if (now - lastReport >= 1000) {
      progress(`steady: sent ${i}/${n} (${Math.round((i / Math.max(1, now - t0)) * 1000)}/s), accepted ${accepted}, delivered ${arrivedCount()}, ${inFlight} in flight`);
      lastReport = now;
    }
    if (i < n) await sleep(Math.max(1, t0 + i * interval - performance.now()), signal);
  }
  const sendSeconds = (lastLaunch - t0 + interval) / 1000;

  // Every accepted event delivered, or nothing new for stallMs.
  let problem: string | undefined;
  let seen = arrivedCount();
  let lastChange = performance.now();
  for (;;) {
    await sleep(100, signal);
    const now = performance.now();
    const arrived = arrivedCount();
    if (arrived !== seen) lastChange = now;
    seen = arrived;
    if (now - lastReport >= 1000) {
      progress(`steady: sent ${n}/${n}, accepted ${accepted}, delivered ${arrived}, ${inFlight} in flight`);
      lastReport = now;
    }
    if (inFlightSends.size === 0 && arrived >= accepted) break;
    if (now - lastChange > options.stallMs) {
      problem = `deliveries stalled: ${arrived}/${accepted} accepted events arrived, nothing new for ${Math.round(options.stallMs / 1000)} s`;
      break;
    }
  }
  const delivered = arrivedCount();
  progress(`steady: sent ${n}, accepted ${accepted}, delivered ${delivered}${problem ? ' — gave up' : ' — done'}`, true);

  // A record is written after the receiver answered, and the last counts by the next flush.
  let after = await stack.snapshot();
  const deadline = performance.now() + 10_000;
  while (after.counters.recorded.DELIVERED - before.counters.recorded.DELIVERED < delivered && performance.now() < deadline) {
    await sleep(50, signal);
    after = await stack.snapshot();
  }
  await sleep(stack.ready.rateFlushMs + 300, signal);
  const settled = await stack.snapshot(before.counters.rates.writes);
  await stack.stop();

  const d = subtract(settled.counters, before.counters);
  const wire = opsDelta(settled.counters.wire, before.counters.wire);
  const fs = totalOps(wire);
  const countedSeconds = (settled.at - before.at) / 1000;
  let lastArrival: number | undefined;
  const latencies: number[] = [];
  for (const [id, at] of tracker.arrived) {
    lastArrival = Math.max(lastArrival ?? at, at);
    const sentAt = tracker.sent.get(id);
    if (sentAt !== undefined) latencies.push(at - sentAt);
  }
  const deliveredSeconds = lastArrival === undefined ? undefined : (lastArrival - t0) / 1000;
  const per = (x: number, digits = 3) => (delivered > 0 ? round(x / delivered, digits) : undefined);
  const counters = counterWriteStats(settled.counterLog ?? [], delivered);
  const problems = [...settled.problems];
  if (delivered > 0 && counters.writes === 0) problems.push('no success-rate counter writes seen: the bench did not see Herald flush its counters');
  if (errors > 0) problems.push(`${errors} POST /ingest failed, the first: ${firstError}`);
  const measured = counters.hottest?.maxInWindow;
  const complete = problem === undefined && errors === 0 && delivered === n && counters.writes > 0;
  return {
    settings: {
      seconds: options.seconds,
      rate: options.rate,
      events: n,
      destinations: 1,
      timeScale: stack.ready.timeScale,
      pumpIntervalMs: stack.ready.pumpIntervalMs,
      rateFlushMs: stack.ready.rateFlushMs,
      counterBucketMs: stack.ready.counterBucketMs,
      maxInFlight: MAX_IN_FLIGHT,
    },
    send: {
      sent: n,
      accepted,
      errors,
      ...(firstError !== undefined ? { firstError } : {}),
      seconds: round(sendSeconds, 2),
      eventsPerSecond: round(n / sendSeconds),
      maxBehindMs: round(maxBehind),
      ingestMs: distribution(ingestMs),
    },
    delivered,
    ...(deliveredSeconds !== undefined ? { deliveredSeconds: round(deliveredSeconds, 2), deliveredPerSecond: round(delivered / deliveredSeconds) } : {}),
    latencyMs: distribution(latencies),
    duplicates: tracker.duplicates,
    firestore: {
      writes: fs.writes,
      recordWrites: fs.writes - (wire.rates?.writes ?? 0),
      counterWrites: d.rates.writes,
      counterFlushes: d.rates.flushes,
      writesPerDelivered: per(fs.writes),
      recordWritesPerDelivered: per(fs.writes - (wire.rates?.writes ?? 0)),
      readsPerDelivered: per(fs.reads),
      deletesPerDelivered: per(fs.deletes),
      byCollection: opsPerEvent(wire, delivered),
    },
    cpuMsPerDelivered: per(d.cpuMicros / 1000, 2),
    usageMetering: usageMetering(d, wire, delivered, d.cpuMicros, countedSeconds),
    counters: { ...counters, perSecond: round(counters.writes / countedSeconds, 2) },
    heraldCpuPercent: round((d.cpuMicros / 1000 / (countedSeconds * 1000)) * 100),
    target: {
      limit: COUNTER_DOC_WRITES_PER_SECOND,
      measure: 'hottest counter document, most writes in any 1 s window',
      ...(measured !== undefined ? { measured } : {}),
      met: measured !== undefined && measured <= COUNTER_DOC_WRITES_PER_SECOND,
    },
    firestorePerFirstAttempt: {
      reads: { limit: TARGETS.dense.reads, measured: per(fs.reads) },
      writes: { limit: TARGETS.dense.writes, measured: per(fs.writes) },
      minRate: TARGETS.dense.minRate,
      ...(deliveredSeconds !== undefined ? { rate: round(delivered / deliveredSeconds) } : {}),
      met:
        delivered > 0 &&
        fs.reads / delivered <= TARGETS.dense.reads &&
        fs.writes / delivered <= TARGETS.dense.writes &&
        deliveredSeconds !== undefined &&
        delivered / deliveredSeconds >= TARGETS.dense.minRate,
    },
    problems,
    complete,
    ...(problem !== undefined ? { problem } : !complete ? { problem: problems[0] ?? `${delivered}/${n} delivered` } : {}),
  };
}

export function formatSteadyReport(r: SteadyReport): string {
  const s = r.settings;
  const h = r.counters.hottest;
  const mark = (met: boolean) => (met ? 'MET' : 'NOT MET');
  const fp = r.firestorePerFirstAttempt;
  const rows: unknown[][] = [
    ['send rate achieved, events/s (paced, 1 event per POST /ingest)', `${r.send.eventsPerSecond ?? '—'} (${r.send.sent} in ${r.send.seconds ?? '—'} s)`],
    ['accepted by ingest (202)', `${r.send.accepted}/${r.send.sent}`],
    ['sender furthest behind its schedule, ms', r.send.maxBehindMs],
    ['POST /ingest p50 / p99, ms', `${r.send.ingestMs.p50 ?? '—'} / ${r.send.ingestMs.p99 ?? '—'}`],
    ['delivered', `${r.delivered}/${r.send.sent}`],
    ['delivered rate, events/s (first send → last arrival)', r.deliveredPerSecond],
    ['latency p50 / p99 / max, ms', `${r.latencyMs.p50 ?? '—'} / ${r.latencyMs.p99 ?? '—'} / ${r.latencyMs.max ?? '—'}`],
    ['Herald process CPU, % of one core', r.heraldCpuPercent],
    ['Herald CPU per delivered event, ms (raw)', r.cpuMsPerDelivered],
    ['Firestore reads per delivered event, all (as billed)', r.firestore.readsPerDelivered],
    ['Firestore writes per delivered event, all (as billed)', r.firestore.writesPerDelivered],
    ['Firestore deletes per delivered event', r.firestore.deletesPerDelivered],
    ['  delivery records (and other)', r.firestore.recordWritesPerDelivered],
    ['  success-rate counters', r.counters.perDelivered],
    ['counter writes (flushes) / documents', `${r.firestore.counterWrites} (${r.firestore.counterFlushes}) / ${r.counters.documents}`],
    ['counter writes per second, all documents', r.counters.perSecond],
    ['hottest counter doc', h?.doc],
    ['  writes', h?.writes],
    [`  most writes in any 1 s window (≥ ${(r.counters.windowMs - r.counters.toleranceMs) / 1000} s apart count as 1/s)`, h?.maxInWindow],
    ['  mean writes/s while written ((writes − 1) ÷ first-to-last)', h?.meanPerSecond],
    [`  writes < ${(r.counters.windowMs - r.counters.toleranceMs) / 1000} s after the previous one`, h?.closeWrites],
    ['  shortest gap between two writes, ms', h?.minGapMs === undefined ? undefined : `${h.minGapMs}${h.minGapVia ? ` (${h.minGapVia})` : ''}`],
    ['counter writes by what asked for the flush', r.counters.byVia ? Object.entries(r.counters.byVia).map(([k, v]) => `${k} ${v}`).join(', ') : undefined],
  ];
  return [
    '',
    `Steady rate: ${s.rate} events/s for ${s.seconds} s (${s.events} events) to one destination answering 204; Herald in its own process at HERALD_TIME_SCALE=${s.timeScale}`,
    `  (counter buckets of ${s.counterBucketMs / 1000} s, flushed every ${s.rateFlushMs} ms at most; ${s.maxInFlight} ingest requests in flight at most)`,
    '',
    table(['', 'steady'], rows),
    '',
    ...(r.firestore.byCollection ? [(({ header, rows: byRows }) => table(header, byRows))(collectionTable([{ name: 'steady, one destination', perEvent: r.firestore.byCollection }])), ''] : []),
    `Target: ≤ ${r.target.limit} write/s on the hottest counter document (most writes in any 1 s window): ${r.target.measured ?? '—'} — ${mark(r.target.met)}`,
    `  its mean writes/s while written: ${h?.meanPerSecond ?? '—'}; its shortest gap between two writes: ${h?.minGapMs ?? '—'} ms${h?.minGapVia ? ` (flushes asked for by: ${h.minGapVia})` : ''}.`,
    `Target: ≤ ${fp.writes.limit} Firestore writes and ≤ ${fp.reads.limit} reads per first-attempt success at ≥ ${fp.minRate} events/s to one destination (every collection, as billed): ${fp.writes.measured ?? '—'} writes, ${fp.reads.measured ?? '—'} reads at ${fp.rate ?? '—'} events/s delivered — ${mark(fp.met)}`,
    ...(fp.rate !== undefined && fp.rate < fp.minRate ? [`  (delivered below ${fp.minRate} events/s: the target's condition was not reached)`] : []),
    '  Counters cost about one write per flush per destination and process, whatever the rate: per event that is ≈ 1 ÷ (events/s to the',
    '  destination through one process), so they stay ≤ 0.1 from ~10 events/s up, and reach 1 (2 writes per event) at ≤ 1 event/s.',
    ...(r.deliveredPerSecond !== undefined && r.deliveredPerSecond < s.rate * 0.95
      ? [`  The local stack delivered ${r.deliveredPerSecond} events/s, not ${s.rate}: the counters were measured at the rate the destination got.`]
      : []),
    ...r.problems.map((p) => `steady: ${p}`),
    ...(r.problem && !r.problems.includes(r.problem) ? [`INCOMPLETE steady run: ${r.problem}`] : []),
  ].join('\n');
}
