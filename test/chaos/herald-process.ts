import { ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, WriteStream } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');

/**
 * `npm start` as a process group of its own (tsx as a loader, not its CLI, whose child a
 * SIGKILL of the CLI would orphan), on emulators that outlive it. Every line it prints goes
 * to `logFile`, across restarts.
 */
export class HeraldProcess {
  private child: ChildProcess | undefined;
  private readonly log: WriteStream;
  /** Times it started and served. */
  starts = 0;

  constructor(
    private readonly env: NodeJS.ProcessEnv,
    logFile: string,
  ) {
    this.log = createWriteStream(logFile, { flags: 'a' });
  }

  /**
   * Starts Herald and resolves once it serves, trying again — as a process supervisor would —
   * when it exits before serving (it cannot start while the Pub/Sub emulator is paused).
   */
  async start(): Promise<void> {
    const deadline = Date.now() + 120_000;
    for (;;) {
      try {
        await this.startOnce();
        this.starts++;
        return;
      } catch (e) {
        if (Date.now() > deadline || !/exited/.test((e as Error).message)) throw e;
        this.log.write(`[chaos] Herald did not start (${(e as Error).message.split('\n')[0]}); starting it again in 1 s\n`);
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  }

  private startOnce(): Promise<void> {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'shared/local/main.ts')], {
      cwd: ROOT,
      env: this.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    child.stdout!.pipe(this.log, { end: false });
    return new Promise((resolve, reject) => {
      let output = '';
      const timer = setTimeout(() => reject(new Error(`Herald did not start within 60 s:\n${output.slice(-2000)}`)), 60_000);
      child.stderr!.on('data', (chunk: Buffer) => {
        this.log.write(chunk);
        if (output.length < 20_000) output += chunk.toString();
        if (/Herald is running at/.test(output)) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`Herald exited (${signal ?? code}) before it served:\n${output.slice(-2000)}`));
      });
    });
  }

  /** SIGKILL to the whole group: no handler runs, nothing is flushed or drained. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child?.pid) return;
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      return;
    }
    await exited;
    this.child = undefined;
  }

  /** SIGTERM, as Ctrl-C or Cloud Run would: Herald drains and exits (SIGKILL after 20 s). */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child?.pid || child.exitCode !== null) return;
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    process.kill(-child.pid, 'SIGTERM');
    const timer = setTimeout(() => child.pid && process.kill(-child.pid, 'SIGKILL'), 20_000);
    await exited;
    clearTimeout(timer);
    this.child = undefined;
  }

  async close(): Promise<void> {
    await this.stop();
    await new Promise<void>((r) => this.log.end(() => r()));
  }
}
