import { ChildProcess } from 'node:child_process';
import { createWriteStream, WriteStream } from 'node:fs';
import { spawnLocalHerald } from '../support/local-herald';

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
    /** `npm start`'s arguments (`--instances N`). */
    private readonly args: readonly string[] = [],
    /** Share of Firestore commits whose reply is lost (test/support/lost-replies.ts). */
    private readonly loseReplies = 0,
    /** What runs in place of `npm start` (`apps/rehearsal/main.ts`). */
    private readonly entry?: string,
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

  private async startOnce(): Promise<void> {
    const herald = spawnLocalHerald(this.env, { detached: true, args: this.args, loseReplies: this.loseReplies, onOutput: (chunk) => this.log.write(chunk), ...(this.entry ? { entry: this.entry } : {}) });
    this.child = herald.child;
    await herald.ready();
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
