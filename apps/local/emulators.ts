// Starts (or reuses) the Pub/Sub and Firestore emulators for local mode and tests.
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { accessSync, constants as fsConstants, existsSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';

export interface EmulatorHosts {
  pubsubHost: string;
  firestoreHost: string;
}

export interface RunningEmulators extends EmulatorHosts {
  /** which of the two this call started itself (false = reused from env) */
  started: { pubsub: boolean; firestore: boolean };
  /** The process group of each emulator this call started (the chaos test pauses one with SIGSTOP). */
  processGroups: { pubsub?: number; firestore?: number };
  /** stops only what this call started; idempotent */
  stop(): Promise<void>;
}

export class EmulatorPrerequisiteError extends Error {
  override name = 'EmulatorPrerequisiteError';
}

export interface StartOptions {
  /** progress lines, and the children's output prefixed with [pubsub] or [firestore] */
  log?: (line: string) => void;
  /** default 60000 */
  timeoutMs?: number;
  /** default process.env */
  env?: NodeJS.ProcessEnv;
}

export type EmulatorKind = 'pubsub' | 'firestore';

export interface PrerequisiteOptions {
  env?: NodeJS.ProcessEnv;
  /** only these are checked; default both */
  emulators?: EmulatorKind[];
}

interface EmulatorSpec {
  envVar: string;
  title: string;
  /** gcloud component ids the start command needs, with the apt package that provides each */
  components: { id: string; apt: string }[];
  args: (hostPort: string, dataDir: string) => string[];
}

const SPECS: Record<EmulatorKind, EmulatorSpec> = {
  pubsub: {
    envVar: 'PUBSUB_EMULATOR_HOST',
    title: 'Pub/Sub emulator',
    // The Pub/Sub emulator command exists only in the beta track.
    components: [
      { id: 'beta', apt: 'google-cloud-cli' },
      { id: 'pubsub-emulator', apt: 'google-cloud-cli-pubsub-emulator' },
    ],
    // A private data dir: gcloud writes env.yaml there, and the shared default would be
    // overwritten by concurrent runs.
    args: (hostPort, dataDir) => ['beta', 'emulators', 'pubsub', 'start', `--host-port=${hostPort}`, `--data-dir=${dataDir}`, '--quiet'],
  },
  firestore: {
    envVar: 'FIRESTORE_EMULATOR_HOST',
    title: 'Firestore emulator',
    components: [{ id: 'cloud-firestore-emulator', apt: 'google-cloud-cli-firestore-emulator' }],
    args: (hostPort) => ['emulators', 'firestore', 'start', `--host-port=${hostPort}`, '--quiet'],
  },
};

const KINDS: EmulatorKind[] = ['pubsub', 'firestore'];
const MIN_JAVA = 11;
const TAIL_LINES = 20;

// ---------------------------------------------------------------- prerequisites

function findOnPath(name: string, env: NodeJS.ProcessEnv): string | undefined {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, fsConstants.X_OK);
      return candidate;
    } catch {
      // not here; keep looking
    }
  }
  return undefined;
}

function run(file: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ ok: boolean; output: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { env, timeout: 10_000, encoding: 'utf8' }, (error, stdout, stderr) => {
      resolve({ ok: !error, output: `${stdout}${stderr}` });
    });
  });
}

/** Same parsing as gcloud's own check (command_lib/util/java.py): "1.8.0" is 8, "17.0.1" is 17. */
export function parseJavaMajor(versionOutput: string): number | undefined {
  const legacy = /version "1\.(\d+)\./.exec(versionOutput);
  if (legacy?.[1]) return Number(legacy[1]);
  const modern = /version "([1-9]\d*)/.exec(versionOutput);
  return modern?.[1] ? Number(modern[1]) : undefined;
}

const JAVA_INSTALL = 'Java 17+ recommended: `apt-get install openjdk-17-jre-headless`';

async function javaProblem(env: NodeJS.ProcessEnv): Promise<string | undefined> {
  const java = findOnPath('java', env);
  if (!java) return `\`java\` is not on PATH; the emulators need a Java ${MIN_JAVA}+ JRE (${JAVA_INSTALL}).`;
  const { output } = await run(java, ['-version'], env);
  const major = parseJavaMajor(output);
  if (major === undefined) return `Could not read the version of ${java} (\`java -version\` said: ${output.trim().slice(0, 200)}); the emulators need Java ${MIN_JAVA}+ (${JAVA_INSTALL}).`;
  if (major < MIN_JAVA) return `${java} is Java ${major}; the emulators need Java ${MIN_JAVA}+ (${JAVA_INSTALL}).`;
  return undefined;
}

/**
 * The SDK root holds `.install/<component>.manifest` for every installed component: that is
 * what gcloud itself consults before starting an emulator. Resolving the gcloud symlink finds
 * the root without starting gcloud (~0.5 s); `gcloud info` is the fallback for odd layouts.
 */
async function findSdkRoot(gcloud: string, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  const guess = dirname(dirname(realpathSync(gcloud)));
  if (existsSync(join(guess, '.install'))) return guess;
  const { ok, output } = await run(gcloud, ['info', '--format=value(installation.sdk_root)'], env);
  const root = output.trim().split('\n')[0]?.trim();
  return ok && root && existsSync(join(root, '.install')) ? root : undefined;
}

/** Throws an EmulatorPrerequisiteError listing everything missing; resolves to the gcloud path. */
export async function checkPrerequisites(options: PrerequisiteOptions = {}): Promise<string> {
  const env = options.env ?? process.env;
  const kinds = options.emulators ?? KINDS;
  const gcloud = findOnPath('gcloud', env);
  if (!gcloud) {
    throw new EmulatorPrerequisiteError(
      '`gcloud` is not on PATH: install the Google Cloud CLI, e.g. `apt-get install google-cloud-cli` ' +
        '(from Google\'s apt repository) or see https://cloud.google.com/sdk/docs/install',
    );
  }
  const [java, sdkRoot] = await Promise.all([javaProblem(env), findSdkRoot(gcloud, env)]);
  const problems = java ? [java] : [];
  if (sdkRoot) {
    const seen = new Set<string>();
    for (const kind of kinds) {
      for (const { id, apt } of SPECS[kind].components) {
        if (seen.has(id) || existsSync(join(sdkRoot, '.install', `${id}.manifest`))) continue;
        seen.add(id);
        problems.push(
          `The gcloud component \`${id}\` (needed by the ${SPECS[kind].title}) is not installed in ${sdkRoot}: ` +
            `run \`gcloud components install ${id}\`, or for an apt-installed CLI \`apt-get install ${apt}\`.`,
        );
      }
    }
  }
  if (problems.length > 0) throw new EmulatorPrerequisiteError(problems.join('\n'));
  return gcloud;
}

// ---------------------------------------------------------------- process groups

/** process group id -> data dir, for everything started and not yet stopped */
const liveGroups = new Map<number, string>();
let safetyInstalled = false;

function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Detached children survive the parent; these hooks take them down with it. */
function installExitSafety(): void {
  if (safetyInstalled) return;
  safetyInstalled = true;
  const killAll = (): void => {
    for (const [pgid, dataDir] of liveGroups) {
      signalGroup(pgid, 'SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    }
    liveGroups.clear();
  };
  process.on('exit', killAll);
  // Node's default signal action skips 'exit' handlers: when nobody else listens, take the
  // emulators down and re-raise. An application that handles the signal itself keeps
  // control of stopping — local mode drains its requests before it stops the emulators, and
  // whichever way it exits, the 'exit' hook above still takes down what is left.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const onSignal = (): void => {
      if (process.listenerCount(signal) > 1) return;
      killAll();
      process.removeListener(signal, onSignal);
      process.kill(process.pid, signal);
    };
    process.on(signal, onSignal);
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * kill(-pgid, 0) also counts zombies, and the java grandchildren are reaped by PID 1, which
 * can take seconds (measured 1.4-2 s here). /proc tells whether anything still runs.
 */
export function groupAlive(pgid: number): boolean {
  if (!existsSync('/proc/self/stat')) return signalGroup(pgid, 0);
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // exited while we looked
    }
    // Fields after the parenthesised command name: state ppid pgrp ...
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(pgrp) === pgid && state !== 'Z') return true;
  }
  return false;
}

async function waitGroupGone(pgid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (groupAlive(pgid)) {
    if (Date.now() >= deadline) return false;
    await sleep(100);
  }
  return true;
}

async function killGroup(child: ChildProcess): Promise<void> {
  const pgid = child.pid;
  if (pgid === undefined) return;
  signalGroup(pgid, 'SIGTERM');
  if (!(await waitGroupGone(pgid, 3000))) {
    signalGroup(pgid, 'SIGKILL');
    await waitGroupGone(pgid, 2000);
  }
  liveGroups.delete(pgid);
}

// ---------------------------------------------------------------- start / wait

/** GET / answers 200 "Ok" on both emulators once they serve requests. */
async function answers(host: string, timeoutMs = 1000): Promise<{ ok: boolean; reason: string }> {
  try {
    const response = await fetch(`http://${host}/`, { signal: AbortSignal.timeout(timeoutMs) });
    const body = await response.text();
    return response.ok ? { ok: true, reason: '' } : { ok: false, reason: `HTTP ${response.status}: ${body.slice(0, 100)}` };
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code;
    return { ok: false, reason: cause ?? (error as Error).message };
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => (port ? resolve(port) : reject(new Error('no port assigned'))));
    });
  });
}

class PortTakenError extends Error {}

interface Started {
  host: string;
  /** Absent for an emulator reused from the environment. */
  processGroup?: number;
  stop(): Promise<void>;
}

// The Pub/Sub emulator logs BindException but keeps its JVM alive, so waiting for an exit
// would hang until the timeout.
const BIND_FAILURE = /BindException|Address already in use/;
// Java stack frames would crowd the message out of a 20-line tail.
const STACK_FRAME = /^(\[\w+\] )?\s+at \S/;

async function startOnce(kind: EmulatorKind, gcloud: string, port: number, deadline: number, options: StartOptions): Promise<Started> {
  const spec = SPECS[kind];
  const host = `127.0.0.1:${port}`;
  const dataDir = await mkdtemp(join(tmpdir(), `herald-${kind}-`));
  const env = { ...(options.env ?? process.env), CLOUDSDK_CORE_DISABLE_PROMPTS: '1' };
  const child = spawn(gcloud, spec.args(host, dataDir), { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  if (child.pid !== undefined) liveGroups.set(child.pid, dataDir);
  // The emulators must not keep the parent alive: stop() or the exit hooks end them.
  child.unref();

  const tail: string[] = [];
  let bindFailed = false;
  let exited: string | undefined;
  let spawnError: Error | undefined;
  for (const stream of [child.stdout, child.stderr]) {
    let partial = '';
    stream?.setEncoding('utf8');
    stream?.on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        options.log?.(line.startsWith(`[${kind}]`) ? line : `[${kind}] ${line}`);
        if (BIND_FAILURE.test(line)) bindFailed = true;
        if (STACK_FRAME.test(line)) continue;
        tail.push(line);
        if (tail.length > TAIL_LINES) tail.shift();
      }
    });
    (stream as Socket | null)?.unref();
  }
  child.once('exit', (code, signal) => (exited = signal ? `signal ${signal}` : `code ${code}`));
  child.once('error', (error) => (spawnError = error));

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= killGroup(child).then(() => rm(dataDir, { recursive: true, force: true })));
  const fail = async (why: string, ErrorType: new (message: string) => Error = Error): Promise<never> => {
    await stop();
    throw new ErrorType(`The ${spec.title} (gcloud ${spec.args(host, dataDir).join(' ')}) ${why}. Last output:\n${tail.join('\n')}`);
  };

  for (;;) {
    if (spawnError) return fail(`could not be spawned: ${spawnError.message}`);
    if (bindFailed) return fail(`could not bind ${host}`, PortTakenError);
    if (exited) return fail(`exited early (${exited})`);
    if (Date.now() > deadline) return fail(`did not answer at http://${host}/ within ${options.timeoutMs ?? 60_000} ms`);
    // If the port was taken, the answer may come from someone else: believe it only while ours is healthy.
    if ((await answers(host, 500)).ok && !bindFailed && !exited) return { host, stop, ...(child.pid !== undefined ? { processGroup: child.pid } : {}) };
    await sleep(150);
  }
}

async function startEmulator(kind: EmulatorKind, gcloud: string, deadline: number, options: StartOptions): Promise<Started> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const began = Date.now();
    options.log?.(`starting the ${SPECS[kind].title} on 127.0.0.1:${port}`);
    try {
      const started = await startOnce(kind, gcloud, port, deadline, options);
      options.log?.(`the ${SPECS[kind].title} answered at ${started.host} after ${Date.now() - began} ms`);
      return started;
    } catch (error) {
      // Another process can grab the port between freePort() closing it and the JVM binding it.
      if (!(error instanceof PortTakenError) || attempt >= 3) throw error;
      options.log?.(`port ${port} was taken; retrying the ${SPECS[kind].title} on another port`);
    }
  }
}

async function reuse(kind: EmulatorKind, host: string): Promise<Started> {
  const { envVar, title } = SPECS[kind];
  const probe = await answers(host, 2000);
  if (!probe.ok) {
    throw new Error(
      `${envVar}=${host} is set, but no ${title} answers at http://${host}/ (${probe.reason}). ` +
        `Unset ${envVar} to let Herald start one, or start the emulator at that address.`,
    );
  }
  return { host, stop: async () => undefined };
}

export async function startEmulators(options: StartOptions = {}): Promise<RunningEmulators> {
  const env = options.env ?? process.env;
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  const toStart = KINDS.filter((kind) => !env[SPECS[kind].envVar]);
  const gcloud = toStart.length > 0 ? await checkPrerequisites({ env, emulators: toStart }) : '';
  if (toStart.length > 0) installExitSafety();

  const results = await Promise.allSettled(
    KINDS.map((kind) => {
      const fromEnv = env[SPECS[kind].envVar];
      return fromEnv ? reuse(kind, fromEnv) : startEmulator(kind, gcloud, deadline, options);
    }),
  );
  const [pubsub, firestore] = results;
  if (pubsub?.status !== 'fulfilled' || firestore?.status !== 'fulfilled') {
    await Promise.all(results.map((r) => (r.status === 'fulfilled' ? r.value.stop() : undefined)));
    const failed = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as Error] : []));
    throw failed.length === 1 && failed[0] ? failed[0] : new AggregateError(failed, failed.map((e) => e.message).join('\n\n'));
  }

  let stopping: Promise<void> | undefined;
  return {
    pubsubHost: pubsub.value.host,
    firestoreHost: firestore.value.host,
    started: { pubsub: toStart.includes('pubsub'), firestore: toStart.includes('firestore') },
    processGroups: {
      ...(pubsub.value.processGroup !== undefined ? { pubsub: pubsub.value.processGroup } : {}),
      ...(firestore.value.processGroup !== undefined ? { firestore: firestore.value.processGroup } : {}),
    },
    stop: () => (stopping ??= Promise.all([pubsub.value.stop(), firestore.value.stop()]).then(() => undefined)),
  };
}

// ---------------------------------------------------------------- reset

export async function resetEmulators(hosts: EmulatorHosts, projectIds: string[]): Promise<void> {
  const calls = [
    { method: 'POST', url: `http://${hosts.pubsubHost}/reset` },
    ...projectIds.map((project) => ({
      method: 'DELETE',
      url: `http://${hosts.firestoreHost}/emulator/v1/projects/${encodeURIComponent(project)}/databases/(default)/documents`,
    })),
  ];
  await Promise.all(
    calls.map(async ({ method, url }) => {
      const response = await fetch(url, { method, signal: AbortSignal.timeout(10_000) });
      const body = await response.text();
      if (!response.ok) throw new Error(`${method} ${url} failed: HTTP ${response.status} ${body.slice(0, 200)}`);
    }),
  );
}
