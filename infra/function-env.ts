import { ENV_NAMES } from '../shared/config-schema';
import { laneEnv } from './config';
import { FunctionPlan } from './function-plan';
import { usageExportEnv, UsageExportPlan } from './usage-export-config';

/**
 * The environment of every deployed function, in one place: the Pulumi program (values that
 * are Pulumi inputs, the identities' emails) and the rehearsal (apps/rehearsal, plain strings)
 * build it with this same function, so the two cannot drift apart unseen
 * (test/unit/infra/rehearsal-env.test.ts holds them equal, less the rehearsal's named deviations).
 */
export interface FunctionEnvInputs<V> {
  /** The stack's `herald:settings`, as environment variables. */
  settingsEnv: Record<string, string>;
  project: string;
  topicPrefix: string;
  /** Where the functions are served: `${base}/<function>`, the push endpoints and OIDC audiences. */
  pushBaseUrl: string;
  /** The emails of the identities Pub/Sub pushes and Cloud Scheduler calls with. */
  identities: { push: V; scheduler: V };
  dedicatedLanes: readonly string[];
  /** The daily usage export's table (herald:usageExport); absent: none. */
  usageExport?: UsageExportPlan;
}

export function functionEnvironment<V>(inputs: FunctionEnvInputs<V>): Record<string, string | V> {
  return {
    ...inputs.settingsEnv,
    [ENV_NAMES.projectId]: inputs.project,
    [ENV_NAMES.topicPrefix]: inputs.topicPrefix,
    // Herald creates its destination lanes itself: they push to `${base}/deliver` as the push identity.
    [ENV_NAMES.pushBaseUrl]: inputs.pushBaseUrl,
    [ENV_NAMES.pushServiceAccount]: inputs.identities.push,
    [ENV_NAMES.schedulerServiceAccount]: inputs.identities.scheduler,
    // The internal functions are private (IAM: only the push and scheduler identities may invoke
    // them), and Cloud Run removes the signature of the OIDC token it has verified before the
    // request reaches Herald: Herald checks the token's audience, email and expiry (and its
    // signature, should one arrive intact).
    [ENV_NAMES.pushAuth]: 'oidc-behind-iam',
    [ENV_NAMES.allowLoopback]: 'false',
    // Herald creates no lane on GCP: the program declares the dedicated ones (Messaging).
    ...laneEnv(inputs.dedicatedLanes),
    ...usageExportEnv(inputs.project, inputs.usageExport),
  };
}

/** One function's environment: the shared one and NODE_OPTIONS sizing V8's heap to its memory (function-plan.ts nodeOptionsFor). */
export function planEnvironment<V>(environment: Record<string, string | V>, plan: Pick<FunctionPlan, 'nodeOptions'>): Record<string, string | V> {
  return { ...environment, NODE_OPTIONS: plan.nodeOptions };
}
