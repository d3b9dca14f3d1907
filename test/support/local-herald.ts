import { ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');

export interface LocalHerald {
  child: ChildProcess;
  /** Everything it printed so far (stdout and stderr): its first KEPT characters, which hold its start-up lines. */
  output(): string;
  /** How it ended. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Its base URL once it serves; rejects when it exits first or takes longer than `timeoutMs`. */
  ready(timeoutMs?: number): Promise<string>;
}

const SERVING = /Herald is running at (http:\/\/127\.0\.0\.1:\d+)/;
const KEPT = 5_000_000;

/**
 * `npm start` (apps/local/main.ts) in a process of its own: tsx as a loader, not its CLI,
 * whose child a SIGKILL of the CLI would orphan (and which re-sends signals). `detached`
 * makes it a process group of its own, as a terminal's job is; `onOutput` sees every chunk;
 * `loseReplies` loses the replies to that share of Firestore commits (test/support/lost-replies.ts).
 */
export function spawnLocalHerald(
  env: NodeJS.ProcessEnv,
  options: {
    detached?: boolean;
    onOutput?: (chunk: Buffer, stream: 'stdout' | 'stderr') => void;
    args?: readonly string[];
    loseReplies?: number;
    /** What to run in place of `npm start` (`apps/rehearsal/main.ts`: `npm run rehearse`, which prints the same lines). */
    entry?: string;
  } = {},
): LocalHerald {
  // `loseReplies`: that share of Firestore commits lands and then answers DEADLINE_EXCEEDED (lost-replies.ts).
  const fault = options.loseReplies ? ['--import', path.join(ROOT, 'test/support/lost-replies-preload.ts')] : [];
  const child = spawn(process.execPath, ['--import', 'tsx', ...fault, path.join(ROOT, options.entry ?? 'apps/local/main.ts'), ...(options.args ?? [])], {
    cwd: ROOT,
    env: options.loseReplies ? { ...env, HERALD_TEST_LOSE_REPLIES: String(options.loseReplies) } : env,
    detached: options.detached ?? false,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const listeners = new Set<() => void>();
  for (const stream of ['stdout', 'stderr'] as const) {
    child[stream]!.on('data', (chunk: Buffer) => {
      if (output.length < KEPT) output += chunk.toString();
      options.onOutput?.(chunk, stream);
      for (const listener of listeners) listener();
    });
  }
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const ready = (timeoutMs = 60_000) =>
    new Promise<string>((resolve, reject) => {
      const done = (settle: () => void) => {
        listeners.delete(check);
        clearTimeout(timer);
        settle();
      };
      const check = () => {
        const url = SERVING.exec(output)?.[1];
        if (url) done(() => resolve(url));
      };
      const timer = setTimeout(() => done(() => reject(new Error(`Herald did not start within ${timeoutMs / 1000} s:\n${output.slice(-2000)}`))), timeoutMs);
      listeners.add(check);
      void exited.then(({ code, signal }) => done(() => reject(new Error(`Herald exited (${signal ?? code}) before it served:\n${output.slice(-2000)}`))));
      check();
    });
  return { child, output: () => output, exited, ready };
}

/**
 * Kills `child` (if it still runs) and resolves once it has exited. A test's teardown waits for
 * it: a child process still running when the file ends keeps Jest's worker from exiting
 * ("a worker process has failed to exit gracefully").
 */
export async function killed(child: ChildProcess | undefined, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill(signal);
  await exited;
}
