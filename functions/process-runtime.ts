import { loadDeployedConfig } from '../shared/config';
import { createRuntime, Runtime } from '../shared/runtime';

/** The one runtime of this process, which every function shares. */
let current: Runtime | undefined;

/** The process's runtime: built from the environment on first use (Cloud Functions), or installed by local mode. */
export function runtime(): Runtime {
  current ??= createRuntime(loadDeployedConfig());
  return current;
}

/** The runtime if one was built or installed (shutting down must not build one). */
export function existingRuntime(): Runtime | undefined {
  return current;
}

export function installRuntime(rt: Runtime): void {
  current = rt;
}
