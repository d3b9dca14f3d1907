/**
 * The sparse scenario of the cost bench (issue 33): N destinations registered through the
 * admin API just before, each for an event type of its own, then one event to each — what
 * traffic looks like with many destinations and little traffic to each, which the dense runs
 * (many events, one destination) do not show: every lookup misses the caches, every rate lease
 * and counter document is new.
 *
 * Herald runs in a process of its own (cost-stack.ts) at HERALD_TIME_SCALE=1, as deployed, so
 * its caches, counter buckets and suspension checks keep production's timing. Every Firestore
 * read, write and delete is counted by collection on the Firestore client's RPCs
 * (firestore-meter.ts), from the first event sent to the last counter flush after the last
 * delivery record: what the checks read meanwhile is part of what this traffic costs.
 */
import { performance } from 'node:perf_hooks';
import { CostContext, CostStack, dataFor, Snapshot, TARGETS } from './cost';
import { subtract } from './cost-counters';
import { GCP_LIST_PRICES } from '../../shared/domain/usage/cost-model';
import { collectionTable, opsDelta, OpsByCollection, perEvent as opsPerEvent, totalOps } from './firestore-meter';
import { EVENT_SOURCE, runLoad, Send, sleep } from './load';
import { Tracker } from './receiver';
import { round, table } from './stats';

export const SPARSE_PROJECT = 'herald-bench-sparse';
const PATH = '/sparse';
const TYPE_PREFIX = 'com.example.bench.sparse.';
/** Admin PUTs in flight while registering. */
const REGISTER_CONCURRENCY = 8;
/** The change feed is quiet when it reads at most this many documents in FEED_QUIET_MS (it polls once every 10 s); waited for at most FEED_LIMIT_S. */
const FEED_QUIET_READS = 3;
const FEED_QUIET_MS = 12_000;
const FEED_LIMIT_S = 120;
/** The deferred work (folds at the next minute's checks, journal cleanup) is waited for at most so long after the last delivery. */
const DEFERRED_LIMIT_S = 300;
/** Standing still after it, to measure Herald's fixed polling (a suspension check included), taken out of the all-in figures. */
const IDLE_SECONDS = 65;

export interface SparseOptions {
  /** Destinations registered, one event each. */
  destinations: number;
  /** Ingest requests in flight. */
  concurrency: number;
  stallMs: number;
}

export interface SparseReport {
  settings: { destinations: number; timeScale: number; concurrency: number };
  registerSeconds?: number;
  sendSeconds?: number;
  /** First event sent to the settled snapshot (what was counted). */
  countedSeconds?: number;
  /** First event sent to the deferred work done (what the all-in figures count). */
  allInSeconds?: number;
  /** The whole scenario, start of the child to its stop. */
  totalSeconds?: number;
  delivered: number;
  recordedDelivered: number;
  /** Per delivered event, as billed. */
  firestore: { reads?: number; writes?: number; deletes?: number; byCollection: OpsByCollection; storeCounted?: { reads: number; writes: number; deletes: number } };
  /** Firestore alone, us-central1, $ per million such events. */
  firestoreDollarsPerMillion?: number;
  /**
   * Per delivered event, from the first send until the deferred work was done (journal cleanup,
   * folds, the check that found nothing left): `gross` everything billed in that span, `net`
   * without Herald's fixed polling over the span (the rate measured standing still afterwards,
   * `idlePerMinute`: local mode polls each second where GCP's scheduler calls each minute).
   */
  allIn: {
    gross: PerEventOps;
    net: PerEventOps;
    idlePerMinute: { reads?: number; writes?: number; deletes?: number };
    /** After the settled snapshot to done, per event. */
    deferredByCollection: OpsByCollection;
    byCollection: OpsByCollection;
    checks: { runs: number; idleRuns: number; active: number; folded: number };
    done: boolean;
  };
  cpuMsPerDelivered?: number;
  invocationsPerDelivered?: number;
  allInTarget: { reads: { limit: number; measured?: number }; writes: { limit: number; measured?: number }; met: boolean };
  target: { reads: { limit: number; measured?: number }; writes: { limit: number; measured?: number }; met: boolean };
  problems: string[];
  complete: boolean;
  problem?: string;
}

interface PerEventOps {
  reads?: number;
  writes?: number;
  deletes?: number;
  /** Firestore alone, us-central1. */
  dollarsPerMillion?: number;
}

/** Which destination's type an id is for: ids end in `-<index>`. */
const typeOf = (id: string) => `${TYPE_PREFIX}${id.slice(id.lastIndexOf('-') + 1)}`;

/** POST /ingest in binary mode, one event, of the type its id names. */
function sparseSender(url: string, token: string): Send {
  return async (ids) => {
    for (const id of ids) {
      const res = await fetch(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'ce-id': id, 'ce-source': EVENT_SOURCE, 'ce-type': typeOf(id), 'ce-specversion': '1.0', 'content-type': 'application/json' },
        body: JSON.stringify(dataFor(id)),
        signal: AbortSignal.timeout(30_000),
      });
      const text = await res.text();
      if (res.status !== 202) throw new Error(`POST /ingest answered ${res.status}: ${text.slice(0, 300)}`);
    }
  };
}

export async function runSparsePhase(options: SparseOptions, ctx: CostContext): Promise<SparseReport> {
  const { emulators, receiver, signal, progress } = ctx;
  const began = performance.now();
  const n = options.destinations;
  progress(`sparse: starting Herald in its own process (project ${SPARSE_PROJECT}, HERALD_TIME_SCALE=1)`, true);
  const stack = await CostStack.start(
    CostStack.env(emulators, SPARSE_PROJECT, {
      HERALD_TIME_SCALE: '1',
      // The backstop is part of what an event costs: reconciled within the run (as in the cost runs).
      HERALD_RECONCILE_AFTER_MS: '8000',
      HERALD_RECONCILE_INTERVAL_MS: '1000',
    }),
    signal,
    "the sparse scenario's Herald",
    'sparse stack',
  );
  ctx.addCleanup(`stopping the sparse scenario's Herald (project ${SPARSE_PROJECT})`, () => stack.stop());
  const { url, adminToken, ingestToken } = stack.ready;
  const put = async (id: string, type: string) => {
    const res = await fetch(`${url}/admin/destinations/${id}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: `${receiver.url}${PATH}`, eventTypes: [type] }),
      signal: AbortSignal.timeout(30_000),
    });
    if (res.status !== 201 && res.status !== 200) throw new Error(`PUT /admin/destinations/${id} answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
  };
  const tracker = new Tracker('sparse');
  receiver.route(PATH, tracker, 'ce-id-header');
  const send = sparseSender(`${url}/ingest`, ingestToken);

  // Warm-up, not counted: the shared lanes, connections and JIT, through a destination of its own.
  await put('sparse-warm', `${TYPE_PREFIX}warm`);
  const warmIds = Array.from({ length: 20 }, (_, i) => `${ctx.runId}-sparse-warm-${i}-warm`);
  const warm = await runLoad(send, tracker, warmIds, { batchSize: 1, concurrency: options.concurrency, stallMs: options.stallMs, signal, progress });
  if (!warm.complete) throw new Error(`sparse warm-up failed: ${warm.problem}`);

  progress(`sparse: registering ${n} destinations through the admin API`, true);
  const registerBegan = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(REGISTER_CONCURRENCY, n) }, async () => {
      while (next < n && !signal.aborted) {
        const i = next++;
        await put(`sparse-${i}`, `${TYPE_PREFIX}${i}`);
      }
    }),
  );
  const registerSeconds = (performance.now() - registerBegan) / 1000;

  // What registering cost is registration's: the next look at the change feed (at the next event) replays the
  // new destinations to every instance. A few events to the warm-up destination bring that look; then let it finish.
  const lookIds = Array.from({ length: 4 }, (_, i) => `${ctx.runId}-sparse-look-${i}-warm`);
  const look = await runLoad(send, tracker, lookIds, { batchSize: 1, concurrency: 1, stallMs: options.stallMs, signal, progress });
  if (!look.complete) throw new Error(`sparse: the events after registration failed: ${look.problem}`);
  await quietFeed(stack, signal);

  const ids = Array.from({ length: n }, (_, i) => `${ctx.runId}-sparse-${i}`);
  const before = await stack.snapshot();
  const load = await runLoad(send, tracker, ids, { batchSize: 1, concurrency: options.concurrency, stallMs: options.stallMs, signal, progress });
  const { after: sent, settled } = await stack.settle(before, load.delivered, signal);
  progress('sparse: waiting for the deferred work (journal cleanup, folds, checks) to be done', true);
  const done = await deferredDone(stack, settled, before, signal);
  progress(`sparse: standing still ${IDLE_SECONDS} s, to take Herald's fixed polling out of the all-in figures`, true);
  const idleFrom = await stack.snapshot();
  await sleep(IDLE_SECONDS * 1000, signal);
  const idleTo = await stack.snapshot();
  await stack.stop();

  const d = subtract(settled.counters, before.counters);
  const wire = opsDelta(settled.counters.wire, before.counters.wire);
  const fs = totalOps(wire);
  const allInWire = opsDelta(done.snapshot.counters.wire, before.counters.wire);
  const deferredWire = opsDelta(done.snapshot.counters.wire, settled.counters.wire);
  const idle = totalOps(opsDelta(idleTo.counters.wire, idleFrom.counters.wire));
  const idleSeconds = (idleTo.at - idleFrom.at) / 1000;
  const allInSeconds = (done.snapshot.at - before.at) / 1000;
  const gross = totalOps(allInWire);
  const idleShare = (x: number) => (x / idleSeconds) * allInSeconds;
  const net = { reads: gross.reads - idleShare(idle.reads), writes: gross.writes - idleShare(idle.writes), deletes: gross.deletes - idleShare(idle.deletes) };
  const delivered = load.delivered;
  const per = (x: number, digits = 2) => (delivered > 0 ? round(x / delivered, digits) : undefined);
  const prices = GCP_LIST_PRICES.firestore.regional;
  const dollars = (o: { reads: number; writes: number; deletes: number }) =>
    delivered > 0 ? round(((o.reads * prices.readsPer100k + o.writes * prices.writesPer100k + o.deletes * prices.deletesPer100k) / 100_000 / delivered) * 1e6, 2) : undefined;
  const perOps = (o: { reads: number; writes: number; deletes: number }) => ({ reads: per(o.reads), writes: per(o.writes), deletes: per(o.deletes), dollarsPerMillion: dollars(o) });
  const recordedDelivered = d.recorded.DELIVERED;
  const problems = [...settled.problems, ...(done.complete ? [] : [`the deferred work was not done within ${DEFERRED_LIMIT_S} s of the last delivery: counted up to then`])];
  const complete = load.complete && delivered === n && recordedDelivered >= n;
  const fns = d.functions;
  const netPer = { reads: per(net.reads), writes: per(net.writes) };
  return {
    settings: { destinations: n, timeScale: stack.ready.timeScale, concurrency: options.concurrency },
    registerSeconds: round(registerSeconds, 1),
    sendSeconds: round((sent.at - before.at) / 1000, 1),
    countedSeconds: round((settled.at - before.at) / 1000, 1),
    allInSeconds: round(allInSeconds, 1),
    totalSeconds: round((performance.now() - began) / 1000, 1),
    delivered,
    recordedDelivered,
    firestore: {
      reads: per(fs.reads),
      writes: per(fs.writes),
      deletes: per(fs.deletes),
      byCollection: opsPerEvent(wire, delivered),
      ...(delivered > 0 ? { storeCounted: { reads: d.firestore.reads / delivered, writes: d.firestore.writes / delivered, deletes: d.firestore.deletes / delivered } } : {}),
    },
    ...(delivered > 0 ? { firestoreDollarsPerMillion: dollars(fs) } : {}),
    allIn: {
      gross: perOps(gross),
      net: perOps(net),
      idlePerMinute: { reads: round((idle.reads / idleSeconds) * 60, 1), writes: round((idle.writes / idleSeconds) * 60, 1), deletes: round((idle.deletes / idleSeconds) * 60, 1) },
      deferredByCollection: opsPerEvent(deferredWire, delivered),
      byCollection: opsPerEvent(allInWire, delivered),
      checks: subtract(done.snapshot.counters.checks, before.counters.checks),
      done: done.complete,
    },
    cpuMsPerDelivered: per(d.cpuMicros / 1000),
    invocationsPerDelivered: per(fns.ingest.requests + fns.route.requests + fns.deliver.requests),
    target: {
      reads: { limit: TARGETS.sparse.reads, measured: per(fs.reads) },
      writes: { limit: TARGETS.sparse.writes, measured: per(fs.writes) },
      met: delivered > 0 && fs.reads / delivered <= TARGETS.sparse.reads && fs.writes / delivered <= TARGETS.sparse.writes,
    },
    allInTarget: {
      reads: { limit: TARGETS.sparseAllIn.reads, measured: netPer.reads },
      writes: { limit: TARGETS.sparseAllIn.writes, measured: netPer.writes },
      met: delivered > 0 && done.complete && (netPer.reads ?? Infinity) <= TARGETS.sparseAllIn.reads && (netPer.writes ?? Infinity) <= TARGETS.sparseAllIn.writes,
    },
    problems,
    complete,
    ...(complete ? {} : { problem: load.problem ?? `${recordedDelivered}/${n} delivery records written DELIVERED` }),
  };
}

/** Waits (at most FEED_LIMIT_S) until the change feed reads no more than it does standing still: registration's replay is over. */
async function quietFeed(stack: CostStack, signal: AbortSignal): Promise<void> {
  const reads = (s: Snapshot) => s.counters.wire['destination-changes']?.reads ?? 0;
  const until = performance.now() + FEED_LIMIT_S * 1000;
  let last = await stack.snapshot();
  while (performance.now() < until) {
    await sleep(FEED_QUIET_MS, signal);
    const now = await stack.snapshot();
    if (reads(now) - reads(last) <= FEED_QUIET_READS) return;
    last = now;
  }
}

/**
 * Waits until what the traffic left to do is done: every intake batch since `before` removed by
 * the reconciler, and a suspension check run, begun after `settled`, that found no destination
 * active (every count folded or judged, nothing left for a later run). At most DEFERRED_LIMIT_S.
 */
async function deferredDone(stack: CostStack, settled: Snapshot, before: Snapshot, signal: AbortSignal): Promise<{ snapshot: Snapshot; complete: boolean }> {
  const unreconciled = (s: Snapshot) => s.counters.backstop.journalWrites - s.counters.backstop.batchesRemoved;
  const until = performance.now() + DEFERRED_LIMIT_S * 1000;
  // A run that began before the first event and ended after `settled` could be idle: runs take well under the load's time.
  const idleRunsBefore = settled.counters.checks.idleRuns;
  for (;;) {
    const now = await stack.snapshot();
    const reconciled = unreconciled(now) <= unreconciled(before);
    const checked = now.counters.checks.idleRuns > idleRunsBefore;
    if (reconciled && checked) return { snapshot: now, complete: true };
    if (performance.now() > until) return { snapshot: now, complete: false };
    await sleep(1000, signal);
  }
}

export function formatSparseReport(r: SparseReport): string {
  const mark = (met: boolean) => (met ? 'MET' : 'NOT MET');
  const t = r.target;
  const s = r.firestore.storeCounted;
  const a = r.allIn;
  return [
    '',
    `Sparse: ${r.settings.destinations} destinations registered through the admin API just before (in ${r.registerSeconds ?? '—'} s), each for a type of its own, then one event each`,
    `  (POST /ingest, one event per request, ${r.settings.concurrency} in flight); Herald in its own process at HERALD_TIME_SCALE=${r.settings.timeScale}; counted from the first send to the last counter flush (${r.countedSeconds ?? '—'} s, sending ${r.sendSeconds ?? '—'} s); the scenario took ${r.totalSeconds ?? '—'} s.`,
    '',
    table(
      ['per delivered event', 'sparse'],
      [
        ['delivered (records written DELIVERED)', `${r.delivered}/${r.settings.destinations} (${r.recordedDelivered})`],
        ['Firestore reads / writes / deletes, as billed', `${r.firestore.reads ?? '—'} / ${r.firestore.writes ?? '—'} / ${r.firestore.deletes ?? '—'}`],
        ["the stores' own count: reads / writes / deletes", s ? [s.reads, s.writes, s.deletes].map((v) => v.toFixed(2)).join(' / ') : '—'],
        ['Firestore alone, $ per million (us-central1)', r.firestoreDollarsPerMillion === undefined ? '—' : `$${r.firestoreDollarsPerMillion.toFixed(2)}`],
        ['Herald CPU, ms (raw)', r.cpuMsPerDelivered],
        ['invocations (ingest + route + deliver)', r.invocationsPerDelivered],
      ],
    ),
    '',
    (({ header, rows }) => table(header, rows))(collectionTable([{ name: 'sparse', perEvent: r.firestore.byCollection }])),
    '',
    '',
    `All-in: from the first send until the deferred work was done (${r.allInSeconds ?? '—'} s: journal cleanup, folds, a suspension check that found nothing left; ${a.checks.runs} checks, ${a.checks.folded} rollups written)${a.done ? '' : ' — NOT DONE within the limit'}:`,
    '',
    table(
      ['per delivered event, all-in', 'reads', 'writes', 'deletes', '$ per million (Firestore)'],
      [
        ['everything billed in the span', a.gross.reads, a.gross.writes, a.gross.deletes, a.gross.dollarsPerMillion],
        [`net of the fixed polling (standing still: ${a.idlePerMinute.reads ?? '—'} R, ${a.idlePerMinute.writes ?? '—'} W, ${a.idlePerMinute.deletes ?? '—'} D a minute)`, a.net.reads, a.net.writes, a.net.deletes, a.net.dollarsPerMillion],
      ],
    ),
    '',
    (({ header, rows }) => table(header, rows))(collectionTable([{ name: 'sparse, while events flow', perEvent: r.firestore.byCollection }, { name: 'after, until done', perEvent: a.deferredByCollection }, { name: 'all-in (gross)', perEvent: a.byCollection }])),
    '',
    `Target: sparse all-in, net of the fixed polling, ≤ ${r.allInTarget.writes.limit} writes and ≤ ${r.allInTarget.reads.limit} reads per event: ${r.allInTarget.writes.measured ?? '—'} writes, ${r.allInTarget.reads.measured ?? '—'} reads — ${mark(r.allInTarget.met)}`,
    `Target: ≤ ${t.writes.limit} Firestore writes and ≤ ${t.reads.limit} reads per event in the sparse scenario (every collection, as billed): ${t.writes.measured ?? '—'} writes, ${t.reads.measured ?? '—'} reads — ${mark(t.met)}`,
    ...r.problems.map((p) => `sparse: ${p}`),
    ...(r.problem ? [`INCOMPLETE sparse run: ${r.problem}`] : []),
  ].join('\n');
}
