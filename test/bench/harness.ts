/**
 * What `npm run bench -- rate` and `npm run bench -- isolation` share: progress lines on
 * stderr, Ctrl-C handling (first: stop and clean up; second: quit), cleanups run in reverse
 * order with a time limit each, and the emulators (reused from PUBSUB_EMULATOR_HOST /
 * FIRESTORE_EMULATOR_HOST, else started). The default bench (main.ts) keeps its own copy.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { RunningEmulators, startEmulators } from '../../apps/local/emulators';
import { Interrupted } from './load';

const CLEANUP_STEP_MS = 15_000;

export class UsageError extends Error {
  override name = 'UsageError';
}

/** An expected way for a run to fail: its message says it all, no stack needed. */
export class BenchFailure extends Error {
  override name = 'BenchFailure';
}

export class BenchHarness {
  readonly controller = new AbortController();
  private readonly cleanups: { what: string; run: () => Promise<void>; limitMs: number }[] = [];
  private progressOpen = false;
  private interrupts = 0;

  constructor(
    /** Shown with a usage error. */
    private readonly help: string,
    private readonly tag = 'bench',
  ) {}

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  readonly note = (line: string): void => {
    this.endProgress();
    process.stderr.write(`[${this.tag}] ${line}\n`);
  };

  /** On a terminal one line is rewritten in place; elsewhere every update is its own line. */
  readonly progress = (line: string, final = false): void => {
    if (process.stderr.isTTY) {
      process.stderr.write(`\r\x1b[2K[${this.tag}] ${line}${final ? '\n' : ''}`);
      this.progressOpen = !final;
    } else process.stderr.write(`[${this.tag}] ${line}\n`);
  };

  endProgress(): void {
    if (this.progressOpen) process.stderr.write('\n');
    this.progressOpen = false;
  }

  /** `limitMs`: how long the step may take (CLEANUP_STEP_MS unless it says it needs longer). */
  addCleanup(what: string, run: () => Promise<void>, limitMs = CLEANUP_STEP_MS): void {
    this.cleanups.push({ what, run, limitMs });
  }

  /** Rejects as soon as the run is interrupted, so no step keeps Ctrl-C waiting. */
  guard<T>(promise: Promise<T>): Promise<T> {
    const { signal } = this.controller;
    return new Promise((resolve, reject) => {
      const onAbort = () => reject(new Interrupted('interrupted'));
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      promise.then(
        (v) => (signal.removeEventListener('abort', onAbort), resolve(v)),
        (e: unknown) => (signal.removeEventListener('abort', onAbort), reject(e as Error)),
      );
    });
  }

  /** Starts or reuses the emulators, sets their env variables for this process, and stops them at the end (if started here). */
  async emulators(): Promise<RunningEmulators> {
    const lines: string[] = [];
    const reused = Boolean(process.env.PUBSUB_EMULATOR_HOST && process.env.FIRESTORE_EMULATOR_HOST);
    this.note(reused ? `reusing the emulators at ${process.env.PUBSUB_EMULATOR_HOST} and ${process.env.FIRESTORE_EMULATOR_HOST}` : 'starting the Pub/Sub and Firestore emulators');
    let emulators: RunningEmulators;
    try {
      emulators = await this.guard(startEmulators({ log: (line) => lines.push(line) }));
    } catch (e) {
      if (!(e instanceof Interrupted)) for (const line of lines.slice(-30)) this.note(line);
      throw e;
    }
    this.addCleanup('stopping the emulators', () => emulators.stop());
    process.env.PUBSUB_EMULATOR_HOST = emulators.pubsubHost;
    process.env.FIRESTORE_EMULATOR_HOST = emulators.firestoreHost;
    process.env.METADATA_SERVER_DETECTION ??= 'none';
    return emulators;
  }

  /** Whether the emulators still answer for cleanups (our own die with us on Ctrl-C). */
  emulatorsAlive(emulators: RunningEmulators): boolean {
    return !(this.controller.signal.aborted && emulators.started.pubsub);
  }

  private onSignal = (signal: NodeJS.Signals): void => {
    this.interrupts++;
    if (this.interrupts > 1) {
      process.stderr.write(`\n[${this.tag}] ${signal} again: quitting without cleaning up\n`);
      process.exit(130);
    }
    this.note(`${signal}: stopping and cleaning up (again to quit at once)`);
    this.controller.abort();
  };

  private async runCleanups(): Promise<void> {
    for (const { what, run, limitMs } of this.cleanups.reverse()) {
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([run(), new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`took over ${limitMs / 1000} s`)), limitMs)))]);
      } catch (e) {
        this.note(`cleanup: ${what} failed: ${(e as Error).message}`);
      } finally {
        clearTimeout(timer);
      }
    }
    this.cleanups.length = 0;
  }

  /** Runs `main` (its resolved value is the exit code), then the cleanups, then exits. */
  run(main: () => Promise<number>): void {
    process.on('SIGINT', this.onSignal);
    process.on('SIGTERM', this.onSignal);
    main()
      .then(
        (code) => code,
        (e: unknown) => {
          this.endProgress();
          if (e instanceof Interrupted) this.note('interrupted');
          else if (e instanceof BenchFailure) this.note(`failed: ${e.message}`);
          else if (e instanceof UsageError) process.stderr.write(`bench: ${e.message}\n\n${this.help}\n`);
          else this.note(`failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
          return e instanceof Interrupted ? 130 : 1;
        },
      )
      .then(async (code) => {
        await this.runCleanups();
        // Client libraries keep sockets and timers open; the run is over.
        process.exit(code);
      });
  }
}

/** A whole number ≥ min from a flag or an env variable, else the fallback. */
export function intOption(flag: string, raw: string | undefined, env: string, fallback: number, min: number): number {
  const value = raw ?? process.env[env];
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw new UsageError(`--${flag} (${env}) must be a whole number ≥ ${min}, not ${JSON.stringify(value)}`);
  return n;
}

export const mark = (met: boolean): string => (met ? 'MET' : 'NOT MET');

/** `--name value` pairs of a bench's arguments. */
export function flagsOf(args: readonly string[]): Record<string, string | undefined> {
  return Object.fromEntries(args.map((a, i) => [a, args[i + 1]]).filter(([a]) => a!.startsWith('--')));
}

/** BENCH_PROFILE=file: a V8 CPU profile of this process from now until the returned stop (open it in Chrome's DevTools). */
export async function startProfile(): Promise<(file: string) => Promise<string>> {
  const session = new Session();
  session.connect();
  const post = (method: string) => new Promise<unknown>((resolve, reject) => session.post(method, (e, r) => (e ? reject(e) : resolve(r))));
  await post('Profiler.enable');
  await post('Profiler.start');
  return async (file) => {
    const { profile } = (await post('Profiler.stop')) as { profile: object };
    writeFileSync(file, JSON.stringify(profile));
    session.disconnect();
    return file;
  };
}
