import { forEachLimited } from '../../shared/app/support/for-each-limited';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { AddressInfo } from 'node:net';
import { getTestServer } from '@google-cloud/functions-framework/testing';
import { applyTopology } from '../../shared/adapters/pubsub/topology';
import { ConfigError, loadConfig } from '../../shared/config';
import { HeraldConfig } from '../../shared/config-schema';
import { runPump } from '../../shared/app/retry/pump';
import { repairKeys } from '../../shared/app/retry/pump-run';
import { runBatcher } from '../../shared/app/delivery/batcher';
import { checkThresholds } from '../../shared/app/delivery/suspend-and-reactivate';
import { accountPurgeDeps } from '../../shared/runtime/admin-deps';
import { batcherDeps, suspensionDeps } from '../../shared/runtime/delivery-deps';
import { createRuntime, pumpDeps, pushTargetFrom, Runtime } from '../../shared/runtime/runtime';
import { operationalEvents, reconcileDeps } from '../../shared/runtime/intake-deps';
import { reconcileOnce } from '../../shared/app/intake/reconcile';
import { finishAccountPurges } from '../../shared/app/access/account-purge';
import { runPeriodically } from './periodic';
import { CLOSE_LIMIT_MS, GracefulStop, STOP_BUDGET_MS, stopServing } from '../../shared/adapters/graceful-stop';
import { FUNCTION_NAMES, FunctionName } from '../../shared/topology';
import { EmulatorHosts, RunningEmulators, startEmulators } from './emulators';
import { HostResolver, HttpSender, IdTokenVerifier } from '../../shared/ports/http';
import { Logger } from '../../shared/ports/clock';
import { createLogger, parseSeverity } from '../../shared/log';
import { instanceCount } from './args';
import { allOf, instanceLog, roundRobin } from './instances';
import { loadOrCreateLocalSecretsKey } from './secrets-key';
import { generateSecretsKey } from '../../shared/domain/access/secret-box';
import { healthAnswer } from './health';
import { localServicesOf } from './local-services';
import { createTelemetry, TelemetrySetup } from '../../shared/runtime/telemetry';
import { localHealth } from '../../shared/runtime/health';
import { LaneAges } from '../../shared/domain/health/lane-ages';

export interface LocalStackOptions {
  /** Port to serve on; 0 picks a free one. Default: PORT or 8080. */
  port?: number;
  /** Environment to read Herald's settings from (defaults to process.env). */
  env?: NodeJS.ProcessEnv;
  /** Emulators already running (tests); otherwise they are started or reused from the env. */
  emulators?: EmulatorHosts;
  log?: Logger;
  http?: HttpSender;
  /** DNS for the SSRF guard (tests map host names to the addresses they need). */
  resolver?: HostResolver;
  /** OIDC token verification (tests: certificates of a local key). */
  idTokens?: IdTokenVerifier;
  onProgress?: (line: string) => void;
  /**
   * Where to keep the key destination secrets are encrypted with when HERALD_SECRETS_KEY is
   * not set: read from there, or made and written there once (`npm start`: .herald/secrets.key),
   * so a restart against the same emulator data still decrypts. Not given: a key for this
   * stack alone, kept nowhere.
   */
  secretsKeyFile?: string;
  /**
   * Instances of the functions (default 1), each with a runtime of its own (clients, caches,
   * limiter, slow verdicts, counters) and its own pump, checks and reconciler, behind one
   * endpoint per function that sends each request to the next instance.
   */
  instances?: number;
}

export interface LocalStack {
  url: string;
  port: number;
  config: HeraldConfig & { adminToken: string; ingestToken: string };
  emulators: EmulatorHosts;
  /** Instance 0's runtime (the only one, with one instance). */
  runtime: Runtime;
  /** Every instance's runtime, by instance number: a function's requests go to each in turn. */
  runtimes: Runtime[];
  /**
   * Stops serving as a deployed function does (stopServing, adapters/graceful-stop.ts): new
   * requests get 503 (Pub/Sub brings pushes again later), requests in progress and the loops'
   * rounds get up to `drainMs` (default: the attempt timeout + 2 s; at most 7 s) to finish and
   * write what they did; `purge` then deletes this project's topics and subscriptions (tests);
   * the clients close, and last the emulators this stack started. Every step is bounded: all
   * of it ends within 9.5 s (10 s more with `purge`).
   */
  stop(options?: { purge?: boolean; drainMs?: number }): Promise<void>;
}

/** Deleting a test project's topics and subscriptions, on top of the stop budget. */
const PURGE_LIMIT_MS = 10_000;

const token = (kind: string) => `herald_${kind}_${randomBytes(18).toString('base64url')}`;

/**
 * The whole pipeline in one process: every function at http://127.0.0.1:PORT/<function>
 * on the functions framework's own server (as on Cloud Functions), the emulators behind
 * it, and the topology applied from the same description the Pulumi program uses.
 */
export async function startLocalStack(options: LocalStackOptions = {}): Promise<LocalStack> {
  const env = options.env ?? process.env;
  const progress = options.onProgress ?? (() => undefined);
  const instances = instanceCount(options.instances);
  // One instance runs each request as the process's runtime, as before; several, as the next one's.
  let serve = (_fn: FunctionName, handle: () => void) => handle();
  let ready = false;
  let health: Record<string, unknown> = {};
  let adminDigest: Buffer | undefined;
  let telemetry: TelemetrySetup | undefined;
  const apps = new Map<FunctionName, http.RequestListener>();
  const graceful = new GracefulStop();

  const server = http.createServer(graceful.guard((req, res) => {
    const url = new URL(req.url ?? '/', 'http://local');
    // Herald's metrics in Prometheus text for a scraper on this machine (docs/observability.md); nothing in them names a destination or an event.
    if (url.pathname === '/metrics' && telemetry?.prometheus) {
      telemetry.prometheus(req, res);
      return;
    }
    if (url.pathname === '/healthz') {
      const answer = healthAnswer(ready, health, req.headers.authorization, adminDigest);
      res.writeHead(answer.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer.body));
      return;
    }
    // The console lives on the admin function (/admin/console/ here, /console/ on its own URL on
    // GCP); http://127.0.0.1:PORT/console is where people look for it first.
    if (url.pathname === '/console' || url.pathname.startsWith('/console/')) {
      res.writeHead(308, { location: `/admin${url.pathname === '/console' ? '/console/' : url.pathname}${url.search}` });
      res.end();
      return;
    }
    const [, fn, ...rest] = url.pathname.split('/');
    const app = apps.get(fn as FunctionName);
    if (!app) {
      // Still starting (or starting again after a crash): a producer comes back in a second, as after any 503 of Herald's.
      res.writeHead(ready ? 404 : 503, { 'content-type': 'application/json', ...(ready ? {} : { 'retry-after': '1' }) });
      res.end(JSON.stringify({ error: ready ? `no function at /${fn ?? ''}; functions: ${FUNCTION_NAMES.map((f) => `/${f}`).join(', ')}` : 'starting' }));
      return;
    }
    // Cloud Functions hands a function the path after its name; so does local mode.
    req.url = `/${rest.join('/')}${url.search}`;
    serve(fn as FunctionName, () => app(req, res));
  }));
  // An idle keep-alive connection is closed by its client, never under it. Node's server closes
  // one after 5 s and Node's client stops reusing it after 4 s (the 5 s hint less 1): on a busy
  // machine the event loop stalls past that second, a client sends on a connection as the
  // server's timer (run before the request is read) closes it, and the kernel resets it
  // (api-fuzz: ECONNRESET beside a chaos run). Past every common client's idle timeout.
  server.keepAliveTimeout = 65_000;
  // A request Node cannot parse (headers over its 16 KiB limit, a broken request line) never
  // reaches a function: answer it in Herald's JSON shape too, as a 4xx that says what is wrong.
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const tooLarge = err.code === 'HPE_HEADER_OVERFLOW';
    const status = tooLarge ? 431 : 400;
    const body = JSON.stringify({ error: tooLarge ? `request headers too large: at most ${http.maxHeaderSize} bytes in all` : `malformed HTTP request (${err.code ?? 'parse error'})` });
    socket.end(`HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
  });
  const port = options.port ?? Number(env.PORT ?? 8080);
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) =>
      reject(e.code === 'EADDRINUSE' ? new Error(`port ${port} is in use: set PORT to a free port (PORT=0 picks one)`) : e),
    );
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const actualPort = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${actualPort}`;
  progress(`listening on ${url}`);

  let emulators: RunningEmulators | undefined;
  const made: Runtime[] = [];
  try {
    let hosts = options.emulators;
    if (!hosts) {
      progress('starting the Pub/Sub and Firestore emulators (or reusing PUBSUB_EMULATOR_HOST / FIRESTORE_EMULATOR_HOST)');
      emulators = await startEmulators({ env, log: progress });
      hosts = emulators;
    }
    // The Google client libraries find the emulators through these variables.
    process.env.PUBSUB_EMULATOR_HOST = hosts.pubsubHost;
    process.env.FIRESTORE_EMULATOR_HOST = hosts.firestoreHost;
    process.env.METADATA_SERVER_DETECTION ??= 'none';

    // Local mode prints the tokens it uses, so it must hold them: a hash alone will not do here.
    for (const kind of ['ADMIN', 'INGEST']) {
      if (env[`HERALD_${kind}_TOKEN_SHA256`] && !env[`HERALD_${kind}_TOKEN`]) {
        throw new ConfigError(`local mode uses and prints HERALD_${kind}_TOKEN: set it instead of HERALD_${kind}_TOKEN_SHA256 (the hash is for deployments)`);
      }
    }
    const adminToken = env.HERALD_ADMIN_TOKEN || token('admin');
    const ingestToken = env.HERALD_INGEST_TOKEN || token('ingest');
    const config = loadConfig({
      ...env,
      HERALD_SECRETS_KEY: localSecretsKey(env, options.secretsKeyFile, progress),
      HERALD_ADMIN_TOKEN: adminToken,
      HERALD_INGEST_TOKEN: ingestToken,
      HERALD_PUSH_TOKEN: env.HERALD_PUSH_TOKEN || token('push'),
      HERALD_ALLOW_LOOPBACK: env.HERALD_ALLOW_LOOPBACK ?? 'true',
      // Locally the reconciler looks a minute after ingest, not 15: the emulator strands pushes after an outage.
      HERALD_RECONCILE_AFTER_MS: env.HERALD_RECONCILE_AFTER_MS ?? '60000',
      HERALD_PUSH_BASE_URL: url,
    });
    // One telemetry for every instance: one GET /metrics, the instances' counts added together.
    telemetry = createTelemetry(config, { local: true }, env);
    // The Overview panel's numbers: those of GET /metrics, and the lanes' ages every instance sees.
    const laneAges = new LaneAges();
    const overrides = {
      telemetry: telemetry.telemetry,
      laneAges,
      health: localHealth(config, telemetry, laneAges, new Date()),
      // No destination reaches the emulators or this server, loopback allowed or not.
      localServices: localServicesOf(hosts, actualPort),
      operational: operationalEvents,
      ...(options.log ? { log: options.log } : {}),
      ...(options.http ? { http: options.http } : {}),
      ...(options.resolver ? { resolver: options.resolver } : {}),
      ...(options.idTokens ? { idTokens: options.idTokens } : {}),
    };
    // Several instances: each its own runtime, its log lines tagged with its number.
    const instanceBase = instances > 1 ? (options.log ?? createLogger({ level: parseSeverity(config.logLevel) })) : undefined;
    for (let i = 0; i < instances; i++) made.push(createRuntime(config, instanceBase ? { ...overrides, log: instanceLog(instanceBase, i) } : overrides));
    const runtimes = [...made];
    const runtime = runtimes[0]!;
    adminDigest = runtime.credentials.admin;

    const { asInstance, installRuntime } = await import('../../functions/process-runtime');
    const { prepareFunctionServer } = await import('../../functions/index');
    installRuntime(runtime);
    if (instances > 1) serve = roundRobin(runtimes, asInstance);
    for (const fn of FUNCTION_NAMES) {
      const fnServer = getTestServer(fn);
      prepareFunctionServer(fnServer, fn);
      apps.set(fn, fnServer.listeners('request')[0] as http.RequestListener);
    }

    progress(`applying the topology to project ${config.projectId}`);
    const target = pushTargetFrom(config);
    await applyTopology(runtime.pubsub, runtime.topology, target);
    // Lanes of their own (dedicated ones, and those from before lanes were shared, which may
    // still hold messages) point at this run's port. The whole registry on purpose, once per
    // start: every dedicated lane, and a secret this key cannot open stops the start here.
    const destinations = await runtime.destinations.list();
    const dedicated = destinations.filter((d) => d.lane === 'dedicated').map((d) => d.id);
    const own = new Set([...dedicated, ...((await runtime.lanes.existingLanes?.()) ?? [])]);
    await forEachLimited([...own], 8, (id) => runtime.lanes.ensureLane(id));

    health = {
      projectId: config.projectId,
      emulators: { pubsub: hosts.pubsubHost, firestore: hosts.firestoreHost },
      topics: Object.fromEntries(Object.entries(runtime.topology.topics).map(([k, t]) => [k, t.name])),
      sharedLanes: runtime.topology.laneTopics.length,
      functions: Object.fromEntries(FUNCTION_NAMES.map((f) => [f, `${url}/${f}`])),
      destinations: destinations.length,
      timeScale: config.timeScale,
      ...(instances > 1 ? { instances } : {}),
    };
    // Cloud Scheduler's part on GCP: each call lands on one instance. So here one pump, one check
    // and one reconciler run at a time, each pump round and each tick on the next instance in
    // turn, with that instance's caches (instances that disagree meet as they do deployed). Every
    // instance polling at once would be N times the reads, and N pumps racing for the same claims.
    // Once a counter bucket, as Cloud Scheduler's minute is deployed: the bucket never shrinks
    // below the 1 s flush, and a check more often would read the same documents again.
    const checkMs = config.suspensionCheckMs ?? Math.max(100, runtime.counters.options.bucketMs);
    let round = 0;
    const turnOf = () => runtimes[round++ % runtimes.length]!;
    // The pump's deps, moved to the next instance after each round (runPump reads them each round).
    const pumpTurn = pumpDeps(runtime);
    const loops = {
      // The retry pump, in-process, for as long as the stack runs.
      pump: runPump(pumpTurn, { intervalMs: config.pumpIntervalMs, ...(runtimes.length > 1 ? { onRound: () => Object.assign(pumpTurn, pumpDeps(turnOf())) } : {}) }),
      // The batcher, beside the pump on GCP: here for as long as the stack runs, on the first instance (one at a time, as the schedule runs it).
      batcher: runBatcher(batcherDeps(runtime)),
      // The suspension check, each minute of scaled time (at least each counter bucket).
      checker: runPeriodically('suspension check', checkMs, () => checkThresholds(suspensionDeps(turnOf())), runtime.log),
      // The scheduled pump's first step on GCP: the reconciler, on its own interval here.
      reconciler: runPeriodically('reconciler', config.reconcileIntervalMs, () => reconcileOnce(reconcileDeps(turnOf())), runtime.log),
      // Beside them there: ordered keys whose head stalled (app/ordering/ordered-delivery.ts).
      orderedKeys: runPeriodically('ordered keys', config.reconcileIntervalMs, () => repairKeys({ pump: pumpDeps(turnOf()), log: runtime.log }), runtime.log),
      // And its next step there: the purge of deleted accounts' data (app/access/account-purge.ts), each run bounded to the interval.
      purger: runPeriodically('account purge', config.reconcileIntervalMs, () => {
        const rt = turnOf();
        return finishAccountPurges(accountPurgeDeps(rt), rt.clock.now().getTime() + config.reconcileIntervalMs);
      }, runtime.log),
    };
    progress(`retry pump every ${config.pumpIntervalMs} ms${config.timeScale !== 1 ? `; policy delays divided by HERALD_TIME_SCALE=${config.timeScale}` : ''}`);
    if (instances > 1) progress(`${instances} instances, each with its own runtime; each function's requests, and each pump round and scheduled tick, go to them in turn`);
    ready = true;
    const emulatorsRef = emulators;
    return {
      url,
      port: actualPort,
      config: { ...runtime.config, adminToken, ingestToken },
      emulators: hosts,
      runtime,
      runtimes,
      async stop(stopOptions = {}) {
        ready = false;
        // The deployed functions' stop, plus what only local mode runs: its loops, and the
        // emulators it started — stopped last, once nothing is left that writes to them.
        const purge = stopOptions.purge ? [{ name: "deleting the project's topics and subscriptions", limitMs: PURGE_LIMIT_MS, run: () => purgeProject(runtime) }] : [];
        const emulatorStop = emulatorsRef && (emulatorsRef.started.pubsub || emulatorsRef.started.firestore) ? [{ name: 'the emulators it started', limitMs: STOP_BUDGET_MS, run: () => emulatorsRef.stop() }] : [];
        const own = [{ name: 'telemetry', limitMs: CLOSE_LIMIT_MS, run: () => telemetry?.telemetry.shutdown() }, ...emulatorStop];
        await stopServing({
          graceful,
          server,
          log: instanceBase ?? runtime.log,
          runtime: instances > 1 ? allOf(runtimes) : runtime,
          loops: () => Promise.all([loops.pump.stop(), loops.batcher.stop(), loops.checker.stop(), loops.reconciler.stop(), loops.purger.stop(), loops.orderedKeys.stop()]).then(() => undefined),
          drainMs: stopOptions.drainMs ?? runtime.config.deliveryTimeoutMs + 2000,
          beforeClose: purge,
          after: own,
          budgetMs: STOP_BUDGET_MS + (stopOptions.purge ? PURGE_LIMIT_MS : 0),
        });
      },
    };
  } catch (e) {
    server.close();
    // A start-up that failed after the runtime was made (a secret it cannot decrypt, say) leaves no client open.
    await Promise.all(made.map((rt) => rt.close()));
    await telemetry?.telemetry.shutdown();
    await emulators?.stop();
    throw e;
  }
}

/** HERALD_SECRETS_KEY as given; else kept in (or made into) `file`; else one for this stack only. */
function localSecretsKey(env: NodeJS.ProcessEnv, file: string | undefined, progress: (line: string) => void): string {
  if (env.HERALD_SECRETS_KEY) return env.HERALD_SECRETS_KEY;
  if (file === undefined) return generateSecretsKey();
  const local = loadOrCreateLocalSecretsKey(file);
  progress(`destination signing secrets are encrypted in Firestore with key ${local.keyIds[0]!} from ${local.file} (${local.created ? 'made now' : 'kept from an earlier run'}; set HERALD_SECRETS_KEY to use your own)`);
  if (local.warning) progress(local.warning);
  return local.key;
}

/** Deletes every subscription and topic of the runtime's project (tests share emulators). */
async function purgeProject(runtime: Runtime): Promise<void> {
  const [subscriptions] = await runtime.pubsub.getSubscriptions();
  await Promise.all(subscriptions.map((s) => s.delete().catch(() => undefined)));
  const [topics] = await runtime.pubsub.getTopics();
  await Promise.all(topics.map((t) => t.delete().catch(() => undefined)));
}

