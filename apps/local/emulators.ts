// Starts (or reuses) the Pub/Sub and Firestore emulators for local mode and tests.
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkPrerequisites, EmulatorKind, KINDS, SPECS } from './emulator-prerequisites';
import { installExitSafety, killGroup, liveGroups, sleep } from './emulator-processes';

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

export interface StartOptions {
  /** progress lines, and the children's output prefixed with [pubsub] or [firestore] */
  log?: (line: string) => void;
  /** default 60000 */
  timeoutMs?: number;
  /** default process.env */
  env?: NodeJS.ProcessEnv;
  /** How long an emulator named in the environment may take to answer; default REUSE_PATIENCE_MS. */
  reusePatienceMs?: number;
}

/**
 * An emulator named in the environment is waited for this long: one started a moment ago in
 * another terminal, or busy (just resumed, catching up), answers late, and Herald exiting at
 * once would leave its user (or a supervisor) to start it again.
 */
export const REUSE_PATIENCE_MS = 15_000;

const TAIL_LINES = 20;

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

async function reuse(kind: EmulatorKind, host: string, patienceMs: number, log: StartOptions['log']): Promise<Started> {
  const { envVar, title } = SPECS[kind];
  const until = Date.now() + patienceMs;
  let probe = await answers(host, 2000);
  if (!probe.ok && Date.now() < until) log?.(`the ${title} at ${host} does not answer yet (${probe.reason}); waiting up to ${patienceMs / 1000} s for it`);
  while (!probe.ok && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 500));
    probe = await answers(host, 2000);
  }
  if (!probe.ok) {
    throw new Error(
      `${envVar}=${host} is set, but no ${title} answered at http://${host}/ within ${patienceMs / 1000} s (${probe.reason}). ` +
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
      return fromEnv ? reuse(kind, fromEnv, options.reusePatienceMs ?? REUSE_PATIENCE_MS, options.log) : startEmulator(kind, gcloud, deadline, options);
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
