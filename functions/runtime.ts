import { ConfigError, ENV_NAMES, HeraldConfig, loadConfig, pushAuthModeOf } from '../shared/config';
import { createRuntime, Runtime } from '../shared/runtime';

let current: Runtime | undefined;

/**
 * What a deployed Herald must have, whatever its environment says: its internal endpoints
 * authenticated one way or the other, and no loopback destinations.
 */
export function checkDeployedConfig(config: HeraldConfig): void {
  if (pushAuthModeOf(config) === undefined) {
    throw new ConfigError(`no push authentication: set ${ENV_NAMES.pushServiceAccount} and ${ENV_NAMES.pushBaseUrl} (OIDC, what the Pulumi program does) or ${ENV_NAMES.pushToken}`);
  }
  if (config.allowLoopback) throw new ConfigError(`${ENV_NAMES.allowLoopback} is for local mode only; a deployed Herald never delivers to loopback addresses`);
}

/** The process's runtime: built from the environment on first use (Cloud Functions), or installed by local mode. */
export function runtime(): Runtime {
  if (!current) {
    const config = loadConfig(process.env);
    checkDeployedConfig(config);
    current = createRuntime(config);
  }
  return current;
}

/** The runtime if one was built or installed (shutting down must not build one). */
export function existingRuntime(): Runtime | undefined {
  return current;
}

export function installRuntime(rt: Runtime): void {
  current = rt;
}
