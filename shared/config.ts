import { formatPath } from './domain/events/event';
import { SecretBox } from './domain/access/secret-box';
import { DAY_MS } from './domain/delivery/delivery-retention';
import { HARD_LIMIT_GRACES } from './domain/intake/intake';
import { ENV_NAMES, envSchema, HeraldConfig, PushAuthMode } from './config-schema';
import type { Logger } from './ports/clock';


/**
 * Every setting Herald reads, resolved from the environment in this one place and
 * validated once at start-up (functions, local mode and the CLI share it).
 */

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Settings Herald no longer reads, and what replaced each: set, they stop it rather than be ignored. */
const RETIRED_SETTINGS: Record<string, string> = {
  HERALD_CONSOLE_FRAME_ANCESTORS: 'the operator console is never framed now; list the origins that may frame the customer portal in HERALD_PORTAL_FRAME_ANCESTORS (e.g. https://app.example.com)',
};

export function loadConfig(env: NodeJS.ProcessEnv = process.env): HeraldConfig {
  const retired = Object.entries(RETIRED_SETTINGS).filter(([name]) => env[name] !== undefined && env[name] !== '');
  if (retired.length) throw new ConfigError(`invalid Herald configuration:\n${retired.map(([name, why]) => `  ${name} is no longer read: ${why}`).join('\n')}`);
  const raw: Record<string, string | undefined> = {};
  for (const [key, name] of Object.entries(ENV_NAMES)) {
    const value = env[name] ?? (key === 'projectId' ? env.GOOGLE_CLOUD_PROJECT ?? env.GCLOUD_PROJECT : undefined);
    if (value !== undefined && value !== '') raw[key] = value;
  }
  const parsed = envSchema.safeParse(raw);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => {
      const key = formatPath(i.path.map(String)) as keyof HeraldConfig;
      // A token's value never goes into the message (it may reach a log).
      const shown = SECRET_SETTING.test(key) ? '[redacted]' : JSON.stringify(raw[key] ?? '');
      return `  ${ENV_NAMES[key] ?? key}=${shown}: ${i.message}`;
    });
    throw new ConfigError(`invalid Herald configuration:\n${lines.join('\n')}`);
  }
  if (parsed.data.maxEventBytes > parsed.data.maxBodyBytes) {
    throw new ConfigError(`invalid Herald configuration:\n  ${ENV_NAMES.maxEventBytes} must not exceed ${ENV_NAMES.maxBodyBytes}`);
  }
  if (parsed.data.claimTtlMs <= parsed.data.deliveryTimeoutMs) {
    throw new ConfigError(`invalid Herald configuration:\n  ${ENV_NAMES.claimTtlMs} must be longer than ${ENV_NAMES.deliveryTimeoutMs}, or live attempts would be taken again`);
  }
  // The reconciler counts a batch's records up to HARD_LIMIT_GRACES graces after ingest: an
  // expired record would look lost to it, and be recreated and sent again.
  const reconcilerWaitMs = HARD_LIMIT_GRACES * parsed.data.reconcileAfterMs;
  if (parsed.data.deliveryRetentionDays * DAY_MS <= reconcilerWaitMs) {
    throw new ConfigError(
      `invalid Herald configuration:\n  ${ENV_NAMES.deliveryRetentionDays} must be longer than ${HARD_LIMIT_GRACES} × ${ENV_NAMES.reconcileAfterMs} (${+(reconcilerWaitMs / DAY_MS).toFixed(2)} days), the longest the reconciler may wait to count an event's delivery records`,
    );
  }
  const problems = authProblems(parsed.data);
  if (problems.length) throw new ConfigError(`invalid Herald configuration:\n${problems.map((p) => `  ${p}`).join('\n')}`);
  return parsed.data;
}

const SECRET_SETTING = /token|secret/i;

/** Each credential is given one way; the push authentication mode has what it needs. */
function authProblems(c: HeraldConfig): string[] {
  const problems: string[] = [];
  if (c.adminToken !== undefined && c.adminTokenSha256 !== undefined) problems.push(`set ${ENV_NAMES.adminToken} or ${ENV_NAMES.adminTokenSha256}, not both`);
  if (c.ingestToken !== undefined && c.ingestTokenSha256 !== undefined) problems.push(`set ${ENV_NAMES.ingestToken} or ${ENV_NAMES.ingestTokenSha256}, not both`);
  if (c.pushAuth === 'token' && c.pushToken === undefined) problems.push(`${ENV_NAMES.pushAuth}=token needs ${ENV_NAMES.pushToken}`);
  if ((c.pushAuth === 'oidc' || c.pushAuth === 'oidc-behind-iam') && (c.pushServiceAccount === undefined || c.pushBaseUrl === undefined)) {
    problems.push(`${ENV_NAMES.pushAuth}=${c.pushAuth} needs ${ENV_NAMES.pushServiceAccount} and ${ENV_NAMES.pushBaseUrl} (the token's expected email and audience)`);
  }
  return problems;
}

/** The push authentication in force: explicit, else OIDC where a push identity is configured, else the shared token; undefined: none (every push request is refused). */
export function pushAuthModeOf(c: Pick<HeraldConfig, 'pushAuth' | 'pushServiceAccount' | 'pushToken' | 'pushBaseUrl'>): PushAuthMode | undefined {
  if (c.pushAuth !== undefined) return c.pushAuth;
  if (c.pushServiceAccount !== undefined && c.pushBaseUrl !== undefined) return 'oidc';
  if (c.pushToken !== undefined) return 'token';
  return undefined;
}

/**
 * What a deployed Herald must have, whatever its environment says: its internal endpoints
 * authenticated one way or the other, and no loopback destinations.
 */
export function checkDeployedConfig(config: HeraldConfig, env: NodeJS.ProcessEnv = process.env): void {
  if (pushAuthModeOf(config) === undefined) {
    throw new ConfigError(`no push authentication: set ${ENV_NAMES.pushServiceAccount} and ${ENV_NAMES.pushBaseUrl} (OIDC, what the Pulumi program does) or ${ENV_NAMES.pushToken}`);
  }
  // The built functions run on the emulators too (`npm run rehearse`), whose receivers are on loopback;
  // a function on GCP never has both emulator hosts set, so this opens nothing there.
  if (config.allowLoopback && !onEmulators(env)) {
    throw new ConfigError(`${ENV_NAMES.allowLoopback} is for local mode and the rehearsal on the emulators only; a deployed Herald never delivers to loopback addresses`);
  }
}

/** A deployed function's configuration (Cloud Functions): read from the environment, then held to checkDeployedConfig. */
export function loadDeployedConfig(env: NodeJS.ProcessEnv = process.env): HeraldConfig {
  const config = loadConfig(env);
  checkDeployedConfig(config, env);
  return config;
}

/** Both Google clients talk to the emulators (local mode, tests, the rehearsal). */
function onEmulators(env: NodeJS.ProcessEnv): boolean {
  return Boolean(env.PUBSUB_EMULATOR_HOST) && Boolean(env.FIRESTORE_EMULATOR_HOST);
}

/**
 * What seals destination signing secrets in Firestore. Against real Firestore a key is
 * required; against the emulator (tests and tools that build a runtime directly, without
 * local mode, which always brings a key) secrets are stored as they are, with a warning.
 */
export function secretBoxOf(config: Pick<HeraldConfig, 'secretsKey'>, log: Logger, env: NodeJS.ProcessEnv = process.env): SecretBox | undefined {
  if (config.secretsKey !== undefined) return SecretBox.fromConfig(config.secretsKey);
  if (!env.FIRESTORE_EMULATOR_HOST) {
    throw new ConfigError(
      `${ENV_NAMES.secretsKey} is not set: Herald encrypts destination signing secrets in Firestore with it. ` +
        `The Pulumi program sets it from Secret Manager (herald:secretsKey, or a key generated with the stack); ` +
        `elsewhere set it to a base64 key of 32 random bytes: ${ENV_NAMES.secretsKey}=$(openssl rand -base64 32)`,
    );
  }
  log.warn(`${ENV_NAMES.secretsKey} is not set: destination signing secrets are stored unencrypted (Firestore emulator only)`);
  return undefined;
}

/**
 * Whether this process's Pub/Sub client talks to the emulator. The client finds it through
 * PUBSUB_EMULATOR_HOST, which local mode sets after it loads the configuration: read when asked.
 */
export function onPubSubEmulator(env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(env.PUBSUB_EMULATOR_HOST);
}

// ---------------------------------------------------------------- tunables

/*
 * Settings no environment changes: sized for Firestore's and Pub/Sub's limits and the
 * functions' deadlines rather than for a deployment.
 */

/**
 * A delivery whose turn under its destination's rate is further off than this is deferred
 * (PENDING, one write) rather than held in its push request. Holding is cheaper than a
 * deferral and its pump round trip, and keeps the backlog in Pub/Sub, whose flow control
 * then stops pushing more; 30 s plus the attempt timeout stays well inside the 60 s push
 * ack deadline and the claim TTL (a custom policy's longer timeout shortens the wait:
 * rateWaitFor).
 */
export const MAX_RATE_WAIT_MS = 30_000;

/** Due deliveries claimed per pump round. */
export const PUMP_BATCH = 100;

/** Intake batches (and owed dead letters) the reconciler takes per round. */
export const RECONCILE_BATCH = 100;

/** Dead letters asked for per pull (the emulator hands out at most 100). */
export const REPLAY_PULL_BATCH = 100;

/** A running replay writes its progress to its report at most this often. */
export const REPLAY_PROGRESS_EVERY_MS = 1_000;

/** A slow destination's verdict is forgotten after this long without news: then it is tried on its shared lane again. */
export const SLOW_FORGET_MS = 60_000;
