import * as gcp from '@pulumi/gcp';
import * as pulumi from '@pulumi/pulumi';
import { USAGE_EXPORT_COLUMNS } from '../../shared/domain/usage/usage-export';
import { UsageExportPlan } from '../usage-export-config';
import { childOptions } from './child-options';

export interface UsageExportArgs {
  project: string;
  region: string;
  plan: UsageExportPlan;
  /** Herald's functions' identity: it writes the table and runs the load jobs. */
  runtimeMember: pulumi.Input<string>;
  /** The suspension-check function, whose `?task=usage-export` exports a day (functions/usage-export.ts). */
  target: { url: pulumi.Input<string>; timeoutSeconds: number };
  schedulerServiceAccountEmail: pulumi.Input<string>;
  /** The stack's name prefix (herald:topicPrefix): the job is `<prefix>-usage-export`. */
  prefix: string;
}

/** The table's schema as BigQuery takes it: every column required (a row always has each count). */
export const usageTableSchema = (): string => JSON.stringify(USAGE_EXPORT_COLUMNS.map((c) => ({ name: c.name, type: c.type, mode: 'REQUIRED', description: c.description })));

/**
 * The daily usage export (docs/usage.md#exporting-to-bigquery), declared with `herald:usageExport`:
 * the BigQuery API, a dataset and a table of usage rows (domain/usage/usage-export.ts: one per
 * account and day) partitioned by `day`, the runtime identity's rights on them (write the
 * dataset's tables, run load jobs in the project), and a Cloud Scheduler job that calls
 * suspension-check with `?task=usage-export` each day: it loads the previous UTC day into that
 * day's partition, replacing it (a rerun never doubles a row).
 */
export class UsageExport extends pulumi.ComponentResource {
  readonly dataset: gcp.bigquery.Dataset;
  readonly table: gcp.bigquery.Table;
  readonly job: gcp.cloudscheduler.Job;

  constructor(name: string, args: UsageExportArgs, opts?: pulumi.ComponentResourceOptions) {
    super('herald:usage:UsageExport', name, {}, opts);
    const { project, plan } = args;
    const api = new gcp.projects.Service(`${name}-bigquery`, { project, service: 'bigquery.googleapis.com', disableOnDestroy: false, disableDependentServices: false }, childOptions(this, opts));
    const afterApi = childOptions(this, opts, [api]);
    this.dataset = new gcp.bigquery.Dataset(
      `${name}-dataset`,
      // Bills are kept: tearing Herald down leaves the dataset's tables (deleteContentsOnDestroy false refuses to delete a dataset that holds any).
      { project, datasetId: plan.dataset, location: plan.location, description: "Herald's usage per account and UTC day (docs/usage.md)", deleteContentsOnDestroy: false },
      afterApi,
    );
    this.table = new gcp.bigquery.Table(
      `${name}-table`,
      {
        project,
        datasetId: this.dataset.datasetId,
        tableId: plan.table,
        description: "Herald's usage: a row per account and UTC day, each day replaced whole by the daily export",
        schema: usageTableSchema(),
        // A day is one partition: the export replaces it whole (a load job with WRITE_TRUNCATE on table$YYYYMMDD).
        timePartitioning: { type: 'DAY', field: 'day' },
        clusterings: ['account'],
        deletionProtection: true,
      },
      childOptions(this, opts, [this.dataset]),
    );
    new gcp.bigquery.DatasetIamMember(`${name}-runtime-writes`, { project, datasetId: this.dataset.datasetId, role: 'roles/bigquery.dataEditor', member: args.runtimeMember }, childOptions(this, opts, [this.dataset]));
    // A load job is a job of the project: the identity may run jobs (its data rights stay the dataset's).
    new gcp.projects.IAMMember(`${name}-runtime-jobs`, { project, role: 'roles/bigquery.jobUser', member: args.runtimeMember }, afterApi);
    this.job = new gcp.cloudscheduler.Job(
      `${name}-job`,
      {
        project,
        region: args.region,
        name: `${args.prefix}-usage-export`,
        description: "Herald: exports the previous UTC day's usage to BigQuery",
        schedule: plan.schedule,
        timeZone: 'Etc/UTC',
        attemptDeadline: `${Math.max(15, Math.min(1800, args.target.timeoutSeconds))}s`,
        // A failed export is tried again (the same day: the query names none, and the day only changes at midnight); a success replaces, so a retry after one is harmless.
        retryConfig: { retryCount: 3, minBackoffDuration: '60s', maxBackoffDuration: '600s' },
        httpTarget: {
          uri: pulumi.interpolate`${args.target.url}?task=usage-export`,
          httpMethod: 'POST',
          oidcToken: { serviceAccountEmail: args.schedulerServiceAccountEmail, audience: args.target.url },
        },
      },
      childOptions(this, opts, [this.table]),
    );
    this.registerOutputs({});
  }
}
