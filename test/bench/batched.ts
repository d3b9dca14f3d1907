/**
 * `npm run bench -- batched`: one batched destination (issue 37's target: `maxEvents: 100,
 * maxWaitMs: 1000`) taking N events, paced, through Herald's local stack in this process.
 *
 * The receiver parses each request as the CloudEvents batched content mode and counts requests,
 * events received once and again, and each event's added latency (first receipt − the moment its
 * POST /ingest began). Firestore operations come from the runtime's own counters; Pub/Sub
 * traffic is one lane message published and one pulled per event (measured on the wire by
 * their size); CPU is this whole process's (receiver and load generator included: an upper
 * bound). Then the cost per million events at GCP list prices (cost-model.ts), every term.
 */
import { performance } from 'node:perf_hooks';
import type { Firestore } from '@google-cloud/firestore';
import { startLocalStack } from '../../shared/apps/local/stack';
import { toLaneMessage } from '../../shared/domain/lane-message';
import { createLogger } from '../../shared/log';
import { COLLECTIONS, FIRESTORE_UNINDEXED_FIELDS } from '../../shared/firestore-schema';
import { COMPONENT_LABELS, COMPONENTS, costPerMillion, DEFAULT_ASSUMPTIONS, GCP_LIST_PRICES, messageBytes, PerEventUsage, storedGiBMonths } from './cost-model';
import { clearFirestore, purgeProject } from './housekeeping';
import { BenchFailure, BenchHarness, flagsOf, intOption, mark } from './harness';
import { BenchReceiver, Tracker } from './receiver';
import { percentile, round, table } from './stats';

export const BATCHED_HELP = `Usage: npm run bench -- batched [options]
  --events N         events sent (BENCH_BATCHED_EVENTS; 10000)
  --rate R           events per second, paced (BENCH_BATCHED_RATE; 500)
  --ingest-batch K   events per POST /ingest (BENCH_BATCHED_INGEST; 10)
  --max-events E     the destination's batch.maxEvents (BENCH_BATCHED_MAX_EVENTS; 100)
  --max-wait-ms W    the destination's batch.maxWaitMs (BENCH_BATCHED_MAX_WAIT_MS; 1000)
  --stall-timeout S  give up when nothing arrives for S seconds (BENCH_STALL_TIMEOUT; 30)`;

const PROJECT = `herald-bench-batched-${Date.now().toString(36)}`;
const SOURCE = '/herald-bench-batched';
const TYPE = 'com.example.batched';
/** Targets of issue 37. */
const REQUESTS_PER_10K = 110;
const COST_MAX = 0.1;

export async function runBatchedBench(args: string[], harness: BenchHarness): Promise<number> {
  const flags = flagsOf(args);
  const events = intOption('--events', flags['--events'], 'BENCH_BATCHED_EVENTS', 10_000, 1);
  const rate = intOption('--rate', flags['--rate'], 'BENCH_BATCHED_RATE', 500, 1);
  const perPost = intOption('--ingest-batch', flags['--ingest-batch'], 'BENCH_BATCHED_INGEST', 10, 1);
  const maxEvents = intOption('--max-events', flags['--max-events'], 'BENCH_BATCHED_MAX_EVENTS', 100, 2);
  const maxWaitMs = intOption('--max-wait-ms', flags['--max-wait-ms'], 'BENCH_BATCHED_MAX_WAIT_MS', 1000, 100);
  const stallMs = intOption('--stall-timeout', flags['--stall-timeout'], 'BENCH_STALL_TIMEOUT', 30, 1) * 1000;
  const emulators = await harness.emulators();
  const receiver = await new BenchReceiver().start();
  harness.addCleanup('receiver', () => receiver.stop());
  const tracker = new Tracker('batched');
  receiver.route('/batched', tracker, 'batch-body');
  const stack = await startLocalStack({ port: 0, emulators, env: { ...process.env, HERALD_PROJECT_ID: PROJECT, HERALD_LOG_LEVEL: 'WARNING' }, log: createLogger({ level: 'ERROR', write: () => undefined }), onProgress: () => undefined });
  harness.addCleanup('herald', () => stack.stop());
  harness.addCleanup('the project', () => Promise.all([purgeProject(PROJECT), clearFirestore(emulators, PROJECT)]).then(() => undefined));
  const res = await fetch(`${stack.url}/admin/destinations/batched`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${stack.config.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url: `${receiver.url}/batched`, eventTypes: [TYPE], batch: { maxEvents, maxWaitMs } }),
  });
  if (res.status !== 201) throw new BenchFailure(`registering the batched destination: ${res.status} ${await res.text()}`);

  const event = (i: number) => ({ specversion: '1.0', id: `e-${i}`, source: SOURCE, type: TYPE, datacontenttype: 'application/json', data: { i, pad: 'x'.repeat(900) } });
  // What one event's lane message weighs on the wire (published once, pulled once).
  const sample = event(0);
  const laneBytes = messageBytes(
    ...((m) => [m.data, m.attributes] as const)(
      toLaneMessage({ kind: 'first', destinationId: 'batched', publishedAt: new Date().toISOString(), intake: 'i-0000000000000-0000', event: { attributes: { specversion: '1.0', id: sample.id, source: SOURCE, type: TYPE, datacontenttype: 'application/json' }, data: Buffer.from(JSON.stringify(sample.data)) } }),
    ),
  );
  harness.note(`sending ${events} events at ${rate}/s, ${perPost} per POST /ingest, to a destination batching ${maxEvents} events or ${maxWaitMs} ms`);
  const ops = stack.runtime.firestoreOps;
  const ops0 = { ...ops };
  const cpu0 = process.cpuUsage();
  const start = performance.now();
  const posts: Promise<void>[] = [];
  for (let i = 0; i < events; i += perPost) {
    const due = start + (i / rate) * 1000;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const batch = Array.from({ length: Math.min(perPost, events - i) }, (_, k) => event(i + k));
    const at = performance.now();
    tracker.markSent(batch.map((e) => e.id), at);
    posts.push(
      fetch(`${stack.url}/ingest`, { method: 'POST', headers: { authorization: `Bearer ${stack.config.ingestToken}`, 'content-type': 'application/cloudevents-batch+json' }, body: JSON.stringify(batch) }).then(async (r) => {
        if (r.status !== 202) throw new BenchFailure(`POST /ingest answered ${r.status}: ${(await r.text()).slice(0, 200)}`);
      }),
    );
  }
  await Promise.all(posts);
  let [seen, lastChange] = [0, performance.now()];
  while (tracker.arrived.size < events && performance.now() - lastChange < stallMs) {
    await new Promise((r) => setTimeout(r, 100));
    if (tracker.arrived.size !== seen) [seen, lastChange] = [tracker.arrived.size, performance.now()];
  }
  const seconds = (performance.now() - start) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const received = tracker.arrived.size;
  const requests = receiver.requestsOn('/batched');
  const again = tracker.duplicates;
  const added = [...tracker.arrived].map(([id, at]) => at - tracker.sent.get(id)!).sort((a, b) => a - b);
  const per = (n: number) => n / Math.max(1, received);
  // A delivered event's record as stored, over the retention: its group documents (members, what they share, the arrays) and
  // their index entries, per member, by Firestore's storage size rules (firestoreStoredBytes).
  const recordBytes = await groupMemberStoredBytes(stack.runtime.firestore, 'batched');
  const usage: PerEventUsage = {
    firestore: { reads: per(ops.reads - ops0.reads), writes: per(ops.writes - ops0.writes), deletes: per(ops.deletes - ops0.deletes) },
    pubsub: { publish: { messages: 1, bytes: laneBytes }, delivery: { messages: 1, bytes: laneBytes } },
    invocations: 1 / perPost,
    cpuSeconds: per((cpu.user + cpu.system) / 1e6),
    storedGiBMonths: storedGiBMonths(recordBytes, stack.config.deliveryRetentionDays),
  };
  const cost = costPerMillion(usage, GCP_LIST_PRICES, DEFAULT_ASSUMPTIONS, { firestore: 'regional', billing: 'request' });
  const requestsMax = Math.ceil((REQUESTS_PER_10K * events) / 10_000);
  const latencyMax = maxWaitMs + 100;
  const p50 = percentile(added, 50) ?? Infinity;
  const targets = [
    `Target: ≤ ${requestsMax} requests for ${events} events — ${requests} — ${mark(requests <= requestsMax && received === events)}`,
    `Target: every event received, once (duplicates only after a fault) — ${received}/${events}, ${again} again — ${mark(received === events && again === 0)}`,
    `Target: p50 added latency ≤ ${latencyMax} ms — ${round(p50, 0)} ms — ${mark(p50 <= latencyMax)}`,
    `Target: ≤ $${COST_MAX.toFixed(2)} per million events at batch ${maxEvents}, every term (request-based) — $${cost.total.toFixed(3)} — ${mark(cost.total <= COST_MAX)}`,
  ];
  process.stdout.write(
    [
      '',
      `Batched delivery: ${events} events in ${round(seconds, 1)} s to one destination (batch ${maxEvents} events / ${maxWaitMs} ms), ${perPost} per POST /ingest at ${rate}/s`,
      table(
        ['requests', 'events per request', 'received', 'again', 'added p50 ms', 'p90 ms', 'p99 ms', 'reads/event', 'writes/event', 'CPU ms/event'],
        [[requests, round(received / Math.max(1, requests), 1), received, again, round(p50, 0), round(percentile(added, 90) ?? NaN, 0), round(percentile(added, 99) ?? NaN, 0), round(usage.firestore.reads, 3), round(usage.firestore.writes, 3), round(usage.cpuSeconds * 1000, 2)]],
      ),
      `Cost per million events (Firestore us-central1, request-based; Pub/Sub: one ${laneBytes}-byte lane message published and pulled per event; a record ${round(recordBytes, 0)} bytes as stored in its group with its index entries, over ${stack.config.deliveryRetentionDays} days; CPU: this whole process, an upper bound)`,
      table(['component', '$ per million'], [...COMPONENTS.map((c) => [COMPONENT_LABELS[c], round(cost[c], 4)]), ['total', round(cost.total, 4)]]),
      ...targets,
      JSON.stringify({ bench: 'batched', events, rate, perPost, maxEvents, maxWaitMs, requests, received, again, addedMs: { p50, p90: percentile(added, 90), p99: percentile(added, 99) }, usage, cost }),
      '',
    ].join('\n'),
  );
  return targets.every((t) => t.endsWith('— MET')) ? 0 : 1;
}

/**
 * What a document holds in Firestore storage, its index entries included
 * (https://cloud.google.com/firestore/docs/storage-size): the document (its name, each field's
 * name and value, 32 bytes) and, for every field the automatic single-field indexes cover, an
 * entry per value (the document's name, the collection id, the value, 32 bytes): two for a
 * scalar (ascending and descending), one per element of an array (array-contains). Maps
 * exempted from indexing (FIRESTORE_UNINDEXED_FIELDS: a group's `members` and `common`) have none.
 */
export function firestoreStoredBytes(collection: string, id: string, data: Record<string, unknown>): number {
  const name = collection.length + 1 + id.length + 1 + 16;
  const size = (v: unknown): number => {
    if (v === null || v === undefined) return 1;
    if (typeof v === 'string') return Buffer.byteLength(v) + 1;
    if (typeof v === 'number' || typeof v === 'boolean') return 8;
    if (v instanceof Date || (typeof v === 'object' && v !== null && 'toDate' in v)) return 8;
    if (Array.isArray(v)) return v.reduce((n: number, x) => n + size(x), 0);
    return Object.entries(v as Record<string, unknown>).reduce((n, [k, x]) => n + k.length + 1 + size(x), 0);
  };
  const unindexed = new Set<string>(FIRESTORE_UNINDEXED_FIELDS.filter((f) => f.collection === collection).map((f) => f.field));
  let bytes = name + 32;
  for (const [field, value] of Object.entries(data)) {
    bytes += field.length + 1 + size(value);
    if (unindexed.has(field)) continue;
    const entry = (v: unknown) => name + collection.length + 1 + field.length + 1 + size(v) + 32;
    bytes += Array.isArray(value) ? value.reduce((n: number, v) => n + entry(v), 0) : 2 * entry(value);
  }
  return bytes;
}

/** A grouped record's stored bytes, on average over the destination's group documents (firestoreStoredBytes). */
export async function groupMemberStoredBytes(firestore: Firestore, destinationId: string): Promise<number> {
  const groups = await firestore.collection(COLLECTIONS.deliveryGroups).where('destinations', 'array-contains', destinationId).get();
  const grouped = groups.docs.reduce((n, g) => ({ bytes: n.bytes + firestoreStoredBytes(COLLECTIONS.deliveryGroups, g.id, g.data()), members: n.members + (g.get('members') as unknown[]).length }), { bytes: 0, members: 0 });
  return grouped.bytes / Math.max(1, grouped.members);
}
