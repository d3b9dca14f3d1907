import * as gcp from '@pulumi/gcp';
import * as pulumi from '@pulumi/pulumi';
import { childOptions } from './child-options';
import { FunctionName, ScheduleSpec } from '../../shared/topology';

export interface SchedulerArgs {
  project: string;
  region: string;
  schedules: ScheduleSpec[];
  /** The URL of each function, and how long it may run. */
  targets: Record<FunctionName, { url: pulumi.Input<string>; timeoutSeconds: number }>;
  serviceAccountEmail: pulumi.Input<string>;
  /** `hold=true`: a run keeps polling for its whole runSeconds (to-the-second retries, at a price). */
  hold: boolean;
}

/** Cloud Scheduler's limits on how long it waits for an HTTP target. */
const MIN_ATTEMPT_DEADLINE_SECONDS = 15;
const MAX_ATTEMPT_DEADLINE_SECONDS = 1800;

/**
 * One Cloud Scheduler job per schedule of the topology, calling its function with an OIDC
 * token of the scheduler identity. Local mode runs the same schedules in-process.
 */
export class Scheduler extends pulumi.ComponentResource {
  readonly jobs: gcp.cloudscheduler.Job[];

  constructor(name: string, args: SchedulerArgs, opts?: pulumi.ComponentResourceOptions) {
    super('herald:scheduler:Scheduler', name, {}, opts);
    this.jobs = args.schedules.map((schedule) => {
      const target = args.targets[schedule.function];
      const query = new URLSearchParams();
      if (schedule.runSeconds !== undefined) query.set('runSeconds', String(schedule.runSeconds));
      if (schedule.runSeconds !== undefined && args.hold) query.set('hold', 'true');
      const suffix = query.toString() ? `?${query.toString()}` : '';
      // Wait for the run to answer: a shorter deadline would mark every long run failed.
      const deadline = Math.min(MAX_ATTEMPT_DEADLINE_SECONDS, Math.max(MIN_ATTEMPT_DEADLINE_SECONDS, target.timeoutSeconds));
      return new gcp.cloudscheduler.Job(
        schedule.name,
        {
          project: args.project,
          region: args.region,
          name: schedule.name,
          description: `Herald: starts ${schedule.function}`,
          schedule: schedule.cron,
          timeZone: 'Etc/UTC',
          attemptDeadline: `${deadline}s`,
          // The next tick comes within the minute: a failed run is not retried.
          retryConfig: { retryCount: 0 },
          httpTarget: {
            uri: pulumi.interpolate`${target.url}${suffix}`,
            httpMethod: 'POST',
            oidcToken: { serviceAccountEmail: args.serviceAccountEmail, audience: target.url },
          },
        },
        childOptions(this, opts),
      );
    });
    this.registerOutputs({});
  }
}
