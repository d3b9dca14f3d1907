import { Logger, LogFields } from '../../shared/ports/clock';
import { FunctionName } from '../../shared/topology';

/**
 * Instance `i`'s log: every line says which instance wrote it, as Cloud Logging's instance
 * label does on GCP, so that what one instance did can be told from another's.
 */
export function instanceLog(log: Logger, i: number): Logger {
  const tag = (fields?: LogFields): LogFields => ({ instance: i, ...fields });
  return {
    debug: (message, fields) => log.debug(message, tag(fields)),
    info: (message, fields) => log.info(message, tag(fields)),
    warn: (message, fields) => log.warn(message, tag(fields)),
    error: (message, fields) => log.error(message, tag(fields)),
  };
}

/**
 * One endpoint per function in front of N instances: each request to a function goes to the
 * next instance in turn (a counter per function), as a load balancer spreads a function's
 * requests over its instances. `enter` runs the request as that instance.
 */
export function roundRobin<R>(instances: readonly R[], enter: (instance: R, handle: () => void) => void): (fn: FunctionName, handle: () => void) => void {
  const next = new Map<FunctionName, number>();
  return (fn, handle) => {
    const i = next.get(fn) ?? 0;
    next.set(fn, (i + 1) % instances.length);
    enter(instances[i]!, handle);
  };
}

/** What stopping closes, for every instance at once: their rate turns, then their counters and clients. */
export function allOf<R extends { limiter: { close(): void }; close(): Promise<void> }>(instances: readonly R[]): { limiter: { close(): void }; close(): Promise<void> } {
  return {
    limiter: { close: () => instances.forEach((rt) => rt.limiter.close()) },
    close: () => Promise.all(instances.map((rt) => rt.close())).then(() => undefined),
  };
}
