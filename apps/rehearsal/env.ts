import { ENV_NAMES, HeraldConfig } from '../../shared/config-schema';
import { FunctionName } from '../../shared/topology';
import { SECRET_SETTINGS, TUNABLE_SETTINGS } from '../../infra/config';
import { functionEnvironment, planEnvironment } from '../../infra/function-env';
import { FunctionPlan } from '../../infra/function-plan';

/**
 * Every way the rehearsal's function environment departs from what the Pulumi program sets,
 * and why: what the emulators cannot do as GCP does, met the way local mode meets it. Any
 * other variable is the program's own, built by the same function (infra/function-env.ts);
 * test/unit/infra/rehearsal-env.test.ts fails on a difference not named here.
 */
export const REHEARSAL_DEVIATIONS: Readonly<Record<string, string>> = {
  [ENV_NAMES.pushAuth]: 'token, not oidc-behind-iam: the Pub/Sub emulator sends no OIDC token and no IAM stands in front (docs/local-mode.md)',
  [ENV_NAMES.pushToken]: "the shared push token local mode uses, in every push endpoint's and scheduler call's ?token=",
  [ENV_NAMES.pushBaseUrl]: "the rehearsal's proxy, not https://REGION-PROJECT.cloudfunctions.net",
  [ENV_NAMES.allowLoopback]: 'true: the receivers are on loopback',
  ...Object.fromEntries(SECRET_SETTINGS.map((s) => [ENV_NAMES[s], 'a plain variable, where the program gives a Secret Manager reference'])),
  PUBSUB_EMULATOR_HOST: 'the Pub/Sub emulator',
  FIRESTORE_EMULATOR_HOST: 'the Firestore emulator',
  METADATA_SERVER_DETECTION: 'none: there is no metadata server to ask for credentials',
};

/** What Cloud Run itself gives each instance, not the program: set per process. */
export const PLATFORM_VARIABLES = ['FUNCTION_TARGET', 'K_SERVICE', 'K_REVISION', 'PORT'] as const;

/**
 * The stack's `herald:settings` in the rehearsal: the tunable HERALD_* variables of the shell
 * that started it (as local mode honours them). Those the program sets itself are not taken.
 */
export function settingsFromEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const names = TUNABLE_SETTINGS.map((k: keyof HeraldConfig) => ENV_NAMES[k]);
  return Object.fromEntries(names.flatMap((name) => (env[name] !== undefined && env[name] !== '' ? [[name, env[name]]] : [])));
}

export interface RehearsalEnvInputs {
  settingsEnv: Record<string, string>;
  project: string;
  topicPrefix: string;
  dedicatedLanes: readonly string[];
  identities: { push: string; scheduler: string };
  proxyUrl: string;
  secrets: { adminToken: string; ingestToken: string; secretsKey: string };
  pushToken: string;
  emulators: { pubsubHost: string; firestoreHost: string };
}

/** The environment the program gives every function, with the deviations applied. */
export function rehearsalEnvironment(inputs: RehearsalEnvInputs): Record<string, string> {
  const program = functionEnvironment<string>({ ...inputs, pushBaseUrl: inputs.proxyUrl });
  const deviations: Record<string, string> = {
    [ENV_NAMES.pushAuth]: 'token',
    [ENV_NAMES.pushToken]: inputs.pushToken,
    [ENV_NAMES.pushBaseUrl]: inputs.proxyUrl,
    [ENV_NAMES.allowLoopback]: 'true',
    [ENV_NAMES.adminToken]: inputs.secrets.adminToken,
    [ENV_NAMES.ingestToken]: inputs.secrets.ingestToken,
    [ENV_NAMES.secretsKey]: inputs.secrets.secretsKey,
    PUBSUB_EMULATOR_HOST: inputs.emulators.pubsubHost,
    FIRESTORE_EMULATOR_HOST: inputs.emulators.firestoreHost,
    METADATA_SERVER_DETECTION: 'none',
  };
  const unnamed = Object.keys(deviations).filter((k) => !(k in REHEARSAL_DEVIATIONS));
  if (unnamed.length) throw new Error(`rehearsal deviations not documented in REHEARSAL_DEVIATIONS: ${unnamed.join(', ')}`);
  return { ...program, ...deviations };
}

/** One process's environment: the function's own (NODE_OPTIONS from its plan) and what Cloud Run sets. */
export function processEnvironment(shared: Record<string, string>, plan: FunctionPlan, port: number, revision: string): Record<string, string> {
  const fn: FunctionName = plan.name;
  return { ...planEnvironment(shared, plan), FUNCTION_TARGET: fn, K_SERVICE: fn, K_REVISION: revision, PORT: String(port) };
}
