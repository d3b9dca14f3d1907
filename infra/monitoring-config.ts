import { z } from 'zod';

/**
 * The stack's monitoring keys (`herald:monitoring`, `herald:alertEmails`, `herald:alertChannels`,
 * `herald:alerts`), validated with the rest of the stack config (infra/config.ts). The
 * defaults are what docs/observability.md#alerts explains.
 */

/**
 * `pulumi config set --path herald:alerts.sloRatio 0.995` may store the number as a string: a
 * number written out is read as one, anything else left to fail with the field named.
 */
const numeric = <T extends z.ZodType>(schema: T) => z.preprocess((v) => (typeof v === 'string' && /^-?\d+(\.\d+)?$/.test(v) ? Number(v) : v), schema);

// Cloud Monitoring aligns in whole minutes: a window of 90 s would be refused by the API at `pulumi up`, long after preview.
const minutes = (field: string, min: number, max: number) =>
  numeric(
    z
      .number({ error: `${field} must be a number of seconds` })
      .int(`${field} must be a whole number of seconds`)
      .min(min, `${field} must be ${min}–${max} seconds`)
      .max(max, `${field} must be ${min}–${max} seconds`)
      .refine((s) => s % 60 === 0, `${field} must be a whole number of minutes in seconds (60, 300, 3600, …): Cloud Monitoring aligns by the minute`),
  );

const ratio = (field: string) =>
  numeric(
    z
      .number({ error: `${field} must be a number between 0 and 1` })
      .gt(0, `${field} must be between 0 and 1 (exclusive), like 0.99`)
      .lt(1, `${field} must be between 0 and 1 (exclusive), like 0.99`),
  );

/** A day: the longest window an alerting condition may align over. */
const DAY_SECONDS = 86_400;

export const alertThresholdsSchema = z.strictObject(
  {
    /** Delivered attempts over all attempts below this, over `sloWindowSeconds`, fires the SLO alert. */
    sloRatio: ratio('sloRatio').default(0.99),
    sloWindowSeconds: minutes('sloWindowSeconds', 300, DAY_SECONDS).default(3600),
    /** A lane whose oldest unacked message is older than this (Pub/Sub keeps 7 days). */
    laneAgeSeconds: numeric(
      z
        .number({ error: 'laneAgeSeconds must be a number of seconds' })
        .int('laneAgeSeconds must be a whole number of seconds')
        .min(60, 'laneAgeSeconds must be 60–604800 seconds (a lane keeps messages 7 days)')
        .max(604_800, 'laneAgeSeconds must be 60–604800 seconds (a lane keeps messages 7 days)'),
    ).default(300),
    /** More dead letters than this within `deadLetterWindowSeconds` fires (0: any). */
    deadLetterThreshold: numeric(
      z.number({ error: 'deadLetterThreshold must be a number' }).int('deadLetterThreshold must be a whole number of dead letters').min(0, 'deadLetterThreshold must be 0 or more'),
    ).default(0),
    deadLetterWindowSeconds: minutes('deadLetterWindowSeconds', 60, DAY_SECONDS).default(300),
    /** 5xx answers over all requests of one function, over five minutes. */
    functionErrorRatio: ratio('functionErrorRatio').default(0.05),
  },
  {
    error: (issue) =>
      `${issue.code === 'unrecognized_keys' ? `unknown field ${issue.keys.join(', ')}: ` : ''}herald:alerts is an object {sloRatio?, sloWindowSeconds?, laneAgeSeconds?, deadLetterThreshold?, deadLetterWindowSeconds?, functionErrorRatio?}`,
  },
);
export type AlertThresholds = z.output<typeof alertThresholdsSchema>;

// Cloud Monitoring's email channel takes one address; a list separated by commas would be one channel no mail server accepts.
const EMAIL = /^[^\s@,;]+@[^\s@,;]+\.[^\s@,;]+$/;
/** An existing channel, as the console or `gcloud beta monitoring channels list` names it. */
const CHANNEL = /^projects\/[a-z][a-z0-9-]{4,28}[a-z0-9]\/notificationChannels\/\d+$/;

/** The keys of infra/config.ts's schema; each defaults so a stack that sets none gets monitoring with no channel. */
export const monitoringConfigShape = {
  /** `false`: no dashboard, no alert policy, no channel. */
  monitoring: z.enum(['true', 'false'], { error: 'monitoring must be true or false' }).transform((v) => v === 'true').default(true),
  alertEmails: z
    .array(z.string().regex(EMAIL, 'each must be one email address like oncall@example.com'), { error: 'alertEmails must be a list of email addresses' })
    .refine((l) => new Set(l).size === l.length, 'alertEmails lists an address twice')
    .default([]),
  alertChannels: z
    .array(z.string().regex(CHANNEL, 'each must be an existing notification channel, projects/PROJECT/notificationChannels/ID'), { error: 'alertChannels must be a list of notification channel names' })
    .default([]),
  // prefault, not default: zod 4 hands a default back unparsed, and the thresholds' own defaults would be skipped.
  alerts: alertThresholdsSchema.prefault({}),
};

/** How infra/config.ts reads each key: a switch as a string, lists and the thresholds as JSON. */
export const MONITORING_KEY_KINDS = { monitoring: 'string', alertEmails: 'json', alertChannels: 'json', alerts: 'json' } as const;
