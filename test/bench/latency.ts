/**
 * `npm run bench -- latency [--destinations D] [--rate R] [--seconds S]`: events paced at R/s
 * (one every 1000/R ms, not in bursts) for S seconds, spread evenly over D event types, one
 * destination per type on one loopback receiver; each event's latency is its send to its
 * arrival. The same shape goes through the bare emulator (D topics with a push subscription
 * each, straight to the receiver) before and after Herald, to bracket the noise. Herald gets
 * one event per `POST /ingest` (binary mode), as a producer sends when it does not batch.
 * Prints p50/p99 of each and what Herald adds over raw push (issue 24's target: p99 added
 * ≤ 50 ms at D = 1 and D = 20).
 */
import { performance } from 'node:perf_hooks';
import { PubSub } from '@google-cloud/pubsub';
import { startLocalStack } from '../../apps/local/stack';
import { createLogger } from '../../shared/log';
import { ArrivalCounter } from './fanout';
import { BenchFailure, BenchHarness, flagsOf, intOption, mark, startProfile } from './harness';
import { purgeProject } from './housekeeping';
import { distribution, Distribution, round, table } from './stats';

export const LATENCY_HELP = `Usage: npm run bench -- latency [options]
  --destinations D   destinations, one event type each (BENCH_LATENCY_DESTINATIONS; 1)
  --rate R           events per second, paced, over all destinations (BENCH_LATENCY_RATE; 100)
  --seconds S        how long each part sends (BENCH_LATENCY_SECONDS; 20)
  --warmup N         unmeasured events through each part first (BENCH_LATENCY_WARMUP; 100)
  --stall-timeout S  give up when nothing arrives for S seconds (BENCH_STALL_TIMEOUT; 30)
BENCH_PROFILE=file.cpuprofile writes a CPU profile of Herald's part.`;

const PROJECT = 'herald-bench-latency';
const RAW_PROJECT = 'herald-bench-latency-raw';
const SOURCE = '/herald-bench-latency';
/** Issue 24: what Herald may add at p99 over raw push. */
const ADDED_P99_TARGET_MS = 50;
const typeOf = (d: number) => `com.example.latency.${d}`;

interface PartResult {
  label: string;
  sent: number;
  arrived: number;
  latency: Distribution;
  /** How late the sender fired, worst case (ms): past a few ms the pacing itself is in question. */
  sendLagMaxMs: number;
}

export type SendOne = (id: string, d: number) => Promise<void>;

/** Fires one event every 1000/rate ms (each send not awaited), then waits for every arrival. */
export async function pacedPart(label: string, counter: ArrivalCounter, ids: readonly string[], destinations: number, rate: number, send: SendOne, stallMs: number, note: (line: string) => void): Promise<Omit<PartResult, 'label'> & { sentAt: Map<string, number> }> {
  const sentAt = new Map<string, number>();
  const pending: Promise<void>[] = [];
  const start = performance.now();
  let lagMax = 0;
  for (let i = 0; i < ids.length; i++) {
    const due = start + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    lagMax = Math.max(lagMax, performance.now() - due);
    sentAt.set(ids[i]!, performance.now());
    pending.push(send(ids[i]!, i % destinations));
  }
  await Promise.all(pending);
  let seen = -1;
  let lastChange = performance.now();
  const arrivedOf = () => ids.reduce((n, id) => n + (counter.arrived.has(id) ? 1 : 0), 0);
  while (arrivedOf() < ids.length && performance.now() - lastChange < stallMs) {
    await new Promise((r) => setTimeout(r, 100));
    const now = arrivedOf();
    if (now !== seen) [seen, lastChange] = [now, performance.now()];
  }
  const latencies = ids.filter((id) => counter.arrived.has(id)).map((id) => counter.arrived.get(id)! - sentAt.get(id)!);
  note(`${label}: ${latencies.length}/${ids.length} arrived`);
  return { sent: ids.length, arrived: latencies.length, latency: distribution(latencies), sendLagMaxMs: round(lagMax)!, sentAt };
}

export async function runLatencyBench(args: string[], harness: BenchHarness): Promise<number> {
  const flags = flagsOf(args);
  const destinations = intOption('--destinations', flags['--destinations'], 'BENCH_LATENCY_DESTINATIONS', 1, 1);
  const rate = intOption('--rate', flags['--rate'], 'BENCH_LATENCY_RATE', 100, 1);
  const seconds = intOption('--seconds', flags['--seconds'], 'BENCH_LATENCY_SECONDS', 20, 1);
  const warmup = intOption('--warmup', flags['--warmup'], 'BENCH_LATENCY_WARMUP', 100, 0);
  const stallMs = intOption('--stall-timeout', flags['--stall-timeout'], 'BENCH_STALL_TIMEOUT', 30, 1) * 1000;
  const note = harness.note;
  const emulators = await harness.emulators();
  const counter = await ArrivalCounter.started(harness);
  const run = Date.now();
  const idsFor = (label: string, n: number) => Array.from({ length: n }, (_, i) => `latency-${run}-${label}-${i}`);
  const events = rate * seconds;

  const raw = new PubSub({ projectId: RAW_PROJECT });
  harness.addCleanup('raw topics', () => raw.close().then(() => purgeProject(RAW_PROJECT)));
  const topics = await Promise.all(
    Array.from({ length: destinations }, async (_, d) => {
      const [topic] = await raw.createTopic(`latency-raw-${d}`);
      await topic.createSubscription(`latency-raw-${d}-push`, { pushConfig: { pushEndpoint: `${counter.url}/raw/${d}` }, ackDeadlineSeconds: 60 });
      // One message per publish request, as Herald's ingest gets one event per request.
      return raw.topic(topic.name, { batching: { maxMessages: 1 } });
    }),
  );
  const rawSend: SendOne = async (id, d) => {
    await topics[d]!.publishMessage({ data: Buffer.from('{}'), attributes: { 'ce-id': id, 'ce-source': SOURCE, 'ce-type': typeOf(d), 'ce-specversion': '1.0' } });
  };

  const stack = await startLocalStack({ port: 0, emulators, env: { ...process.env, HERALD_PROJECT_ID: PROJECT, HERALD_LOG_LEVEL: 'WARNING' }, log: createLogger({ level: 'WARNING', write: () => undefined }), onProgress: () => undefined });
  harness.addCleanup('herald', () => stack.stop({ purge: true }));
  for (let d = 0; d < destinations; d++) {
    const res = await fetch(`${stack.url}/admin/destinations/latency-${d}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${stack.config.adminToken}`, 'content-type': 'application/json' },
      // Pinned at the seed-000 ceiling: rate control is not what is timed.
      body: JSON.stringify({ url: `${counter.url}/herald/${d}`, eventTypes: [typeOf(d)], rate: { min: 100, max: 100 } }),
    });
    if (res.status !== 201) throw new BenchFailure(`registering latency-${d}: HTTP ${res.status} ${await res.text()}`);
  }
  const heraldSend: SendOne = async (id, d) => {
    const res = await fetch(`${stack.url}/ingest`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.config.ingestToken}`, 'content-type': 'application/json', 'ce-id': id, 'ce-source': SOURCE, 'ce-type': typeOf(d), 'ce-specversion': '1.0' },
      body: '{}',
    });
    if (res.status !== 202) throw new BenchFailure(`POST /ingest answered ${res.status}: ${(await res.text()).slice(0, 200)}`);
  };

  const part = async (label: string, send: SendOne): Promise<PartResult> => {
    if (warmup > 0) await pacedPart(`${label} warm-up`, counter, idsFor(`${label}-warmup`, warmup), destinations, rate, send, stallMs, note);
    note(`${label}: ${events} events at ${rate}/s`);
    const { sentAt: _sentAt, ...result } = await pacedPart(label, counter, idsFor(label, events), destinations, rate, send, stallMs, note);
    return { label, ...result };
  };
  const rawBefore = await part('raw (before)', rawSend);
  const stopProfile = process.env.BENCH_PROFILE ? await startProfile() : undefined;
  const herald = await part('herald', heraldSend);
  if (stopProfile) note(`CPU profile of Herald's part: ${await stopProfile(process.env.BENCH_PROFILE!)}`);
  const rawAfter = await part('raw (after)', rawSend);

  const rawMean = (k: 'p50' | 'p99') => ((rawBefore.latency[k] ?? NaN) + (rawAfter.latency[k] ?? NaN)) / 2;
  const added = { p50: round((herald.latency.p50 ?? NaN) - rawMean('p50')), p99: round((herald.latency.p99 ?? NaN) - rawMean('p99')) };
  const met = added.p99 !== undefined && added.p99 <= ADDED_P99_TARGET_MS;
  const complete = [rawBefore, herald, rawAfter].every((p) => p.arrived === p.sent);
  process.stdout.write(
    [
      '',
      `Paced latency: ${events} events at ${rate}/s over ${destinations} destination(s) (one type each, rate pinned at 100/s), one event per request`,
      '',
      table(
        ['part', 'arrived', 'p50, ms', 'p90, ms', 'p99, ms', 'max, ms', 'worst send lag, ms'],
        [rawBefore, herald, rawAfter].map((p) => [p.label, `${p.arrived}/${p.sent}`, p.latency.p50, p.latency.p90, p.latency.p99, p.latency.max, p.sendLagMaxMs]),
      ),
      '',
      `Herald adds (over the mean of raw before and after): p50 ${added.p50} ms, p99 ${added.p99} ms — target p99 ≤ ${ADDED_P99_TARGET_MS} ms: ${mark(met)}`,
      JSON.stringify({ bench: 'latency', destinations, rate, seconds, raw: [rawBefore, rawAfter], herald, added, met }),
      '',
    ].join('\n'),
  );
  return complete ? 0 : 1;
}
