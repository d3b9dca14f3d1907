import { isHeraldOverload } from '../../domain/retry/herald-overload';

/**
 * Runs `work`, trying again after a short pause when it fails with Herald's overload (up to
 * `tries` times in all), so a record of an attempt already made is not lost to a passing
 * UNAVAILABLE; any other error, or the last overload, is thrown.
 */
export async function retryOnOverload<T>(work: () => Promise<T>, options: { tries: number; firstPauseMs: number; sleep?: (ms: number) => Promise<void> }): Promise<T> {
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (e) {
      if (attempt >= options.tries || !isHeraldOverload(e)) throw e;
      await sleep(options.firstPauseMs * 2 ** (attempt - 1));
    }
  }
}
