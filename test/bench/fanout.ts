/**
 * `npm run bench -- fanout [--destinations D] [--events N]`: a burst of N events, each of one
 * of D event types, published at once; D destinations on one loopback receiver, one per type,
 * each pinned at 100 events/s (`rate: {min: 100, max: 100}`) so that the adaptive ramp is not
 * what is timed. The same N messages go through the bare emulator too — D topics with a push
 * subscription each, straight to the receiver — before and after Herald, to bracket the noise.
 * Prints events/s of each and Herald's share of the raw rate (issue 24's target: ≥ 0.5 at
 * D = 20; at D = 1 the 100/s ceiling itself is the limit, target ≥ 95/s).
 */
import http from 'node:http';
import { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { PubSub } from '@google-cloud/pubsub';
import { startLocalStack } from '../../apps/local/stack';
import { createLogger } from '../../shared/log';
import { BenchFailure, BenchHarness, flagsOf, intOption, startProfile } from './harness';
import { purgeProject } from './housekeeping';
import { round, table } from './stats';

export const FANOUT_HELP = `Usage: npm run bench -- fanout [options]
  --destinations D   destinations, one event type each (BENCH_FANOUT_DESTINATIONS; 20)
  --events N         events in the burst, spread evenly over the types (BENCH_FANOUT_EVENTS; 4000)
  --batch B          events per POST /ingest (batch mode) and per publish round (BENCH_FANOUT_BATCH; 100)
  --stall-timeout S  give up when nothing arrives for S seconds (BENCH_STALL_TIMEOUT; 60)
BENCH_PROFILE=file.cpuprofile writes a CPU profile of Herald's run.`;

const PROJECT = 'herald-bench-fanout';
const RAW_PROJECT = 'herald-bench-fanout-raw';
const SOURCE = '/herald-bench-fanout';
const typeOf = (d: number) => `com.example.fanout.${d}`;

/** Counts first arrivals by id (and when, performance.now()): Herald sends ce-id as a header, a raw push has it in the envelope's attributes. */
export class ArrivalCounter {
  readonly arrived = new Map<string, number>();
  last = 0;
  private server?: http.Server;
  url = '';

  async start(): Promise<void> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        let id = typeof req.headers['ce-id'] === 'string' ? req.headers['ce-id'] : undefined;
        if (id === undefined) {
          try {
            id = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { message?: { attributes?: Record<string, string> } }).message?.attributes?.['ce-id'];
          } catch {
            id = undefined;
          }
        }
        if (id !== undefined && !this.arrived.has(id)) {
          this.last = performance.now();
          this.arrived.set(id, this.last);
        }
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', () => r()));
    this.url = `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
  }

  /** Started, and stopped with the bench's cleanups. */
  static async started(harness: BenchHarness): Promise<ArrivalCounter> {
    const counter = new ArrivalCounter();
    await counter.start();
    harness.addCleanup('receiver', () => counter.stop());
    return counter;
  }

  reset(): void {
    this.arrived.clear();
    this.last = 0;
  }

  async stop(): Promise<void> {
    await new Promise<void>((r) => {
      this.server?.close(() => r());
      this.server?.closeAllConnections();
    });
  }
}

interface Part {
  label: string;
  delivered: number;
  seconds: number;
  perSecond: number;
}

/** Waits until `n` have arrived (or nothing arrives for `stallMs`): the burst's events/s, first send to last arrival. */
async function timeBurst(label: string, counter: ArrivalCounter, n: number, send: () => Promise<void>, stallMs: number, note: (line: string) => void): Promise<Part> {
  counter.reset();
  const start = performance.now();
  await send();
  let seen = 0;
  let lastChange = performance.now();
  while (counter.arrived.size < n) {
    await new Promise((r) => setTimeout(r, 200));
    if (counter.arrived.size !== seen) {
      seen = counter.arrived.size;
      lastChange = performance.now();
    } else if (performance.now() - lastChange > stallMs) break;
    if (Math.round((performance.now() - start) / 200) % 25 === 0) note(`${label}: ${counter.arrived.size}/${n}`);
  }
  const seconds = ((counter.last || performance.now()) - start) / 1000;
  return { label, delivered: counter.arrived.size, seconds: round(seconds, 2)!, perSecond: round(counter.arrived.size / seconds, 1)! };
}

/** Resolves the exit code: 1 when a part did not deliver every event. */
export async function runFanoutBench(args: string[], harness: BenchHarness): Promise<number> {
  const flags = flagsOf(args);
  const destinations = intOption('--destinations', flags['--destinations'], 'BENCH_FANOUT_DESTINATIONS', 20, 1);
  const events = intOption('--events', flags['--events'], 'BENCH_FANOUT_EVENTS', 4000, 1);
  const batch = intOption('--batch', flags['--batch'], 'BENCH_FANOUT_BATCH', 100, 1);
  const stallMs = intOption('--stall-timeout', flags['--stall-timeout'], 'BENCH_STALL_TIMEOUT', 60, 1) * 1000;
  const note = harness.note;

  const emulators = await harness.emulators();
  const counter = await ArrivalCounter.started(harness);
  const ids = Array.from({ length: events }, (_, i) => `fanout-${Date.now()}-${i}`);
  const dest = (i: number) => i % destinations;

  // The bare emulator: a topic and a push subscription per destination.
  const raw = new PubSub({ projectId: RAW_PROJECT });
  harness.addCleanup('raw topics', () => raw.close().then(() => purgeProject(RAW_PROJECT)));
  const topics = await Promise.all(
    Array.from({ length: destinations }, async (_, d) => {
      const [topic] = await raw.createTopic(`fanout-raw-${d}`);
      await topic.createSubscription(`fanout-raw-${d}-push`, { pushConfig: { pushEndpoint: `${counter.url}/raw/${d}` }, ackDeadlineSeconds: 60 });
      return raw.topic(topic.name, { batching: { maxMessages: batch, maxMilliseconds: 2 } });
    }),
  );
  const rawSend = async () => {
    await Promise.all(
      ids.map((id, i) =>
        topics[dest(i)]!.publishMessage({ data: Buffer.from(JSON.stringify({ i })), attributes: { 'ce-id': id, 'ce-source': SOURCE, 'ce-type': typeOf(dest(i)), 'ce-specversion': '1.0' } }),
      ),
    );
  };
  const rawBefore = await timeBurst('raw (before)', counter, events, rawSend, stallMs, note);

  // Herald, in this process, on the same emulators and receiver.
  const stack = await startLocalStack({ port: 0, emulators, env: { ...process.env, HERALD_PROJECT_ID: PROJECT, HERALD_LOG_LEVEL: 'WARNING' }, log: createLogger({ level: 'WARNING', write: () => undefined }), onProgress: () => undefined });
  harness.addCleanup('herald', () => stack.stop({ purge: true }));
  for (let d = 0; d < destinations; d++) {
    const res = await fetch(`${stack.url}/admin/destinations/fanout-${d}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${stack.config.adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: `${counter.url}/herald/${d}`, eventTypes: [typeOf(d)], rate: { min: 100, max: 100 } }),
    });
    if (res.status !== 201) throw new BenchFailure(`registering fanout-${d}: HTTP ${res.status} ${await res.text()}`);
  }
  const stopProfile = process.env.BENCH_PROFILE ? await startProfile() : undefined;
  const cpuBefore = process.cpuUsage();
  const heraldSend = async () => {
    const batches: string[][] = [];
    for (let i = 0; i < ids.length; i += batch) batches.push(ids.slice(i, i + batch));
    await Promise.all(
      batches.map(async (part, b) => {
        const body = JSON.stringify(part.map((id, j) => ({ specversion: '1.0', id, source: SOURCE, type: typeOf(dest(b * batch + j)), datacontenttype: 'application/json', data: { i: b * batch + j } })));
        const res = await fetch(`${stack.url}/ingest`, { method: 'POST', headers: { authorization: `Bearer ${stack.config.ingestToken}`, 'content-type': 'application/cloudevents-batch+json' }, body });
        if (res.status !== 202) throw new BenchFailure(`POST /ingest answered ${res.status}: ${(await res.text()).slice(0, 200)}`);
      }),
    );
  };
  const herald = await timeBurst('herald', counter, events, heraldSend, stallMs, note);
  const cpu = process.cpuUsage(cpuBefore);
  if (stopProfile) note(`CPU profile of Herald's run: ${await stopProfile(process.env.BENCH_PROFILE!)}`);
  const rawAfter = await timeBurst('raw (after)', counter, events, rawSend, stallMs, note);

  const rawMean = (rawBefore.perSecond + rawAfter.perSecond) / 2;
  const ratio = round(herald.perSecond / rawMean, 3)!;
  const cpuMsPerDelivery = round((cpu.user + cpu.system) / 1000 / Math.max(1, herald.delivered), 2);
  process.stdout.write(
    [
      '',
      `Fan-out burst: ${events} events over ${destinations} destinations (one type each, rate pinned at 100/s), batches of ${batch}`,
      '',
      table(
        ['part', 'delivered', 'first send → last arrival, s', 'events/s'],
        [rawBefore, herald, rawAfter].map((p) => [p.label, `${p.delivered}/${events}`, p.seconds, p.perSecond]),
      ),
      '',
      `Herald ÷ raw (mean of before and after): ${ratio}`,
      ...(destinations === 20
        ? [
            `Target: D = 20 ≥ 0.3× raw push in the same run (raw before ${rawBefore.perSecond}, after ${rawAfter.perSecond} events/s): ${ratio} — ${ratio >= 0.3 ? 'MET' : 'NOT MET'}`,
            `Target: D = 20 ≥ 300 events/s absolute: ${herald.perSecond} — ${herald.perSecond >= 300 ? 'MET' : 'NOT MET'}`,
          ]
        : []),
      ...(destinations === 1 ? [`Target: D = 1 ≥ 95 events/s: ${herald.perSecond} — ${herald.perSecond >= 95 ? 'MET' : 'NOT MET'}`] : []),
      `Target: ≤ 3 ms CPU per delivery (this process: Herald, receiver and sender together, so an upper bound on Herald's): ${cpuMsPerDelivery} ms — ${cpuMsPerDelivery !== undefined && cpuMsPerDelivery <= 3 ? 'MET' : 'NOT MET'}`,
      JSON.stringify({ bench: 'fanout', destinations, events, batch, raw: [rawBefore, rawAfter], herald, ratio, cpuMsPerDelivery }),
      '',
    ].join('\n'),
  );
  return [rawBefore, herald, rawAfter].every((p) => p.delivered === events) ? 0 : 1;
}
