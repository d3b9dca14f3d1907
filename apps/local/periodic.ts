import { Logger } from '../../shared/ports/clock';

/**
 * Cloud Scheduler's part in local mode for one-pass jobs: `run` every `intervalMs`, one at a
 * time; a failure is logged and the next tick tries again.
 */
export function runPeriodically(name: string, intervalMs: number, run: () => Promise<unknown>, log: Logger): { stop(): Promise<void> } {
  let stopped = false;
  let current: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    if (stopped) return;
    current = current.then(run).catch((e: unknown) => log.error(`${name} failed; trying again next time`, { error: (e as Error).message }));
  }, intervalMs);
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await current;
    },
  };
}
