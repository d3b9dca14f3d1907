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
import { CostContext, CostStack, dataFor, TARGETS } from './cost';
import { subtract } from './cost-counters';
import { GCP_LIST_PRICES } from '../../shared/domain/usage/cost-model';
import { collectionTable, opsDelta, OpsByCollection, perEvent as opsPerEvent, totalOps } from './firestore-meter';
import { EVENT_SOURCE, runLoad, Send } from './load';
import { Tracker } from './receiver';
import { round, table } from './stats';

export const SPARSE_PROJECT = 'herald-bench-sparse';
const PATH = '/sparse';
const TYPE_PREFIX = 'com.example.bench.sparse.';
/** Admin PUTs in flight while registering. */
const REGISTER_CONCURRENCY = 8;

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
  /** The whole scenario, start of the child to its stop. */
  totalSeconds?: number;
  delivered: number;
  recordedDelivered: number;
  /** Per delivered event, as billed. */
  firestore: { reads?: number; writes?: number; deletes?: number; byCollection: OpsByCollection; storeCounted?: { reads: number; writes: number; deletes: number } };
  /** Firestore alone, us-central1, $ per million such events. */
  firestoreDollarsPerMillion?: number;
  cpuMsPerDelivered?: number;
  invocationsPerDelivered?: number;
  target: { reads: { limit: number; measured?: number }; writes: { limit: number; measured?: number }; met: boolean };
  problems: string[];
  complete: boolean;
  problem?: string;
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

  const ids = Array.from({ length: n }, (_, i) => `${ctx.runId}-sparse-${i}`);
  const before = await stack.snapshot();
  const load = await runLoad(send, tracker, ids, { batchSize: 1, concurrency: options.concurrency, stallMs: options.stallMs, signal, progress });
  const { after: sent, settled } = await stack.settle(before, load.delivered, signal);
  await stack.stop();

  const d = subtract(settled.counters, before.counters);
  const wire = opsDelta(settled.counters.wire, before.counters.wire);
  const fs = totalOps(wire);
  const delivered = load.delivered;
  const per = (x: number, digits = 2) => (delivered > 0 ? round(x / delivered, digits) : undefined);
  const prices = GCP_LIST_PRICES.firestore.regional;
  const recordedDelivered = d.recorded.DELIVERED;
  const problems = [...settled.problems];
  const complete = load.complete && delivered === n && recordedDelivered >= n;
  const fns = d.functions;
  return {
    settings: { destinations: n, timeScale: stack.ready.timeScale, concurrency: options.concurrency },
    registerSeconds: round(registerSeconds, 1),
    sendSeconds: round((sent.at - before.at) / 1000, 1),
    countedSeconds: round((settled.at - before.at) / 1000, 1),
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
    ...(delivered > 0 ? { firestoreDollarsPerMillion: round(((fs.reads * prices.readsPer100k + fs.writes * prices.writesPer100k + fs.deletes * prices.deletesPer100k) / 100_000 / delivered) * 1e6, 2) } : {}),
    cpuMsPerDelivered: per(d.cpuMicros / 1000),
    invocationsPerDelivered: per(fns.ingest.requests + fns.route.requests + fns.deliver.requests),
    target: {
      reads: { limit: TARGETS.sparse.reads, measured: per(fs.reads) },
      writes: { limit: TARGETS.sparse.writes, measured: per(fs.writes) },
      met: delivered > 0 && fs.reads / delivered <= TARGETS.sparse.reads && fs.writes / delivered <= TARGETS.sparse.writes,
    },
    problems,
    complete,
    ...(complete ? {} : { problem: load.problem ?? `${recordedDelivered}/${n} delivery records written DELIVERED` }),
  };
}

export function formatSparseReport(r: SparseReport): string {
  const mark = (met: boolean) => (met ? 'MET' : 'NOT MET');
  const t = r.target;
  const s = r.firestore.storeCounted;
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
    `Target: ≤ ${t.writes.limit} Firestore writes and ≤ ${t.reads.limit} reads per event in the sparse scenario (every collection, as billed): ${t.writes.measured ?? '—'} writes, ${t.reads.measured ?? '—'} reads — ${mark(t.met)}`,
    ...r.problems.map((p) => `sparse: ${p}`),
    ...(r.problem ? [`INCOMPLETE sparse run: ${r.problem}`] : []),
  ].join('\n');
}
