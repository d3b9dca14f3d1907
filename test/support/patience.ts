import { availableParallelism, loadavg } from 'node:os';

/**
 * How many times longer than on a quiet machine a test may take here, now: the runnable
 * processes per core over the last minute (at least 1), or HERALD_TEST_PATIENCE when set.
 * Beside a chaos run on the same 2 cores everything took several times longer, and a test's
 * timeout or a wait for a condition is a guard against a hang, not an assertion of speed:
 * `patient(ms)` scales such a bound. Capped, so that a hang still fails in bounded time.
 *
 * The load average lags a load that has just begun: a test whose work is heavy by itself
 * (a long simulation on fake timers, a browser walk through many pages) gives a bound with
 * room of its own as well.
 */
const MAX_PATIENCE = 6;

function patienceNow(): number {
  const forced = Number(process.env.HERALD_TEST_PATIENCE);
  if (Number.isFinite(forced) && forced > 0) return forced;
  const perCore = loadavg()[0]! / Math.max(1, availableParallelism());
  return Math.min(MAX_PATIENCE, Math.max(1, perCore));
}

/** `ms` as a bound on waiting for this machine as loaded as it is now (read at each call). */
export const patient = (ms: number): number => Math.round(ms * patienceNow());
