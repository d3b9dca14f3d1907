import { AsyncLocalStorage } from 'node:async_hooks';
import { loadDeployedConfig } from '../shared/config';
import { operationalEvents } from '../shared/runtime/intake-deps';
import { createRuntime, Runtime } from '../shared/runtime/runtime';

/** The one runtime of this process, which every function shares. */
let current: Runtime | undefined;

/**
 * Local mode with several instances in one process (`npm start -- --instances N`): the
 * runtime of the instance a request was sent to, for the request and all it starts.
 */
const perRequest = new AsyncLocalStorage<Runtime>();

/** The process's runtime: the request's instance (local mode, N instances); else built from the environment on first use (Cloud Functions), or installed by local mode. */
export function runtime(): Runtime {
  const instance = perRequest.getStore();
  if (instance) return instance;
  current ??= createRuntime(loadDeployedConfig(), { operational: operationalEvents });
  return current;
}

/** The runtime if one was built or installed (shutting down must not build one). */
export function existingRuntime(): Runtime | undefined {
  return current;
}

export function installRuntime(rt: Runtime): void {
  current = rt;
}

/** Handles a request as instance `rt`: every runtime() call the request makes, now or later, gets `rt`. */
export function asInstance(rt: Runtime, handle: () => void): void {
  perRequest.run(rt, handle);
}
