import * as gcp from '@pulumi/gcp';
import * as pulumi from '@pulumi/pulumi';
import { childOptions } from './child-options';
import { FunctionPlan } from '../function-plan';
import { planEnvironment } from '../function-env';

type SecretEnv = gcp.types.input.cloudfunctionsv2.FunctionServiceConfigSecretEnvironmentVariable;

export const NODE_RUNTIME = 'nodejs20';
export const INVOKER_ROLE = 'roles/run.invoker';
export const BILLING_LABEL = 'herald-billing';

export interface HeraldFunctionArgs {
  project: string;
  region: string;
  plan: FunctionPlan;
  source: { bucket: pulumi.Input<string>; object: pulumi.Input<string> };
  serviceAccountEmail: pulumi.Input<string>;
  /** `projects/P/serviceAccounts/EMAIL` of the account Cloud Build builds as. */
  buildServiceAccount: pulumi.Input<string>;
  environment: Record<string, pulumi.Input<string>>;
  secretEnvironment: SecretEnv[];
  /** The only principals that may call it (`allUsers` for a public one), by a stable label. */
  invokers: Record<string, pulumi.Input<string>>;
}

/**
 * One Herald function (Cloud Functions 2nd gen): built from the shared package with its
 * name as entry point (functions/index.ts registers each under its name), and callable only
 * by the principals given. The deployed name is the function's own: Herald builds its lanes'
 * push URLs as `${HERALD_PUSH_BASE_URL}/deliver`.
 */
export class HeraldFunction extends pulumi.ComponentResource {
  readonly function: gcp.cloudfunctionsv2.Function;
  /** `https://REGION-PROJECT.cloudfunctions.net/NAME`. */
  readonly url: pulumi.Output<string>;

  constructor(name: string, args: HeraldFunctionArgs, opts?: pulumi.ComponentResourceOptions) {
    super('herald:functions:HeraldFunction', name, {}, opts);
    const { plan } = args;
    this.function = new gcp.cloudfunctionsv2.Function(
      name,
      {
        project: args.project,
        location: args.region,
        name: plan.name,
        description: `Herald ${plan.name}`,
        // The Cloud Functions API has no field for the billing mode (docs/deploying.md#billing-mode):
        // the label records the stack's choice on the function, and the stack's `billing` output
        // holds the command that applies it to the function's Cloud Run service.
        labels: { [BILLING_LABEL]: plan.billing },
        buildConfig: {
          runtime: NODE_RUNTIME,
          entryPoint: plan.name,
          source: { storageSource: { bucket: args.source.bucket, object: args.source.object } },
          serviceAccount: args.buildServiceAccount,
          // The upload is already compiled (dist/) and holds no sources: Cloud Build must not
          // run `npm run build` (package.json's empty gcp-build says so too).
          environmentVariables: { GOOGLE_NODE_RUN_SCRIPTS: '' },
        },
        serviceConfig: {
          availableMemory: plan.memory,
          availableCpu: plan.cpu,
          minInstanceCount: plan.minInstances,
          maxInstanceCount: plan.maxInstances,
          maxInstanceRequestConcurrency: plan.concurrency,
          timeoutSeconds: plan.timeoutSeconds,
          serviceAccountEmail: args.serviceAccountEmail,
          // NODE_OPTIONS beside Herald's own: the heap sized to this function's memory (function-plan.ts nodeOptionsFor).
          environmentVariables: planEnvironment(args.environment, plan),
          secretEnvironmentVariables: args.secretEnvironment,
          // Pub/Sub and Cloud Scheduler call from outside any VPC: IAM, not ingress, keeps others out.
          ingressSettings: 'ALLOW_ALL',
          allTrafficOnLatestRevision: true,
        },
      },
      childOptions(this, opts),
    );
    this.url = this.function.url;
    Object.entries(args.invokers).forEach(
      ([label, member]) =>
        new gcp.cloudrunv2.ServiceIamMember(
          `${name}-invoker-${label}`,
          // A 2nd gen function is a Cloud Run service of the same name; run.invoker on it is what lets a caller in.
          { project: args.project, location: args.region, name: this.function.name, role: INVOKER_ROLE, member },
          childOptions(this, opts),
        ),
    );
    this.registerOutputs({ url: this.url });
  }
}
