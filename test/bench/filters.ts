/**
 * Destination filters (issue 56). Two parts:
 *
 * - The evaluation micro-benchmark (`filterEvaluation`, also printed by `npm run bench`): a
 *   filter's verdict on one event for one destination, p50 and p99 over many events, data
 *   parsing shared as routing shares it (target: p50 ≤ 10 µs).
 * - `npm run bench -- filters`: the micro-benchmark, then the cost scenario: Herald in its own
 *   process (cost.ts's CostStack, metered), 20 destinations on one type. First none filters,
 *   then 10 of them filter 90 % of the events out; Firestore writes and lane messages per
 *   accepted event of each, and how far they fell (expected: by the dropped share of deliveries,
 *   20 → 11 per event). One event per request, so that each taken event is a lane message of
 *   its own (with 100 a request, a destination's events of a request share one bundle).
 */
import { performance } from 'node:perf_hooks';
import { compileFilter, FilterInput } from '../../shared/domain/destinations/event-filter';
import { HeraldEvent } from '../../shared/domain/events/event';
import { CostStack } from './cost';
import { subtract } from './cost-counters';
import { collectionTable, opsDelta, OpsByCollection, perEvent, totalOps } from './firestore-meter';
import { realisticData } from './event-payload';
import { BenchHarness, flagsOf, intOption } from './harness';
import { clearFirestore, purgeProject } from './housekeeping';
import { round, table } from './stats';

export const FILTERS_HELP = `Usage: npm run bench -- filters [options]
  --events N   events per cost run (BENCH_FILTER_EVENTS; 200), one per POST /ingest
  --rate R     events per second, paced, in each cost run (BENCH_FILTER_RATE; 5): both runs last as long, so what is written by time compares
  --cost 0|1   run the cost scenario after the micro-benchmark (BENCH_FILTER_COST; 1)`;

const PROJECT = 'herald-bench-filters';
const SOURCE = '/herald-bench-filters';
const DESTINATIONS = 20;
const FILTERING = 10;
/** Takes 10 % of the events: `pct` is 0–99, spread evenly. */
const FILTER = 'data.pct < 10 && ce.type.startsWith("com.example.filters")';

/** The filters the micro-benchmark times: one per shape the docs show. */
const SHAPES = [
  'data.amount > 1000',
  'data.customer.tier in ["gold", "silver"] && data.site == 42',
  'ce.siteid == "42" && data.customer.name.startsWith("Acme")',
  'has(data.customer.vip) || data.items.exists(i, i.qty > 10)',
];

export interface FilterEvaluation {
  /** A filter's text, or `(data parse)`: parsing an event's data once for all its filters. */
  filter: string;
  p50Ns: number;
  p99Ns: number;
}

/** Each shape's verdict timed on `events` distinct events (1 KB of JSON data each), data parsed once per event as routing does. */
export function filterEvaluation(events = 20_000): FilterEvaluation[] {
  const made = Array.from({ length: events }, (_, i): HeraldEvent => {
    const data = { ...realisticData(`e-${i}`, 1024), amount: i % 2000, site: i % 50, customer: { tier: ['gold', 'bronze'][i % 2], name: i % 3 ? 'Acme' : 'Bolt', ...(i % 7 ? {} : { vip: true }) }, items: [{ qty: i % 13 }, { qty: 2 }] };
    return { attributes: { specversion: '1.0', id: `e-${i}`, source: SOURCE, type: 'com.example.order', siteid: String(i % 60) }, data: Buffer.from(JSON.stringify(data)) };
  });
  const parse = made.map((e) => {
    const t0 = performance.now();
    void new FilterInput(e).context;
    return (performance.now() - t0) * 1e6;
  });
  return [...SHAPES.map((source) => {
    const compiled = compileFilter(source);
    if (!compiled.ok) throw new Error(`bench filter ${source} does not compile: ${compiled.problem.message}`);
    const inputs = made.map((e) => new FilterInput(e));
    // The data parse is the routing's, once per event for all its filters: outside the timing.
    for (const input of inputs) void input.context;
    for (let i = 0; i < 2000; i++) compiled.filter.evaluate(inputs[i % inputs.length]!);
    const ns = inputs.map((input) => {
      const t0 = performance.now();
      compiled.filter.evaluate(input);
      return (performance.now() - t0) * 1e6;
    });
    return percentiles(source, ns);
  }), percentiles('(data parse, once per event for all its filters)', parse)];
}

function percentiles(filter: string, ns: number[]): FilterEvaluation {
  ns.sort((a, b) => a - b);
  return { filter, p50Ns: Math.round(ns[Math.floor(ns.length / 2)]!), p99Ns: Math.round(ns[Math.floor(ns.length * 0.99)]!) };
}

export function formatFilterEvaluation(rows: readonly FilterEvaluation[]): string {
  const worst = Math.max(...rows.filter((r) => !r.filter.startsWith('(')).map((r) => r.p50Ns));
  return [
    'Filter evaluation (CEL, per event per destination; target p50 ≤ 10 µs):',
    table(['filter', 'p50 µs', 'p99 µs'], rows.map((r) => [r.filter, round(r.p50Ns / 1000, 2), round(r.p99Ns / 1000, 2)])),
    `  worst p50 ${round(worst / 1000, 2)} µs: ${worst <= 10_000 ? 'met' : 'NOT met'}`,
  ].join('\n');
}

export interface CostRun {
  name: string;
  events: number;
  deliveries: number;
  /** Delivery records written, as members of a group or documents of their own: one per delivery, and per retry. */
  records: number;
  writes: number;
  laneMessages: number;
  reads: number;
  /** Firestore as billed, by collection (the meter on the client), for the run. */
  wire: OpsByCollection;
}

export async function runFilterBench(args: readonly string[], harness: BenchHarness): Promise<number> {
  const flags = flagsOf(args);
  const events = intOption('--events', flags['--events'], 'BENCH_FILTER_EVENTS', 200, 100);
  const cost = intOption('--cost', flags['--cost'], 'BENCH_FILTER_COST', 1, 0);
  const rate = intOption('--rate', flags['--rate'], 'BENCH_FILTER_RATE', 5, 1);
  const micro = filterEvaluation();
  process.stdout.write(`${formatFilterEvaluation(micro)}\n`);
  if (!cost) return 0;

  const emulators = await harness.emulators();
  const stack = await CostStack.start(CostStack.env(emulators, PROJECT, { HERALD_RECONCILE_AFTER_MS: '8000', HERALD_RECONCILE_INTERVAL_MS: '1000' }), harness.signal, "the filter bench's Herald", 'filters stack');
  harness.addCleanup("stopping the filter bench's Herald", () => stack.stop());
  harness.addCleanup('the project', () => Promise.all([purgeProject(PROJECT), clearFirestore(emulators, PROJECT)]).then(() => undefined));
  const receiver = await startNullReceiver();
  harness.addCleanup('the receiver', () => receiver.stop());
  const { url, adminToken, ingestToken } = stack.ready;
  const put = async (id: string, spec: Record<string, unknown>) => {
    const res = await fetch(`${url}/admin/destinations/${id}`, { method: 'PUT', headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' }, body: JSON.stringify(spec) });
    if (res.status !== 201 && res.status !== 200) throw new Error(`PUT /admin/destinations/${id} answered ${res.status}: ${await res.text()}`);
  };
  const runs: CostRun[] = [];
  // A warm-up run first, not reported: the first run of a fresh Herald pays for its caches, connections and JIT.
  for (const [kind, filtered] of [['warm', false], ['plain', false], ['filtered', true]] as const) {
    const type = `com.example.filters.${kind}`;
    // The warm-up needs only a few events: caches, connections and JIT, not a measurement.
    const n = kind === 'warm' ? Math.min(events, 100) : events;
    for (let d = 0; d < DESTINATIONS; d++) await put(`${kind}-${d}`, { url: `${receiver.url}/d${d}`, eventTypes: [type], ...(filtered && d < FILTERING ? { filter: FILTER } : {}) });
    const expected = n * (DESTINATIONS - FILTERING) + (filtered ? n / 10 : n) * FILTERING;
    harness.progress(`filters: ${n} events to ${DESTINATIONS} destinations, ${filtered ? `${FILTERING} filtering 90 % out` : 'none filtering'}`, true);
    const before = await stack.snapshot();
    // One event a request (K = 1): each taken event is its own lane message, so what a filter drops shows in them too.
    let next = 0;
    const t0 = performance.now();
    const send = async () => {
      for (let i = next++; i < n; i = next++) {
        const wait = t0 + (i * 1000) / rate - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        const res = await fetch(`${url}/ingest`, {
          method: 'POST',
          headers: { authorization: `Bearer ${ingestToken}`, 'ce-id': `${type}-${i}`, 'ce-source': SOURCE, 'ce-type': type, 'ce-specversion': '1.0', 'content-type': 'application/json' },
          body: JSON.stringify({ ...realisticData(`${type}-${i}`, 1024), pct: i % 100 }),
        });
        if (res.status !== 202) throw new Error(`POST /ingest answered ${res.status}: ${await res.text()}`);
      }
    };
    await Promise.all(Array.from({ length: 8 }, send));
    // Every delivery recorded (settle waits 10 s at most): until the count stops moving for 2 min (a retry after a timeout on a busy machine waits its backoff, unscaled here).
    let last = -1;
    let movedAt = performance.now();
    for (;;) {
      const delivered = (await stack.snapshot()).counters.recorded.DELIVERED - before.counters.recorded.DELIVERED;
      if (delivered >= expected) break;
      if (delivered !== last) [last, movedAt] = [delivered, performance.now()];
      else if (performance.now() - movedAt > 120_000) throw new Error(`${delivered} of ${expected} deliveries recorded; none for 2 min`);
      harness.progress(`filters: ${delivered} of ${expected} deliveries`);
      await new Promise((r) => setTimeout(r, 500));
    }
    const { settled } = await stack.settle(before, expected, harness.signal);
    const delta = subtract(settled.counters, before.counters);
    if (kind !== 'warm') runs.push({ name: filtered ? `${FILTERING} of ${DESTINATIONS} filter 90 % out` : 'no filter', events, deliveries: delta.recorded.DELIVERED, records: delta.groupedRecords + delta.ownRecords, writes: delta.firestore.writes, laneMessages: delta.published.lane.messages, reads: delta.firestore.reads, wire: opsDelta(settled.counters.wire, before.counters.wire) });
  }
  const [plain, filtered] = runs as [CostRun, CostRun];
  process.stdout.write(`\n${formatFilterCost(plain, filtered)}\n`);
  const byCollection = collectionTable(runs.map((r) => ({ name: r.name, perEvent: perEvent(r.wire, r.events) })));
  process.stdout.write(`\nFirestore by collection, as billed, per accepted event (reads / writes / deletes):\n${table(byCollection.header, byCollection.rows)}\n`);
  process.stdout.write(`${JSON.stringify({ filterEvaluation: micro, filterCost: runs })}\n`);
  return 0;
}

/**
 * Collections written for the destinations an event goes to: its delivery records (documents of
 * their own, or groups: one per account per commit), its counters (one per destination per flush,
 * or one shared by its sparse ones), its rate-control lease and its lane's backlog mark. A filter
 * that drops events takes them down; those written per commit or per flush fall less than the
 * deliveries when a destination still has deliveries in most flush intervals.
 */
const PER_DESTINATION = ['deliveries', 'delivery-groups', 'rates', 'rates-shared', 'rates-rollup', 'rate-control', 'lane-marks'];
/** Written per event batch (group commit of requests), whatever the destinations: a filter cannot take it down. */
const PER_EVENT = ['intake'];

const writesOf = (r: CostRun, collections: readonly string[] | ((c: string) => boolean)) =>
  Object.entries(r.wire)
    .filter(([c]) => (typeof collections === 'function' ? collections(c) : collections.includes(c)))
    .reduce((n, [, o]) => n + o.writes, 0);

/** Both runs side by side, per accepted event, each line with how far it fell and how far it should. */
export function formatFilterCost(plain: CostRun, filtered: CostRun): string {
  const dropped = 1 - filtered.deliveries / plain.deliveries;
  const expected = 1 - (DESTINATIONS - FILTERING * 0.9) / DESTINATIONS;
  const pct = (v: number) => `${round(v * 100, 1)} %`;
  const other = (c: string) => !PER_DESTINATION.includes(c) && !PER_EVENT.includes(c);
  const rows: [string, (r: CostRun) => number, string][] = [
    ['deliveries', (r) => r.deliveries, `${pct(expected)} (the dropped share)`],
    ['lane messages', (r) => r.laneMessages, `${pct(expected)} or more (coalescing: fewer events a destination, fewer share a message)`],
    ['delivery records written (grouped or own)', (r) => r.records, `${pct(expected)} (the dropped share)`],
    ['Firestore writes, all', (r) => totalOps(r.wire).writes, 'less than the dropped share: the journal is per event'],
    [`  per destination (${PER_DESTINATION.join(', ')})`, (r) => writesOf(r, PER_DESTINATION), `${pct(expected)} at most (per commit or flush: less while the filtered still have deliveries most seconds)`],
    [`  per event batch (${PER_EVENT.join(', ')}: the intake journal)`, (r) => writesOf(r, PER_EVENT), '0: cannot fall, one per request batch whatever the destinations'],
    ['  other (usage, samples, locks)', (r) => writesOf(r, other), 'not per delivery: by time'],
    ['Firestore reads', (r) => r.reads, '—'],
  ];
  const per = (r: CostRun, n: number) => round(n / r.events, 2);
  return [
    `Filter cost (per accepted event, ${plain.events} events a run, one per request, paced alike; ${FILTERING} of ${DESTINATIONS} destinations filtering 90 % out drop ${pct(dropped)} of the deliveries):`,
    table(
      ['per accepted event', plain.name, filtered.name, 'fell by', 'should fall by'],
      rows.map(([name, of, should]) => [name, per(plain, of(plain)), per(filtered, of(filtered)), of(plain) > 0 ? pct(1 - of(filtered) / of(plain)) : '—', should]),
    ),
  ].join('\n');
}

/** A loopback receiver answering 204 to everything. */
async function startNullReceiver(): Promise<{ url: string; stop: () => Promise<void> }> {
  const http = await import('node:http');
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, stop: () => new Promise((resolve) => server.close(() => resolve())) };
}
