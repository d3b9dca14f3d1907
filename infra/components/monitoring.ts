import * as gcp from '@pulumi/gcp';
import * as pulumi from '@pulumi/pulumi';
import { childOptions } from './child-options';
import { TopologyNames } from '../../shared/topology';
import type { AlertThresholds } from '../monitoring-config';
import { dashboardJson } from '../monitoring-dashboard';
import { AlertKey, alertPlans } from '../monitoring-plan';

export interface HeraldMonitoringArgs {
  project: string;
  region: string;
  names: TopologyNames;
  thresholds: AlertThresholds;
  /** An email channel is created for each (herald:alertEmails). */
  alertEmails: readonly string[];
  /** Channels that exist already, `projects/P/notificationChannels/ID` (herald:alertChannels). */
  alertChannels: readonly string[];
}

/**
 * Herald's Cloud Monitoring dashboard and alert policies (infra/monitoring-plan.ts says what
 * each watches), notifying the stack's channels. docs/observability.md explains each alert.
 */
export class HeraldMonitoring extends pulumi.ComponentResource {
  readonly dashboard: gcp.monitoring.Dashboard;
  readonly emailChannels: gcp.monitoring.NotificationChannel[];
  readonly policies: Record<AlertKey, gcp.monitoring.AlertPolicy>;
  /** Every channel the policies notify: the created ones, then the existing ones. */
  readonly channels: pulumi.Output<string[]>;

  constructor(name: string, args: HeraldMonitoringArgs, opts?: pulumi.ComponentResourceOptions) {
    super('herald:monitoring:HeraldMonitoring', name, {}, opts);
    const { project } = args;
    const child = childOptions(this, opts);
    this.emailChannels = args.alertEmails.map(
      (email) =>
        new gcp.monitoring.NotificationChannel(
          // Named by the address, not its place in the list: reordering the list replaces nothing.
          `${name}-email-${email.replace(/[^A-Za-z0-9]+/g, '-')}`,
          { project, type: 'email', displayName: `Herald (${args.names.prefix}) alerts: ${email}`, labels: { email_address: email } },
          child,
        ),
    );
    this.channels = pulumi.all(this.emailChannels.map((c) => c.name)).apply((created) => [...created, ...args.alertChannels]);

    this.dashboard = new gcp.monitoring.Dashboard(`${name}-dashboard`, { project, dashboardJson: dashboardJson(args) }, child);

    const plans = alertPlans(args);
    this.policies = Object.fromEntries(
      plans.map((plan) => [
        plan.key,
        new gcp.monitoring.AlertPolicy(
          `${name}-alert-${plan.key}`,
          {
            project,
            displayName: plan.displayName,
            severity: plan.severity,
            combiner: 'OR',
            conditions: [{ displayName: plan.displayName, conditionThreshold: plan.condition }],
            documentation: { mimeType: 'text/markdown', subject: plan.displayName, content: plan.documentation },
            notificationChannels: this.channels,
            userLabels: { app: 'herald', stack: args.names.prefix, alert: plan.key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`) },
          },
          child,
        ),
      ]),
    ) as Record<AlertKey, gcp.monitoring.AlertPolicy>;
    this.registerOutputs({ dashboard: this.dashboard.id, channels: this.channels });
  }
}
