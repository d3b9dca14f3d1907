import { NO_TRACING, Tracing } from './ports/tracing';

/**
 * The process's tracing, one for the process as OpenTelemetry's context is (an AsyncLocalStorage):
 * set once where the runtime is made (shared/runtime/tracing.ts), read where spans are started and
 * where log lines are written, so no deps object has to carry it. NO_TRACING until set.
 */
let current: Tracing = NO_TRACING;

export function tracing(): Tracing {
  return current;
}

/** Makes `t` the process's tracing; returns the one it replaces (tests put it back). */
export function useTracing(t: Tracing): Tracing {
  const before = current;
  current = t;
  return before;
}
