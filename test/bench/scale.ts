/**
 * `npm run bench -- scale`: one deployment with many destinations in many accounts (issues 24, 36).
 *
 * Herald's local stack in this process, a loopback receiver, the Firestore wire meter on every
 * client of the process. In order:
 *  0. A delivery run with only L live destinations registered (issue 24's run).
 *  1. Registration: A accounts through the admin API, then D destinations in them (D / A each),
 *     every create under the account's destination quota; timed in tenths (first and last side
 *     by side: a create must not cost more as the registry grows). Then the same delivery run
 *     again: routing and delivery must cost the same with D more registered.
 *  2. One account among them (its D / A destinations): every request of the console's and a
 *     portal session's pages and one more create, each in Firestore documents read and ms;
 *     again after its destinations were busy all hour (an hour of minute counters written
 *     through the runtime's counters, backdated, and one suspension check run).
 *  3. The suspension check with `--active` destinations busy all hour, the last in sort order
 *     failing: reads per active destination, time, and whether that last one was suspended.
 *  4. A deliver instance (a child process) taking `--deliveries` over `--deliver-destinations`
 *     of them, as lane messages into deliverFromLane: its RSS and heap.
 *  5. A fresh instance's directory: reads to route its first event, then to catch up on K
 *     registrations made elsewhere.
 *  6. The reconciler's large recovery (recovery.ts's phase) on the same stack.
 * Then a summary: each target with ✓ or ✗.
 */
import { performance } from 'node:perf_hooks';
import { loadConfig } from '../../shared/config';
import { startLocalStack } from '../../apps/local/stack';
import { checkThresholds } from '../../shared/app/delivery/suspend-and-reactivate';
import { generateSecretsKey } from '../../shared/domain/access/secret-box';
import { createLogger } from '../../shared/log';
import { createRuntime, Runtime } from '../../shared/runtime/runtime';
import { suspensionDeps } from '../../shared/runtime/delivery-deps';
import { ArrivalCounter } from './fanout';
import { FirestoreMeter, meterFirestore } from './firestore-meter';
import { BenchFailure, BenchHarness, flagsOf, intOption, startProfile, UsageError } from './harness';
import { measureAccount, meetsPageTargets, PAGE_MS_MAX, PAGE_READS_MAX } from './scale-account';
import { writeBusyHour } from './scale-busy-hour';
import { CATCH_UP_READS, catchUpMet, catchUpPhase } from './scale-catch-up';
import { DELIVER_RSS_MAX_MIB, memoryPhase } from './scale-deliver';
import { AdminClient, Measured, mib, Probe } from './scale-probe';
import { runRecoveryPhase } from './recovery';
import { accountId, catalogueType, destinationId, destinationSpec, destinationUrl, internalId, registerAll, RegistryLayout, spread } from './scale-registry';
import { SUSPENSION_READS_PER_ACTIVE_MAX, suspensionPhase } from './scale-suspension';
import { round, table } from './stats';

export const SCALE_HELP = `Usage: npm run bench -- scale [options]
  --destinations D         destinations registered in the accounts (BENCH_SCALE_DESTINATIONS; 100000)
  --accounts A             accounts they are registered in, D / A each (BENCH_SCALE_ACCOUNTS; 10000)
  --concurrency C          accounts registered at once, each's destinations one after another (BENCH_SCALE_CONCURRENCY; 16)
  --max-minutes M          stop registering new accounts after M minutes, go on with those (BENCH_SCALE_MAX_MINUTES; 240)
  --live L                 default-account destinations that receive the delivery runs (BENCH_SCALE_LIVE; 10)
  --events N               events per delivery run, spread over the live destinations (BENCH_SCALE_EVENTS; 1000)
  --active N               destinations busy all hour for the suspension check (BENCH_SCALE_ACTIVE; 1000)
  --deliveries N           deliveries the deliver instance takes (BENCH_SCALE_DELIVERIES; 10000) ...
  --deliver-destinations N ... spread over N destinations (BENCH_SCALE_DELIVER_DESTINATIONS; 1000)
  --changes K              registrations the fresh instance's directory catches up on (BENCH_SCALE_CHANGES; 100)
  --records R              missing records the reconciler recovers (BENCH_SCALE_RECORDS; 50000)
  --stall-timeout S        give up a delivery run when nothing arrives for S seconds (BENCH_STALL_TIMEOUT; 60)
To try it: --destinations 2000 --accounts 200 --active 100 --deliveries 1000 --deliver-destinations 100 --records 2000.
BENCH_PROFILE=file.cpuprofile writes a CPU profile of the second delivery run.`;

const SOURCE = '/herald-bench-scale';
const liveType = (i: number) => `com.example.scale.live.${i}`;
/** A registration rate's last tenth at least this share of its first: "does not fall as the registry grows". */
const REGISTRATION_KEEPS = 0.75;
/** The suspension check's timeout on GCP (infra): every active destination must be judged within it. */
const SUSPENSION_RUN_MS_MAX = 60_000;

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

interface Target {
  target: string;
  measured: string;
  /** undefined: shown for information, no target. */
  met: boolean | undefined;
}

const tick = (met: boolean | undefined) => (met === undefined ? '—' : met ? '✓' : '✗');

export async function runScaleBench(args: string[], harness: BenchHarness): Promise<number> {
  const flags = flagsOf(args);
  const many = intOption('--destinations', flags['--destinations'], 'BENCH_SCALE_DESTINATIONS', 100_000, 1);
  const accounts = intOption('--accounts', flags['--accounts'], 'BENCH_SCALE_ACCOUNTS', 10_000, 1);
  const concurrency = intOption('--concurrency', flags['--concurrency'], 'BENCH_SCALE_CONCURRENCY', 16, 1);
  const maxMinutes = intOption('--max-minutes', flags['--max-minutes'], 'BENCH_SCALE_MAX_MINUTES', 240, 1);
  const live = intOption('--live', flags['--live'], 'BENCH_SCALE_LIVE', 10, 1);
  const events = intOption('--events', flags['--events'], 'BENCH_SCALE_EVENTS', 1000, 1);
  const activeWanted = intOption('--active', flags['--active'], 'BENCH_SCALE_ACTIVE', 1000, 1);
  const deliveries = intOption('--deliveries', flags['--deliveries'], 'BENCH_SCALE_DELIVERIES', 10_000, 1);
  const deliverWanted = intOption('--deliver-destinations', flags['--deliver-destinations'], 'BENCH_SCALE_DELIVER_DESTINATIONS', 1000, 1);
  const changes = intOption('--changes', flags['--changes'], 'BENCH_SCALE_CHANGES', 100, 1);
  const records = intOption('--records', flags['--records'], 'BENCH_SCALE_RECORDS', 50_000, 1);
  const stallMs = intOption('--stall-timeout', flags['--stall-timeout'], 'BENCH_STALL_TIMEOUT', 60, 1) * 1000;
  if (many % accounts !== 0) throw new UsageError(`--destinations (${many}) must be a multiple of --accounts (${accounts}): every account holds as many`);
  const perAccount = many / accounts;
  if (perAccount < 2) throw new UsageError('--destinations must be at least twice --accounts: one account is measured, and another warms the code up');
  const note = harness.note;
  const targets: Target[] = [];
  // Each phase's verdicts printed as it ends: a long run cut short (a machine's emulator out of heap) still reports what it measured.
  const record = (...reached: Target[]) => {
    targets.push(...reached);
    for (const t of reached) process.stdout.write(`${tick(t.met)} ${t.target}\n    ${t.measured}\n`);
  };

  const emulators = await harness.emulators();
  const meter = new FirestoreMeter();
  meterFirestore(meter);
  const counter = await ArrivalCounter.started(harness);
  // A project of its own per run: reused emulators keep earlier runs' registries.
  const project = `herald-bench-scale-${Date.now().toString(36)}`;
  harness.addCleanup(
    `deleting project ${project}'s Firestore documents`,
    async () => {
      if (harness.emulatorsAlive(emulators)) await fetch(`http://${emulators.firestoreHost}/emulator/v1/projects/${project}/databases/(default)/documents`, { method: 'DELETE' });
    },
    60_000,
  );
  // Every runtime of the run (the stack's, the fresh ones, the deliver instance) decrypts the same secrets.
  const heraldEnv: NodeJS.ProcessEnv = {
    ...process.env,
    HERALD_PROJECT_ID: project,
    HERALD_LOG_LEVEL: 'WARNING',
    HERALD_SECRETS_KEY: generateSecretsKey(),
    HERALD_ALLOW_LOOPBACK: 'true',
    // The scheduled work runs when a phase says so, not beside its measurements (the recovery phase runs its own pump and reconciler rounds).
    HERALD_SUSPENSION_CHECK_MS: process.env.HERALD_SUSPENSION_CHECK_MS ?? '3600000',
    HERALD_RECONCILE_INTERVAL_MS: process.env.HERALD_RECONCILE_INTERVAL_MS ?? '600000',
    HERALD_PUMP_INTERVAL_MS: process.env.HERALD_PUMP_INTERVAL_MS ?? '60000',
    // The recovery phase's journal is past this grace at once.
    HERALD_RECONCILE_AFTER_MS: process.env.HERALD_RECONCILE_AFTER_MS ?? '1000',
  };
  const stack = await startLocalStack({ port: 0, emulators, env: heraldEnv, log: createLogger({ level: 'WARNING', write: () => undefined }), onProgress: () => undefined });
  harness.addCleanup('herald', () => stack.stop({ purge: true }));
  const runtimeEnv = { ...heraldEnv, HERALD_ADMIN_TOKEN: stack.config.adminToken, HERALD_INGEST_TOKEN: stack.config.ingestToken, HERALD_PUSH_BASE_URL: stack.url, HERALD_LOG_LEVEL: 'ERROR' };
  const freshRuntime = (): Runtime => {
    const rt = createRuntime(loadConfig(runtimeEnv), { log: createLogger({ level: 'ERROR', write: () => undefined }) });
    harness.addCleanup('a fresh runtime', () => rt.close());
    return rt;
  };
  const admin = new AdminClient(stack.url, stack.config.adminToken);
  const probe = new Probe(meter, () => stack.runtime.firestoreOps);
  for (let i = 0; i < live; i++) await admin.call('PUT', `/destinations/scale-live-${i}`, { url: `${counter.url}/live/${i}`, eventTypes: [liveType(i)] }, [200, 201]);

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

  // 1. Registration.
  note(`registering ${accounts} accounts and ${many} destinations in them (${perAccount} each, the default destination quota in force), ${concurrency} accounts at a time`);
  const layout: RegistryLayout = { accounts, perAccount, receiverUrl: counter.url };
  const registration = await registerAll(admin, probe, layout, concurrency, maxMinutes * 60_000, note);
  const registered = registration.destinations;
  const registeredAccounts = registered / perAccount;
  if (registeredAccounts < 2) throw new BenchFailure(`only ${registered} destinations registered in ${maxMinutes} min: too few to go on`);
  const [first, last] = [registration.slices[0]!, registration.slices.at(-1)!];
  record({
    target: `registration: rate does not fall as the registry grows (last tenth ≥ ${REGISTRATION_KEEPS * 100} % of the first)`,
    measured: `${registered} in ${registration.seconds} s (${registration.perSecond}/s); first tenth ${first.perSecond}/s (${first.readsPerCreate} reads each), last ${last.perSecond}/s (${last.readsPerCreate} reads each)${registration.cutShort ? `; CUT SHORT at ${maxMinutes} min` : ''}`,
    met: !registration.cutShort && last.perSecond >= REGISTRATION_KEEPS * first.perSecond,
  });
  // The rate also moves with whatever else the machine runs; what a create reads does not.
  record({
    target: `registration: reads per create do not grow with the registry (last tenth ≤ first × ${round(1 / REGISTRATION_KEEPS, 2)})`,
    measured: `${first.readsPerCreate} in the first tenth, ${last.readsPerCreate} in the last`,
    met: last.readsPerCreate <= first.readsPerCreate / REGISTRATION_KEEPS,
  });
  const [topics] = await stack.runtime.pubsub.getTopics();
  const [subscriptions] = await stack.runtime.pubsub.getSubscriptions();
  // The stack's directory takes the registrations in (once per instance), counted apart so that the run then measures delivery.
  const readsBefore = stack.runtime.firestoreOps.reads;
  for (let look = 0; look < 2; look++) {
    await new Promise((r) => setTimeout(r, stack.config.destinationCacheMs + 500));
    await stack.runtime.directory.caughtUp();
  }
  const stackCatchUpReads = stack.runtime.firestoreOps.reads - readsBefore;

  note(`delivery run with ${live + registered} destinations registered`);
  const stopProfile = process.env.BENCH_PROFILE ? await startProfile() : undefined;
  const large = await deliveryRun(live + registered);
  if (stopProfile) note(`CPU profile of that run: ${await stopProfile(process.env.BENCH_PROFILE!)}`);
  record({
    target: 'delivery runs: reads per delivery the same with the registry full',
    measured: `${small.readsPerDelivery} with ${live} registered, ${large.readsPerDelivery} with ${live + registered}; delivered ${small.delivered}/${events} and ${large.delivered}/${events}`,
    met: undefined,
  });

  // 2. One account among them.
  const focus = Math.floor(registeredAccounts / 2);
  const warm = focus - 1;
  const viewOf = (a: number) => ({ account: accountId(a), destinations: Array.from({ length: perAccount }, (_, j) => destinationId(j)), queuedUrl: destinationUrl(layout, a, 0) });
  note(`one account among ${registered} destinations: ${accountId(focus)} (its pages warmed up on ${accountId(warm)} first)`);
  await measureAccount(admin, probe, viewOf(warm), undefined);
  const quiet = await measureAccount(admin, probe, viewOf(focus), { id: 'extra-1', spec: destinationSpec(layout, focus, 0) });
  note(`${accountId(focus)}'s destinations busy all hour`);
  const focusIds = [...Array.from({ length: perAccount }, (_, j) => internalId(focus, j)), `${accountId(focus)}_extra-1`];
  const busyHour = await writeBusyHour(stack.runtime, focusIds, { note });
  await checkThresholds(suspensionDeps(stack.runtime));
  note(`${accountId(focus)}'s pages again, its destinations busy all hour`);
  const busy = await measureAccount(admin, probe, viewOf(focus), { id: 'extra-2', spec: destinationSpec(layout, focus, 1) });
  for (const [label, rows] of [['quiet', quiet], ['busy all hour', busy]] as const) {
    const within = rows.filter(meetsPageTargets);
    const worstReads = rows.reduce((a, b) => (b.reads > a.reads ? b : a));
    const worstMs = rows.reduce((a, b) => (b.ms > a.ms ? b : a));
    record({
      target: `one account's pages and a create, ${label}: each ≤ ${PAGE_READS_MAX} reads and < ${PAGE_MS_MAX} ms`,
      measured: `${within.length} of ${rows.length} requests within; most reads ${worstReads.reads} (${worstReads.what}), slowest ${worstMs.ms} ms (${worstMs.what})`,
      met: within.length === rows.length,
    });
  }

  // 3. The suspension check.
  const registryIndex = (i: number) => ({ a: Math.floor(i / perAccount), j: i % perAccount });
  const activeIds = spread(registered, activeWanted).map((i) => registryIndex(i)).map(({ a, j }) => internalId(a, j));
  const checker = freshRuntime();
  const suspension = await suspensionPhase(stack.runtime, checker, probe, activeIds, note);
  const steady = suspension.runs.at(-1)!;
  record(
    {
      target: `suspension check, ${suspension.active} busy all hour among ${registered}: ≤ ${SUSPENSION_READS_PER_ACTIVE_MAX} reads per active destination (steady run)`,
      measured: `${steady.readsPerActive} (${steady.run.reads} reads for ${steady.checked} judged; the first run, its directory cold: ${suspension.runs[0]!.run.reads})`,
      met: steady.readsPerActive <= SUSPENSION_READS_PER_ACTIVE_MAX,
    },
    {
      target: `suspension check: every active destination judged within ${SUSPENSION_RUN_MS_MAX / 1000} s; the last in sort order (failing) suspended`,
      measured: `runs took ${suspension.runs.map((r) => `${r.run.ms} ms (${r.checked} judged)`).join(', ')}; ${suspension.lastInSortOrder} ${suspension.lastJudged ? 'suspended' : 'NOT suspended'}`,
      met: suspension.lastJudged && suspension.runs.every((r) => r.run.ms < SUSPENSION_RUN_MS_MAX) && suspension.runs[0]!.checked >= suspension.active,
    },
  );

  // 4. A deliver instance's memory. The failing destination of phase 3 (the last) is left out: spread from the first.
  const deliverTargets = spread(registered - 1, deliverWanted).map((i) => {
    const { a, j } = registryIndex(i);
    return { destinationId: internalId(a, j), account: accountId(a), type: catalogueType(i) };
  });
  const perDestination = Math.max(1, Math.round(deliveries / deliverTargets.length));
  note(`a deliver instance of its own: ${perDestination * deliverTargets.length} deliveries over ${deliverTargets.length} destinations, ${registered} registered`);
  const memory = await memoryPhase(harness, runtimeEnv, counter, deliverTargets, perDestination, 32);
  record({
    target: `a deliver instance's memory after ${memory.deliveries} deliveries over ${memory.destinations} destinations: ≤ ${DELIVER_RSS_MAX_MIB} MiB RSS`,
    measured: `RSS ${memory.memory.rssMiB} MiB (most ${memory.memory.maxRssMiB}, ${memory.memory.startRssMiB} at start), heap ${memory.memory.heapUsedMiB} MiB; ${memory.arrived}/${memory.deliveries} arrived in ${memory.seconds} s${memory.errors ? `; ${memory.errors} failed: ${memory.firstError}` : ''}`,
    met: memory.memory.rssMiB <= DELIVER_RSS_MAX_MIB && memory.arrived === memory.deliveries,
  });

  // 5. A fresh instance's directory.
  note(`a fresh instance's directory: its first event, then ${changes} registrations elsewhere`);
  const routeAccount = Math.floor(registeredAccounts / 3);
  const routeType = catalogueType(routeAccount * perAccount);
  const catchUp = await catchUpPhase(
    freshRuntime(),
    admin,
    probe,
    { type: routeType, account: accountId(routeAccount) },
    { account: `catch-up-${run}`, count: changes, spec: (k) => ({ url: `${counter.url}/catch-up/${k}`, eventTypes: [routeType] }) },
    stack.config.destinationCacheMs + 500,
  );
  record(
    { target: 'a fresh instance routing its first event', measured: `${catchUp.firstRoute.counted} reads, ${catchUp.firstRoute.ms} ms (${catchUp.firstMatched} destinations matched)`, met: undefined },
    {
      target: `its catch-up on ${changes} registrations elsewhere: O(changes), ≤ ${CATCH_UP_READS.perChange} × ${changes} + ${CATCH_UP_READS.fixed} reads`,
      measured: `${catchUp.catchUp.counted} reads, ${catchUp.catchUp.ms} ms of work; ${catchUp.seenAfter}/${changes} seen`,
      met: catchUpMet(catchUp),
    },
  );

  // 6. The reconciler's recovery.
  note(`the reconciler's recovery of ${records} missing records`);
  const recovery = await runRecoveryPhase(stack, counter.url, { records, fanout: 10, maxRounds: 200 }, note);
  const longestRound = Math.max(...recovery.rounds.map((r) => r.ms));
  const longestDelay = Math.max(...recovery.rounds.map((r) => r.retryDelayMs));
  record(
    {
      target: `the reconciler: a recovery of ${records} missing records, resumable: each created exactly once, the journal emptied`,
      measured: `${recovery.createdOnce}/${recovery.records} created once, ${recovery.createdTwice} more than once, in ${recovery.rounds.length} rounds; journal ${recovery.journalEmpty ? 'empty' : 'NOT empty'}`,
      met: recovery.createdOnce === recovery.records && recovery.createdTwice === 0 && recovery.journalEmpty,
    },
    {
      target: 'the reconciler: bounded per round, the retry pump never waits more than one round',
      measured: `longest round ${longestRound} ms; longest retry pump delay ${longestDelay} ms; a retry sent in ${recovery.rounds.filter((r) => r.retrySent).length} of ${recovery.rounds.length} rounds`,
      met: recovery.rounds.every((r) => r.retrySent) && longestDelay <= longestRound,
    },
  );

  const accountRows = quiet.map((q, i) => {
    const b = busy[i]!;
    return [q.what.replace('create one more destination', 'create a destination'), q.reads, q.ms, b.reads, b.ms, tick(meetsPageTargets(q) && meetsPageTargets(b))];
  });
  const topCollections = (m: Measured) =>
    Object.entries(m.byCollection)
      .slice(0, 3)
      .map(([c, n]) => `${c} ${n}`)
      .join(', ');
  process.stdout.write(
    [
      '',
      `Registration: ${registered} destinations in ${registeredAccounts} accounts in ${registration.seconds} s (${registration.perSecond}/s, ${concurrency} accounts at a time)`,
      table(
        ['registered by then', 'destinations', 'seconds', 'per second', 'reads per create'],
        registration.slices.map((s) => [s.upTo, s.destinations, s.seconds, s.perSecond, s.readsPerCreate]),
      ),
      `Pub/Sub emulator afterwards: ${topics.length} topics, ${subscriptions.length} subscriptions; the stack's directory took them in with ${stackCatchUpReads} Firestore reads`,
      '',
      `Delivery runs: ${events} events, one per POST /ingest (8 in flight), over ${live} live destinations`,
      table(
        ['registered', 'delivered', 'events/s', 'CPU ms/delivery', 'reads/delivery', 'writes/delivery', 'heap MiB', 'RSS MiB'],
        [small, large].map((r) => [r.registered, `${r.delivered}/${events}`, r.perSecond, r.cpuMsPerDelivery, r.readsPerDelivery, r.writesPerDelivery, r.heapMiB, r.rssMiB]),
      ),
      '',
      `Account ${accountId(focus)} (${perAccount} destinations) among ${registered}: Firestore documents read (on the wire) and ms per request; busy: ${busyHour.minutes} minute counters of ${busyHour.perMinute} attempts for each of its destinations, then one suspension check`,
      table(['request', 'reads', 'ms', 'reads, busy', 'ms, busy', `≤ ${PAGE_READS_MAX} reads, < ${PAGE_MS_MAX} ms`], accountRows),
      `Where the most reads went (busy): ${busy
        .filter((m) => m.reads > PAGE_READS_MAX)
        .slice(0, 4)
        .map((m) => `${m.what}: ${topCollections(m)}`)
        .join('; ') || 'nowhere above the target'}`,
      '',
      `Suspension check (a fresh instance), ${suspension.active} destinations busy all hour (written in ${suspension.busyHourSeconds} s), ${suspension.lastInSortOrder} failing every attempt`,
      table(
        ['run', 'reads', 'reads per active', 'ms', 'judged', 'suspended', 'reads by collection'],
        suspension.runs.map((r, i) => [i + 1, r.run.reads, r.readsPerActive, r.run.ms, r.checked, r.suspended.join(', ') || '—', topCollections(r.run)]),
      ),
      '',
      'Targets (✓ met, ✗ not met, — shown for information)',
      ...targets.map((t) => `${tick(t.met)} ${t.target}\n    ${t.measured}`),
      '',
      JSON.stringify({
        bench: 'scale',
        settings: { destinations: many, accounts, perAccount, live, events, active: activeWanted, deliveries, deliverDestinations: deliverWanted, changes, records },
        registration: { ...registration, topics: topics.length, subscriptions: subscriptions.length, stackCatchUpReads },
        runs: [small, large],
        account: { id: accountId(focus), quiet, busy, busyHour },
        suspension,
        memory,
        catchUp,
        recovery,
        targets,
      }),
      '',
    ].join('\n'),
  );
  return small.delivered === events && large.delivered === events ? 0 : 1;
}
