import * as gcp from '@pulumi/gcp';
import * as pulumi from '@pulumi/pulumi';
import { childOptions } from './child-options';

export interface ServiceAccountsArgs {
  project: string;
  /** Account ids start with it (shortened to fit IAM's 30 characters). */
  prefix: string;
  /** `serviceAccount:service-NUMBER@gcp-sa-pubsub.iam.gserviceaccount.com`. */
  pubsubServiceAgent: pulumi.Input<string>;
}

/**
 * One identity per role, each granted only what that role does:
 * - runtime: what every function runs as (Firestore, its secrets; its Pub/Sub grants are per
 *   topic and subscription: components/pubsub-access.ts);
 * - push: the OIDC identity Pub/Sub pushes with (it may only invoke the pushed functions);
 * - scheduler: the OIDC identity Cloud Scheduler calls with (only the scheduled functions);
 * - build: what Cloud Build builds the functions' images as.
 * Invoker and secret grants are made on the functions and secrets themselves.
 */
export class ServiceAccounts extends pulumi.ComponentResource {
  readonly runtime: gcp.serviceaccount.Account;
  readonly push: gcp.serviceaccount.Account;
  readonly scheduler: gcp.serviceaccount.Account;
  readonly build: gcp.serviceaccount.Account;

  constructor(name: string, args: ServiceAccountsArgs, opts?: pulumi.ComponentResourceOptions) {
    super('herald:iam:ServiceAccounts', name, {}, opts);
    const child = childOptions(this, opts);
    const stem = args.prefix.slice(0, 20).replace(/-+$/, '');
    const account = (role: string, displayName: string) =>
      new gcp.serviceaccount.Account(`${name}-${role}`, { project: args.project, accountId: `${stem}-${role}`, displayName }, child);
    this.runtime = account('runtime', 'Herald functions');
    this.push = account('pusher', 'Herald Pub/Sub push identity');
    this.scheduler = account('scheduler', 'Herald Cloud Scheduler identity');
    this.build = account('builder', 'Herald Cloud Build identity');

    const projectRole = (key: string, sa: gcp.serviceaccount.Account, role: string) =>
      new gcp.projects.IAMMember(`${name}-${key}`, { project: args.project, role, member: sa.member }, child);
    projectRole('runtime-firestore', this.runtime, 'roles/datastore.user');
    // Herald's own metrics, written to Cloud Monitoring (docs/observability.md).
    projectRole('runtime-metrics', this.runtime, 'roles/monitoring.metricWriter');
    // Spans to Cloud Trace (docs/observability.md#traces): write-only, the narrowest role that can.
    projectRole('runtime-trace', this.runtime, 'roles/cloudtrace.agent');
    // And read back, for the console's Overview panel (GET /admin/overview: timeSeries.list of
    // Herald's metrics and its lanes' Pub/Sub backlog). The narrowest predefined role that lists
    // time series; read only, and no custom role for a deployer to be allowed to make.
    projectRole('runtime-metrics-read', this.runtime, 'roles/monitoring.viewer');
    // No project-wide Pub/Sub role: the runtime is granted topic by topic and subscription by
    // subscription (components/pubsub-access.ts), and creates no lanes on GCP.
    // The documented minimum for a custom Cloud Functions build account.
    projectRole('build-logs', this.build, 'roles/logging.logWriter');
    projectRole('build-images', this.build, 'roles/artifactregistry.writer');
    projectRole('build-sources', this.build, 'roles/storage.objectAdmin');

    // Pub/Sub mints the push OIDC tokens as its own service agent.
    new gcp.serviceaccount.IAMMember(`${name}-pubsub-mints-push-tokens`, { serviceAccountId: this.push.name, role: 'roles/iam.serviceAccountTokenCreator', member: args.pubsubServiceAgent }, child);
    this.registerOutputs({ runtime: this.runtime.email, push: this.push.email, scheduler: this.scheduler.email, build: this.build.email });
  }
}
