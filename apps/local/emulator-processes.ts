// The emulators' process groups: started detached, taken down with this process, stopped whole.
import { type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';

/** process group id -> data dir, for everything started and not yet stopped */
export const liveGroups = new Map<number, string>();
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
export function installExitSafety(): void {
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

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

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

export async function killGroup(child: ChildProcess): Promise<void> {
  const pgid = child.pid;
  if (pgid === undefined) return;
  signalGroup(pgid, 'SIGTERM');
  if (!(await waitGroupGone(pgid, 3000))) {
    signalGroup(pgid, 'SIGKILL');
    await waitGroupGone(pgid, 2000);
  }
  liveGroups.delete(pgid);
}
