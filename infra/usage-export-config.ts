import { z } from 'zod';
import { ENV_NAMES } from '../shared/config-schema';

/**
 * The stack's `herald:usageExport` (docs/deploying.md#usage-export): off unless set. `true`
 * declares a BigQuery dataset and table and the daily job that exports the previous UTC day's
 * usage into it (infra/components/usage-export.ts) with the defaults below; an object sets them.
 */

/** A five-field Unix cron (Cloud Scheduler's), in UTC. */
const CRON = /^\S+ \S+ \S+ \S+ \S+$/;

const settingsSchema = z.strictObject(
  {
    /** BigQuery dataset id: letters, digits, underscores. Default `<topicPrefix>_usage` (hyphens as underscores). */
    dataset: z.string().regex(/^\w{1,1024}$/, 'dataset must be a BigQuery dataset id: letters, digits and underscores, like herald_usage').optional(),
    table: z.string().regex(/^\w{1,1024}$/, 'table must be a BigQuery table id: letters, digits and underscores, like usage').default('usage'),
    /** Where the dataset lives (`US`, `EU`, a region); default the stack's region. */
    location: z.string().regex(/^[A-Za-z]+(-[a-z]+\d*)*$/, 'location must be a BigQuery location like US, EU or europe-west1').optional(),
    /** When the export runs, UTC: by default 01:15, the previous day long complete (a process flushes its counts within HERALD_RATE_FLUSH_MS). */
    schedule: z.string().regex(CRON, 'schedule must be a Unix cron of five fields, like "15 1 * * *" (UTC)').default('15 1 * * *'),
  },
  {
    error: (issue) =>
      `${issue.code === 'unrecognized_keys' ? `unknown field ${issue.keys.join(', ')}: ` : ''}herald:usageExport is true, false or an object {dataset?, table?, location?, schedule?}`,
  },
);
export type UsageExportSettings = z.output<typeof settingsSchema>;

/** The key of infra/config.ts's schema: absent and `false` mean no export (undefined). */
export const usageExportConfigShape = {
  usageExport: z
    .union([z.boolean(), settingsSchema], { error: 'usageExport must be true, false or an object {dataset?, table?, location?, schedule?}' })
    .optional()
    .transform((v) => (v === undefined || v === false ? undefined : v === true ? settingsSchema.parse({}) : v)),
};

/** How infra/config.ts reads it: JSON (`true`, or an object `pulumi config set --path` writes). */
export const USAGE_EXPORT_KEY_KINDS = { usageExport: 'json' } as const;

/** The export as the program declares it: every default filled in. */
export interface UsageExportPlan {
  dataset: string;
  table: string;
  location: string;
  schedule: string;
}

export function usageExportPlan(settings: UsageExportSettings | undefined, defaults: { topicPrefix: string; region: string }): UsageExportPlan | undefined {
  if (settings === undefined) return undefined;
  return { dataset: settings.dataset ?? `${defaults.topicPrefix.replaceAll('-', '_')}_usage`, table: settings.table, location: settings.location ?? defaults.region, schedule: settings.schedule };
}

/** What the functions are told of it: the table the export writes and where its jobs run (none without an export). */
export function usageExportEnv(project: string, plan: UsageExportPlan | undefined): Record<string, string> {
  if (plan === undefined) return {};
  return { [ENV_NAMES.usageExportTable]: `${project}.${plan.dataset}.${plan.table}`, [ENV_NAMES.usageExportLocation]: plan.location };
}
