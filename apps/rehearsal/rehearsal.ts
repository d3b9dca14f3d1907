import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PubSub } from '@google-cloud/pubsub';
import { applyTopology } from '../../shared/adapters/pubsub/topology';
import { digestOf } from '../../shared/app/access/push-auth';
import { checkDeployedConfig, ConfigError, loadConfig } from '../../shared/config';
import { generateSecretsKey } from '../../shared/domain/access/secret-box';
import { pushTargetFrom } from '../../shared/runtime/runtime';
import { FUNCTION_NAMES, FunctionName, heraldTopology } from '../../shared/topology';
import { planFunctions } from '../../infra/function-plan';
import { EmulatorHosts, freePort, RunningEmulators, startEmulators } from '../local/emulators';
import { loadOrCreateLocalSecretsKey } from '../local/secrets-key';
import { processEnvironment, rehearsalEnvironment, settingsFromEnv } from './env';
import { stagePackage } from './package';
import { FunctionProcess, ProcessSpec, SIGTERM_GRACE_MS, Supervisor } from './processes';
import { ProxyState, RoundRobinProxy } from './proxy';
import { SchedulerStandIn } from './scheduler';

/** The functions that get several processes, as under load they get several instances. */
export const SCALED_FUNCTIONS: readonly FunctionName[] = ['ingest', 'deliver'];

export interface RehearsalOptions {
  root: string;
  env?: NodeJS.ProcessEnv;
  /** Port of the proxy; 0 picks one. Default PORT or 8080. */
  port?: number;
  /** Processes of each of SCALED_FUNCTIONS (default 2). */
  processes?: number;
  /** Build dist/ first, as the Pulumi program does (default true). */
  build?: boolean;
  emulators?: EmulatorHosts;
  /** Where the secrets key is kept when HERALD_SECRETS_KEY is not set; absent: one for this run. */
  secretsKeyFile?: string;
  onProgress?: (line: string) => void;
  /** Each line a function process prints, with its name (`deliver#1`). */
  onOutput?: (name: string, line: string) => void;
}

export interface Rehearsal {
  url: string;
  adminToken: string;
  ingestToken: string;
  projectId: string;
  /** HERALD_DESTINATION_CACHE_MS of the functions: how long a change made through one instance takes to reach the others. */
  destinationCacheMs: number;
  emulators: EmulatorHosts;
  processes: readonly FunctionProcess[];
  scheduler: SchedulerStandIn;
  /** Stops as Cloud Run stops instances: SIGTERM to every process, SIGKILL after the grace; then the emulators it started. */
  stop(): Promise<void>;
}

const token = (kind: string) => `herald_${kind}_${randomBytes(18).toString('base64url')}`;

/** The deployment's dress rehearsal: the built functions as processes of their own on the emulators, wired as the Pulumi program wires them. */
export async function startRehearsal(options: RehearsalOptions): Promise<Rehearsal> {
  const env = options.env ?? process.env;
  const progress = options.onProgress ?? (() => undefined);
  const state: ProxyState = { ready: false, health: {}, processes: [], stopping: false, note: progress };
  const proxy = new RoundRobinProxy(state);
  const url = await proxy.listen(options.port ?? Number(env.PORT ?? 8080));
  progress(`listening on ${url}`);
  let emulators: RunningEmulators | undefined;
  let pubsub: PubSub | undefined;
  // A directory of its own per run: two rehearsals (a test beside a terminal's) never share one.
  const stage = mkdtempSync(path.join(tmpdir(), 'herald-rehearsal-'));
  const packageDir = path.join(stage, 'package');
  const supervisor = new Supervisor(packageDir, progress, options.onOutput ?? (() => undefined));
  try {
    stagePackage(options.root, packageDir, { build: options.build ?? true, note: progress });
    let hosts = options.emulators;
    if (!hosts) {
      progress('starting the Pub/Sub and Firestore emulators (or reusing PUBSUB_EMULATOR_HOST / FIRESTORE_EMULATOR_HOST)');
      emulators = await startEmulators({ env, log: progress });
      hosts = emulators;
    }
    for (const kind of ['ADMIN', 'INGEST']) {
      if (env[`HERALD_${kind}_TOKEN_SHA256`] && !env[`HERALD_${kind}_TOKEN`]) throw new ConfigError(`the rehearsal uses and prints HERALD_${kind}_TOKEN: set it instead of HERALD_${kind}_TOKEN_SHA256`);
    }
    const adminToken = env.HERALD_ADMIN_TOKEN || token('admin');
    const ingestToken = env.HERALD_INGEST_TOKEN || token('ingest');
    const secretsKey = env.HERALD_SECRETS_KEY || (options.secretsKeyFile ? loadOrCreateLocalSecretsKey(options.secretsKeyFile).key : generateSecretsKey());
    // gcp:project and herald:topicPrefix of a stack; here what local mode reads.
    const projectId = env.HERALD_PROJECT_ID || 'herald-local';
    const topicPrefix = env.HERALD_TOPIC_PREFIX || 'herald';
    const identity = (role: string) => `${topicPrefix}-${role}@${projectId}.iam.gserviceaccount.com`;
    const shared = rehearsalEnvironment({
      settingsEnv: settingsFromEnv(env),
      project: projectId,
      topicPrefix,
      dedicatedLanes: [],
      identities: { push: identity('pusher'), scheduler: identity('scheduler') },
      proxyUrl: url,
      secrets: { adminToken, ingestToken, secretsKey },
      pushToken: env.HERALD_PUSH_TOKEN || token('push'),
      emulators: hosts,
    });
    // What each function will load, checked here first so a bad setting stops the rehearsal at once.
    const config = loadConfig(shared);
    checkDeployedConfig(config, shared);
    const names = { prefix: topicPrefix, laneShards: config.laneShards, retryShards: config.retryShards };
    const topology = heraldTopology(names);
    const plans = planFunctions({ topology, names, functions: {}, deliveryTimeoutMs: config.deliveryTimeoutMs });

    // This process's Pub/Sub client and pushTargetFrom find the emulator through the variable, as the functions do.
    process.env.PUBSUB_EMULATOR_HOST = hosts.pubsubHost;
    process.env.METADATA_SERVER_DETECTION ??= 'none';
    pubsub = new PubSub({ projectId });
    progress(`applying the topology to project ${projectId}, every push endpoint at ${url}/<function>`);
    const target = pushTargetFrom(config);
    await applyTopology(pubsub, topology, target);

    const perFunction = options.processes ?? 2;
    const revision = `${projectId}-rehearsal-${Date.now().toString(36)}`;
    const specs: ProcessSpec[] = [];
    for (const plan of plans) {
      const count = SCALED_FUNCTIONS.includes(plan.name) ? perFunction : 1;
      for (let index = 0; index < count; index++) {
        const port = await freePort();
        specs.push({ fn: plan.name, index, port, env: processEnvironment(shared, plan, port, revision) });
      }
    }
    state.processes = supervisor.processes;
    state.restart = (fn, index) => supervisor.restart(fn, index);
    progress(`starting ${specs.length} function processes (${FUNCTION_NAMES.map((f) => `${f} ×${specs.filter((s) => s.fn === f).length}`).join(', ')}) with the functions framework's CLI on ${packageDir}`);
    await supervisor.start(specs);

    const scheduler = new SchedulerStandIn({
      schedules: topology.schedules,
      timeScale: config.timeScale,
      note: progress,
      urlOf: (schedule) => {
        const call = new URL(target.endpointFor(schedule.function));
        const runSeconds = SchedulerStandIn.runSecondsOf(schedule, config.timeScale);
        if (runSeconds !== undefined) call.searchParams.set('runSeconds', String(runSeconds));
        return call;
      },
    });
    scheduler.start();
    progress(`scheduler stand-in: ${topology.schedules.map((s) => `${s.function} on '${s.cron}'`).join(', ')}${config.timeScale !== 1 ? `, minutes divided by HERALD_TIME_SCALE=${config.timeScale}` : ''}`);

    state.adminDigest = digestOf(adminToken);
    state.health = {
      projectId,
      emulators: { pubsub: hosts.pubsubHost, firestore: hosts.firestoreHost },
      topics: Object.fromEntries(Object.entries(topology.topics).map(([k, t]) => [k, t.name])),
      sharedLanes: topology.laneTopics.length,
      functions: Object.fromEntries(FUNCTION_NAMES.map((f) => [f, `${url}/${f}`])),
      timeScale: config.timeScale,
      rehearsal: { processes: specs.length, revision },
    };
    state.ready = true;
    const started = emulators;
    const client = pubsub;
    let stopping: Promise<void> | undefined;
    return {
      url,
      adminToken,
      ingestToken,
      projectId,
      destinationCacheMs: config.destinationCacheMs,
      emulators: hosts,
      processes: supervisor.processes,
      scheduler,
      stop: () =>
        (stopping ??= (async () => {
          state.stopping = true;
          // The emulators go last and need a moment: the processes get the rest of the 10 s.
          await Promise.all([supervisor.stop(SIGTERM_GRACE_MS - 1_500), scheduler.stop(SIGTERM_GRACE_MS - 1_500)]);
          await Promise.all([client.close().catch(() => undefined), proxy.close()]);
          await started?.stop();
          rmSync(stage, { recursive: true, force: true });
        })()),
    };
  } catch (e) {
    await supervisor.stop(2_000);
    await pubsub?.close().catch(() => undefined);
    await proxy.close();
    await emulators?.stop();
    rmSync(stage, { recursive: true, force: true });
    throw e;
  }
}
