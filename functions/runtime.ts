import { loadConfig } from '../shared/config';
import { createRuntime, Runtime } from '../shared/runtime';

let current: Runtime | undefined;

/** The process's runtime: built from the environment on first use (Cloud Functions), or installed by local mode. */
export function runtime(): Runtime {
  current ??= createRuntime(loadConfig(process.env));
  return current;
}

export function installRuntime(rt: Runtime): void {
  current = rt;
}
