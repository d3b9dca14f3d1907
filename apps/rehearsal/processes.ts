import { ChildProcess, spawn } from 'node:child_process';
import { connect } from 'node:net';
import path from 'node:path';
import { FunctionName } from '../../shared/topology';
import { freePort } from '../local/emulators';

/** The functions framework's own CLI, as Cloud Functions' Node.js runtime starts it. */
export const FRAMEWORK_CLI = path.join('node_modules', '@google-cloud', 'functions-framework', 'build', 'src', 'main.js');

/** How long a function process has between SIGTERM and SIGKILL: Cloud Run's 10 s. */
export const SIGTERM_GRACE_MS = 10_000;

export interface FunctionProcess {
  fn: FunctionName;
  /** Its number among the processes of its function. */
  index: number;
  port: number;
  /** Answers requests (started and listening, not stopping). */
  live: boolean;
  pid?: number;
  /** Times it was started again after it died. */
  restarts: number;
  /** Being replaced by a rollout: gets no new request, finishes those under way, then gets SIGTERM. */
  draining?: boolean;
}

export interface ProcessSpec {
  fn: FunctionName;
  index: number;
  port: number;
  env: Record<string, string>;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Resolves once something accepts connections on the port, or rejects after `timeoutMs`. */
async function listening(port: number, timeoutMs: number, alive: () => boolean): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => (socket.destroy(), resolve(true)));
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    if (!alive()) throw new Error(`exited before it listened on ${port}`);
    if (Date.now() > deadline) throw new Error(`did not listen on ${port} within ${timeoutMs} ms`);
    await sleep(100);
  }
}

/**
 * Each function as processes of its own, started by the framework's CLI on the built package
 * (`--source` its directory, whose package.json names dist/functions/index.js), restarted when
 * one dies as Cloud Run starts a new instance, and stopped with SIGTERM and Cloud Run's grace.
 */
export class Supervisor {
  readonly processes: FunctionProcess[] = [];
  private readonly children = new Map<FunctionProcess, ChildProcess>();
  private readonly envs = new Map<FunctionProcess, Record<string, string>>();
  private stopping = false;
  private readonly restarting = new Set<FunctionProcess>();

  constructor(
    private readonly packageDir: string,
    private readonly note: (line: string) => void,
    private readonly output: (fn: string, line: string) => void,
  ) {
    // Whatever way this process ends, no function process outlives it.
    process.once('exit', () => {
      for (const child of this.children.values()) child.kill('SIGKILL');
    });
  }

  /** Starts every process and resolves once all listen. */
  async start(specs: readonly ProcessSpec[], timeoutMs = 60_000): Promise<void> {
    await Promise.all(
      specs.map((spec) => {
        const proc: FunctionProcess = { fn: spec.fn, index: spec.index, port: spec.port, live: false, restarts: 0 };
        this.processes.push(proc);
        return this.launch(proc, spec.env, timeoutMs);
      }),
    );
  }

  private async launch(proc: FunctionProcess, env: Record<string, string>, timeoutMs: number): Promise<void> {
    this.envs.set(proc, env);
    const cli = path.join(this.packageDir, FRAMEWORK_CLI);
    const child = spawn(process.execPath, [cli, `--target=${proc.fn}`, `--source=${this.packageDir}`, `--port=${proc.port}`], {
      cwd: this.packageDir,
      env: { PATH: process.env.PATH ?? '', ...(process.env.HOME ? { HOME: process.env.HOME } : {}), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.children.set(proc, child);
    if (child.pid !== undefined) proc.pid = child.pid;
    const name = `${proc.fn}#${proc.index}`;
    for (const stream of [child.stdout, child.stderr]) {
      let partial = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => {
        const lines = (partial + chunk).split('\n');
        partial = lines.pop() ?? '';
        for (const line of lines) if (line) this.output(name, line);
      });
    }
    let exited = false;
    child.once('exit', (code, signal) => {
      exited = true;
      proc.live = false;
      if (this.children.get(proc) === child) this.children.delete(proc);
      // A process retired by a rollout already has its replacement.
      if (this.stopping || proc.draining) return;
      // Cloud Run starts another instance in place of one that died.
      this.note(`${name} (pid ${child.pid ?? '?'}) exited (${signal ?? `code ${code}`}); starting it again`);
      proc.restarts++;
      // A terminal's Ctrl-C reaches the processes as it reaches this one: one that stopped on it is not started again.
      setTimeout(() => {
        if (!this.stopping && !proc.draining) void this.launch(proc, env, timeoutMs).catch((e: unknown) => this.note(`${name} did not start again: ${(e as Error).message}`));
      }, 200);
    });
    await listening(proc.port, timeoutMs, () => !exited);
    if (!exited && !this.stopping) proc.live = true;
  }

  /**
   * Replaces a process as a Cloud Run rollout replaces an instance: the new one is started and
   * listening before the old one stops getting requests, and only then does the old one get
   * SIGTERM (with the grace) to finish those under way. Resolves once the old one has exited.
   */
  async restart(fn: FunctionName, index: number, graceMs = SIGTERM_GRACE_MS, timeoutMs = 60_000): Promise<{ old: FunctionProcess; fresh: FunctionProcess }> {
    const old = this.processes.find((p) => p.fn === fn && p.index === index && !p.draining);
    const env = old && this.envs.get(old);
    if (!old || !env) throw new RestartRefused(`no process ${fn}#${index}`, 'unknown');
    if (this.stopping || this.restarting.has(old)) throw new RestartRefused(`${fn}#${index} is ${this.stopping ? 'stopping' : 'being restarted already'}`, 'busy');
    this.restarting.add(old);
    try {
      const port = await freePort();
      const fresh: FunctionProcess = { fn, index, port, live: false, restarts: old.restarts + 1 };
      this.processes.splice(this.processes.indexOf(old) + 1, 0, fresh);
      try {
        await this.launch(fresh, { ...env, PORT: String(port) }, timeoutMs);
      } catch (e) {
        fresh.draining = true;
        this.children.get(fresh)?.kill('SIGKILL');
        this.processes.splice(this.processes.indexOf(fresh), 1);
        throw e;
      }
      old.draining = true;
      old.live = false;
      const child = this.children.get(old);
      if (child) await this.terminate(child, graceMs);
      this.processes.splice(this.processes.indexOf(old), 1);
      this.envs.delete(old);
      return { old, fresh };
    } finally {
      this.restarting.delete(old);
    }
  }

  private terminate(child: ChildProcess, graceMs: number): Promise<void> {
    return new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      child.once('exit', () => (clearTimeout(timer), resolve()));
      child.kill('SIGTERM');
    });
  }

  /** SIGTERM to every process; SIGKILL to any still running after `graceMs`. */
  async stop(graceMs = SIGTERM_GRACE_MS): Promise<void> {
    this.stopping = true;
    for (const proc of this.processes) proc.live = false;
    await Promise.all([...this.children.values()].map((child) => this.terminate(child, graceMs)));
  }
}

/** Why a restart was not done: `unknown` names no process, `busy` one that cannot be restarted now. */
export class RestartRefused extends Error {
  constructor(
    message: string,
    readonly reason: 'unknown' | 'busy',
  ) {
    super(message);
  }
}
