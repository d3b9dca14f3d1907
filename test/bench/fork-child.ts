import { ChildProcess, fork } from 'node:child_process';
import { Interrupted } from './load';

type ReadyOrFailed = { type: 'ready' } | { type: 'failed'; message: string } | { type: string };

/**
 * Forks a bench child (fork() passes this process's execArgv on: under tsx the child loads
 * TypeScript too), forwards its output line by line to `note`, and resolves with the child
 * and its `ready` message once it says so — or rejects if it fails, exits, takes over 90 s,
 * or the bench is interrupted.
 */
export function forkUntilReady<M extends ReadyOrFailed, Ready extends M & { type: 'ready' }>(
  script: string,
  env: NodeJS.ProcessEnv,
  name: string,
  signal: AbortSignal,
  note: (line: string) => void,
  /** The child's node options instead of this process's (plain `node` for a script already compiled). */
  execArgv?: string[],
): Promise<{ child: ChildProcess; ready: Ready }> {
  const child = fork(script, [], { env, stdio: ['ignore', 'pipe', 'pipe', 'ipc'], ...(execArgv ? { execArgv } : {}) });
  const forward = (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) note(line);
  };
  child.stdout?.on('data', forward);
  child.stderr?.on('data', forward);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error(`${name} did not start within 90 s`)), 90_000);
    const onAbort = () => fail(new Interrupted('interrupted'));
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    const fail = (e: Error) => {
      done();
      child.kill();
      reject(e);
    };
    const onMessage = (m: M) => {
      if (m.type === 'ready') {
        done();
        resolve({ child, ready: m as unknown as Ready });
      } else if (m.type === 'failed') fail(new Error(`${name} failed to start: ${(m as { message: string }).message}`));
    };
    const onExit = (code: number | null) => fail(new Error(`${name} exited with code ${code} while starting`));
    child.on('message', onMessage);
    child.on('exit', onExit);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
