/**
 * `npm run bench -- scale [--destinations D]`: one deployment with many destinations (issue 24).
 *
 * Herald's local stack in this process, a loopback receiver, L live destinations (one event
 * type each, answering 204). First a delivery run with only the L registered; then D more are
 * registered through the admin API, C requests at a time (the time it takes, per thousand,
 * and what the Pub/Sub emulator holds afterwards: shared lanes, so no topic or subscription
 * per destination); then the same delivery run again. Printed side by side: Herald's CPU,
 * Firestore reads and writes and latency per delivered event, and the process's memory —
 * what routing and delivery cost must not grow with the destinations registered.
 */
import { performance } from 'node:perf_hooks';
import { startLocalStack } from '../../shared/apps/local/stack';
import { createLogger } from '../../shared/log';
import { ArrivalCounter } from './fanout';
import { BenchFailure, BenchHarness, flagsOf, intOption, startProfile } from './harness';
import { round, table } from './stats';

export const SCALE_HELP = `Usage: npm run bench -- scale [options]
  --destinations D   destinations registered beside the live ones (BENCH_SCALE_DESTINATIONS; 10000)
  --live L           destinations that receive the delivery runs (BENCH_SCALE_LIVE; 10)
  --events N         events per delivery run, spread over the live destinations (BENCH_SCALE_EVENTS; 1000)
  --concurrency C    registrations in flight at once (BENCH_SCALE_CONCURRENCY; 16)
  --stall-timeout S  give up when nothing arrives for S seconds (BENCH_STALL_TIMEOUT; 60)
BENCH_PROFILE=file.cpuprofile writes a CPU profile of the second delivery run.`;

const PROJECT = 'herald-bench-scale';
const SOURCE = '/herald-bench-scale';
const liveType = (i: number) => `com.example.scale.live.${i}`;

interface DeliveryRun {
  registered: number;
  delivered: number;
  seconds: number;
  perSecond: number;
  cpuMsPerDelivery: number;
  readsPerDelivery: number;
  writesPerDelivery: number;
  heapMiB: number;
  rssMiB: number;
}

const mib = (bytes: number) => round(bytes / 2 ** 20, 1)!;

export async function runScaleBench(args: string[], harness: BenchHarness): Promise<number> {
  const flags = flagsOf(args);
  const many = intOption('--destinations', flags['--destinations'], 'BENCH_SCALE_DESTINATIONS', 10_000, 0);
  const live = intOption('--live', flags['--live'], 'BENCH_SCALE_LIVE', 10, 1);
  const events = intOption('--events', flags['--events'], 'BENCH_SCALE_EVENTS', 1000, 1);
  const concurrency = intOption('--concurrency', flags['--concurrency'], 'BENCH_SCALE_CONCURRENCY', 16, 1);
  const stallMs = intOption('--stall-timeout', flags['--stall-timeout'], 'BENCH_STALL_TIMEOUT', 60, 1) * 1000;
  const note = harness.note;

  const emulators = await harness.emulators();
  const counter = await ArrivalCounter.started(harness);
  const stack = await startLocalStack({ port: 0, emulators, env: { ...process.env, HERALD_PROJECT_ID: PROJECT, HERALD_LOG_LEVEL: 'WARNING' }, log: createLogger({ level: 'WARNING', write: () => undefined }), onProgress: () => undefined });
  harness.addCleanup('herald', () => stack.stop({ purge: true }));
  const admin = { authorization: `Bearer ${stack.config.adminToken}`, 'content-type': 'application/json' };
  const register = async (id: string, spec: object) => {
    const res = await fetch(`${stack.url}/admin/destinations/${id}`, { method: 'PUT', headers: admin, body: JSON.stringify(spec) });
    if (res.status !== 201 && res.status !== 200) throw new BenchFailure(`registering ${id}: HTTP ${res.status} ${(await res.text()).slice(0, 300)}`);
  };
  for (let i = 0; i < live; i++) await register(`scale-live-${i}`, { url: `${counter.url}/live/${i}`, eventTypes: [liveType(i)] });

  let run = 0;
  const deliveryRun = async (registered: number): Promise<DeliveryRun> => {
    run++;
    const ids = Array.from({ length: events }, (_, i) => `scale-${run}-${Date.now()}-${i}`);
    counter.reset();
    const ops = stack.runtime.firestoreOps;
    const [reads0, writes0] = [ops.reads, ops.writes];
    const cpu0 = process.cpuUsage();
    const start = performance.now();
    // One event per request, 8 at a time: the per-event path, not batch ingest.
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < ids.length) {
          const i = next++;
          const res = await fetch(`${stack.url}/ingest`, {
            method: 'POST',
            headers: { authorization: `Bearer ${stack.config.ingestToken}`, 'content-type': 'application/cloudevents+json' },
            body: JSON.stringify({ specversion: '1.0', id: ids[i], source: SOURCE, type: liveType(i % live), datacontenttype: 'application/json', data: { i } }),
          });
          if (res.status !== 202) throw new BenchFailure(`POST /ingest answered ${res.status}: ${(await res.text()).slice(0, 200)}`);
        }
      }),
    );
    let seen = 0;
    let lastChange = performance.now();
    while (counter.arrived.size < events) {
      await new Promise((r) => setTimeout(r, 100));
      if (counter.arrived.size !== seen) [seen, lastChange] = [counter.arrived.size, performance.now()];
      else if (performance.now() - lastChange > stallMs) break;
    }
    const seconds = (counter.last - start) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const delivered = counter.arrived.size;
    const memory = process.memoryUsage();
    return {
      registered,
      delivered,
      seconds: round(seconds, 2)!,
      perSecond: round(delivered / seconds, 1)!,
      cpuMsPerDelivery: round((cpu.user + cpu.system) / 1000 / Math.max(1, delivered), 2)!,
      readsPerDelivery: round((ops.reads - reads0) / Math.max(1, delivered), 3)!,
      writesPerDelivery: round((ops.writes - writes0) / Math.max(1, delivered), 3)!,
      heapMiB: mib(memory.heapUsed),
      rssMiB: mib(memory.rss),
    };
  };

  note(`delivery run with ${live} destinations registered`);
  await deliveryRun(live); // warm-up: JIT, connections
  const small = await deliveryRun(live);

  note(`registering ${many} destinations, ${concurrency} at a time`);
  const perThousand: number[] = [];
  let done = 0;
  let mark = performance.now();
  const startAll = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (done < many) {
        const i = done++;
        // Types shaped as a platform's: each customer's endpoint takes a few of a shared catalogue.
        await register(`scale-${i}`, { url: `${counter.url}/idle/${i}`, eventTypes: [`com.example.scale.catalogue.${i % 500}`, `com.example.scale.customer-${i}.*`] });
        if ((i + 1) % 1000 === 0) {
          const now = performance.now();
          perThousand.push(round((now - mark) / 1000, 1)!);
          mark = now;
          note(`registered ${i + 1}/${many} (last thousand ${perThousand.at(-1)} s)`);
        }
      }
    }),
  );
  const registerSeconds = (performance.now() - startAll) / 1000;
  const [topics] = await stack.runtime.pubsub.getTopics();
  const [subscriptions] = await stack.runtime.pubsub.getSubscriptions();
  // The directory takes the registrations in from the change log (2 reads per change, once
  // per instance; each look reaches 5 s back, so two looks): counted apart, so that the run
  // then measures delivery, not catching up.
  const readsBefore = stack.runtime.firestoreOps.reads;
  for (let look = 0; look < 2; look++) {
    await new Promise((r) => setTimeout(r, stack.config.destinationCacheMs + 500));
    await stack.runtime.directory.current();
  }
  const catchUpReads = stack.runtime.firestoreOps.reads - readsBefore;

  note(`delivery run with ${live + many} destinations registered`);
  const stopProfile = process.env.BENCH_PROFILE ? await startProfile() : undefined;
  const large = await deliveryRun(live + many);
  if (stopProfile) note(`CPU profile of that run: ${await stopProfile(process.env.BENCH_PROFILE!)}`);

  const registration = { destinations: many, seconds: round(registerSeconds, 1)!, perSecond: round(many / registerSeconds, 1)!, secondsPerThousand: perThousand, topics: topics.length, subscriptions: subscriptions.length, catchUpReads };
  process.stdout.write(
    [
      '',
      `Registration: ${many} destinations in ${registration.seconds} s (${registration.perSecond}/s, ${concurrency} at a time); each thousand took ${perThousand.join(', ')} s`,
      `Pub/Sub emulator afterwards: ${topics.length} topics, ${subscriptions.length} subscriptions in project ${PROJECT}`,
      `The directory catching up on them from the change log (once per instance): ${catchUpReads} Firestore reads, everything else in those ${round((2 * stack.config.destinationCacheMs + 1000) / 1000, 1)} s included`,
      '',
      `Delivery runs: ${events} events, one per POST /ingest (8 in flight), over ${live} live destinations`,
      table(
        ['registered', 'delivered', 'events/s', 'CPU ms/delivery', 'reads/delivery', 'writes/delivery', 'heap MiB', 'RSS MiB'],
        [small, large].map((r) => [r.registered, `${r.delivered}/${events}`, r.perSecond, r.cpuMsPerDelivery, r.readsPerDelivery, r.writesPerDelivery, r.heapMiB, r.rssMiB]),
      ),
      '',
      JSON.stringify({ bench: 'scale', registration, runs: [small, large] }),
      '',
    ].join('\n'),
  );
  return small.delivered === events && large.delivered === events ? 0 : 1;
}
