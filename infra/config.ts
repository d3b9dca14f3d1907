import * as path from 'node:path';
import * as pulumi from '@pulumi/pulumi';
import { z } from 'zod';
import { ConfigError, loadConfig } from '../shared/config';
import { ENV_NAMES, HeraldConfig } from '../shared/config-schema';
import { checkDestinationUrl, DESTINATION_ID, DestinationSpec, destinationSpecSchema } from '../shared/domain/destinations/destination';
import { issuesFromZod } from '../shared/domain/events/event';
import { secretsKeySchema } from '../shared/domain/access/secret-box';
import { INTERNAL_DESTINATION_ID } from '../shared/domain/ids';
import { ownTopicProblem, TOPIC_RESOURCE } from '../shared/domain/access/topic-allow-list';
import { FUNCTION_NAMES } from '../shared/topology';
import { MONITORING_KEY_KINDS, monitoringConfigShape } from './monitoring-config';
import { USAGE_EXPORT_KEY_KINDS, usageExportConfigShape, usageExportEnv, UsageExportPlan, usageExportPlan } from './usage-export-config';

/**
 * The stack's `herald:*` config, read once and validated with zod: a bad value stops the
 * preview with the field named (`herald:functions.deliver.concurrency: …`).
 */

/** Herald settings the program sets itself: a stack may not override them through `herald:settings`. */
export const MANAGED_SETTINGS = [
  'projectId',
  'topicPrefix',
  'adminToken',
  'ingestToken',
  'adminTokenSha256',
  'ingestTokenSha256',
  'pushToken',
  'pushBaseUrl',
  'pushServiceAccount',
  'schedulerServiceAccount',
  'pushAuth',
  'allowLoopback',
  'suspensionCheckMs',
  'secretsKey',
  'laneProvisioning',
  'dedicatedLanes',
  // From herald:usageExport: the table the program declares.
  'usageExportTable',
  'usageExportLocation',
] as const satisfies readonly (keyof HeraldConfig)[];

/** The settings that come from Secret Manager: the runtime refuses to start without them. */
export const SECRET_SETTINGS = ['adminToken', 'ingestToken', 'secretsKey'] as const satisfies readonly (keyof HeraldConfig)[];
export type SecretSetting = (typeof SECRET_SETTINGS)[number];

/** Every other Herald setting may be tuned per stack: new settings in shared/config.ts join without a change here. */
export const TUNABLE_SETTINGS = (Object.keys(ENV_NAMES) as (keyof HeraldConfig)[]).filter((k) => !(MANAGED_SETTINGS as readonly string[]).includes(k));

const PROJECT_ID = /^[a-z][a-z0-9-]{4,28}[a-z0-9]$/;
const REGION = /^[a-z]+(-[a-z]+)+\d+$/;
// An IAM principal of the forms Cloud Run accepts, never allUsers/allAuthenticatedUsers (that is publicEndpoints' job).
const MEMBER = /^(user|serviceAccount|group|domain|principal|principalSet):\S+$/;

const int = (field: string, min: number, max: number) =>
  z
    .number({ error: `${field} must be a number` })
    .int(`${field} must be a whole number`)
    .min(min, `${field} must be ${min}–${max}`)
    .max(max, `${field} must be ${min}–${max}`);

const bool = (field: string) => z.enum(['true', 'false'], { error: `${field} must be true or false` }).transform((v) => v === 'true');

/**
 * How Cloud Run bills a function's instances: `request`, CPU only while a request is handled
 * and a fee per request; `instance`, CPU always allocated, no request fee, each instance billed
 * for its whole life (docs/deploying.md#billing-mode says which to pick at what volume).
 */
export const BILLING_MODES = ['request', 'instance'] as const;
export type BillingMode = (typeof BILLING_MODES)[number];
const billingMode = (field: string) =>
  z.enum(BILLING_MODES, { error: `${field} must be request (CPU only during requests, a fee per request) or instance (CPU always allocated, no request fee, billed for each instance's whole life)` });

export const functionSizeSchema = z.strictObject(
  {
    memory: z.string().regex(/^[1-9]\d*(Mi|Gi)$/, 'memory must be a size like 256Mi or 1Gi').optional(),
    cpu: z.string().regex(/^(0\.\d+|[1-9]\d*)$/, 'cpu must be a number of vCPUs like "1", "2" or "0.583"').optional(),
    minInstances: int('minInstances', 0, 1000).optional(),
    maxInstances: int('maxInstances', 1, 1000).optional(),
    concurrency: int('concurrency', 1, 1000).optional(),
    timeoutSeconds: int('timeoutSeconds', 1, 3600).optional(),
    /** This function's billing mode; absent: the stack's `herald:billing`. */
    billing: billingMode('billing').optional(),
  },
  { error: 'a function size must be an object {memory?, cpu?, minInstances?, maxInstances?, concurrency?, timeoutSeconds?, billing?}' },
);
export type FunctionSizeInput = z.infer<typeof functionSizeSchema>;

/** An object whose keys come from a closed set, an unknown key named in its own path. */
function keyedBy<K extends string, V extends z.ZodType>(keys: readonly K[], value: V, unknown: (key: string) => string) {
  return z
    .record(z.string(), value)
    .superRefine((r, ctx) => {
      for (const key of Object.keys(r)) if (!(keys as readonly string[]).includes(key)) ctx.addIssue({ code: 'custom', path: [key], message: unknown(key) });
    })
    .transform((r) => r as Partial<Record<K, z.output<V>>>);
}

const settingValue = z.union([z.string(), z.number(), z.boolean()], { error: 'a setting must be a string, number or boolean' });

const infraConfigSchema = z
  .strictObject({
    project: z.string({ error: 'required: pulumi config set gcp:project <project-id> (or herald:project)' }).regex(PROJECT_ID, 'must be a GCP project id (6-30 lowercase letters, digits, hyphens)'),
    region: z.string().regex(REGION, 'must be a GCP region like us-central1').default('us-central1'),
    topicPrefix: z
      .string()
      .regex(/^[a-z][a-z0-9-]{0,30}$/, 'topicPrefix must start with a letter and hold only a-z, 0-9 and -, at most 31 characters')
      .default('herald'),
    firestoreLocation: z.string().regex(/^[a-z0-9-]+$/, 'must be a Firestore location like nam5, eur3 or us-central1').optional(),
    createFirestoreDatabase: bool('createFirestoreDatabase').default(true),
    firestoreDeletionPolicy: z.enum(['ABANDON', 'DELETE'], { error: 'must be ABANDON (keep the data on pulumi destroy) or DELETE' }).default('ABANDON'),
    publicEndpoints: bool('publicEndpoints').default(true),
    invokers: z.array(z.string().regex(MEMBER, 'each invoker must be an IAM member like user:ops@example.com or serviceAccount:ci@p.iam.gserviceaccount.com'), { error: 'invokers must be a list of IAM members' }).default([]),
    signingSecretReaders: z
      .array(z.string().regex(MEMBER, 'each reader must be an IAM member like group:payments@example.com or serviceAccount:hooks@p.iam.gserviceaccount.com'), { error: 'signingSecretReaders must be a list of IAM members' })
      .default([]),
    billing: billingMode('billing').default('request'),
    functions: keyedBy(FUNCTION_NAMES, functionSizeSchema, (key) => `${key} is not a Herald function; size one of ${FUNCTION_NAMES.join(', ')}`).default({}),
    settings: keyedBy(TUNABLE_SETTINGS, settingValue, (key) =>
      (MANAGED_SETTINGS as readonly string[]).includes(key) ? `${key} is set by the Pulumi program itself` : `${key} is not a Herald setting; one of ${TUNABLE_SETTINGS.join(', ')}`,
    ).default({}),
    pumpHold: bool('pumpHold').default(false),
    destinations: z
      .record(z.string().regex(DESTINATION_ID, 'a destination id is 1-63 lowercase letters, digits and hyphens, starting and ending with a letter or digit'), destinationSpecSchema)
      .default({}),
    /**
     * Topics Herald's identity is granted roles/pubsub.publisher on, one by one: the topics the
     * stack's own destinations use, in this project or another the deployer may grant on. A
     * customer's topic elsewhere is granted by its owner instead (docs/what-a-destination-receives.md#iam).
     */
    destinationTopics: z
      .array(z.string().regex(TOPIC_RESOURCE, 'each must be a topic, projects/PROJECT/topics/TOPIC (IAM grants one topic at a time: no prefix)'), { error: 'destinationTopics must be a list of topics' })
      .default([]),
    /** Destinations (as Herald names them: orders, acme_orders) whose dedicated lane the program creates; Herald creates none on GCP. */
    dedicatedLanes: z
      .array(z.string().regex(INTERNAL_DESTINATION_ID, 'each must be a destination id as Herald names it: orders, or acme_orders for orders in account acme'), { error: 'dedicatedLanes must be a list of destination ids' })
      .default([]),
    packageDir: z.string().min(1).optional(),
    adminToken: z.string({ error: 'required: pulumi config set --secret herald:adminToken <at least 16 characters>' }).min(16, 'must be at least 16 characters'),
    ingestToken: z.string({ error: 'required: pulumi config set --secret herald:ingestToken <at least 16 characters>' }).min(16, 'must be at least 16 characters'),
    /** Optional: without it the program generates the key and keeps it in the stack's state (infra/index.ts). */
    secretsKey: secretsKeySchema.optional(),
    /** The dashboard, the alert policies and their channels (infra/monitoring-config.ts). */
    ...monitoringConfigShape,
    /** The daily usage export to BigQuery (infra/usage-export-config.ts); off unless set. */
    ...usageExportConfigShape,
  })
  .superRefine((c, ctx) => {
    for (const [id, spec] of Object.entries(c.destinations)) {
      const problem = spec.url === undefined ? undefined : checkDestinationUrl(spec.url, { allowLoopback: false });
      if (problem) ctx.addIssue({ code: 'custom', path: ['destinations', id, 'url'], message: problem });
    }
    const names = { prefix: c.topicPrefix };
    c.destinationTopics.forEach((topic, i) => {
      const own = ownTopicProblem(topic, names);
      if (own) ctx.addIssue({ code: 'custom', path: ['destinationTopics', i], message: own });
    });
    for (const [id, spec] of Object.entries(c.destinations)) {
      const own = spec.topic === undefined ? undefined : ownTopicProblem(spec.topic, names);
      if (own) ctx.addIssue({ code: 'custom', path: ['destinations', id, 'topic'], message: own });
      if (spec.lane === 'dedicated' && !c.dedicatedLanes.includes(id)) {
        ctx.addIssue({ code: 'custom', path: ['destinations', id, 'lane'], message: `a dedicated lane is created by the program: add "${id}" to herald:dedicatedLanes` });
      }
    }
    c.dedicatedLanes.forEach((id, i) => {
      if (c.dedicatedLanes.indexOf(id) !== i) ctx.addIssue({ code: 'custom', path: ['dedicatedLanes', i], message: `${id} is listed twice` });
    });
    if (Object.keys(c.destinations).length > 0 && !c.publicEndpoints) {
      ctx.addIssue({ code: 'custom', path: ['destinations'], message: 'declared destinations are registered through the admin API during pulumi up, which needs publicEndpoints true' });
    }
  });

type ParsedConfig = z.infer<typeof infraConfigSchema>;

export interface InfraConfig extends Omit<ParsedConfig, SecretSetting | 'packageDir' | 'firestoreLocation' | 'usageExport'> {
  /** The usage export's dataset, table, location and schedule; absent: no export (herald:usageExport unset or false). */
  usageExport?: UsageExportPlan;
  firestoreLocation: string;
  /** Holds package.json, package-lock.json and dist/ (compiled by the program: infra/build.ts): what Cloud Functions builds. */
  packageDir: string;
  /** The runtime configuration every function will load, validated by the same code. */
  herald: HeraldConfig;
  /** Environment variables of every function (the managed ones are added with the resources they name). */
  settingsEnv: Record<string, string>;
  /** The stack's own secretsKey when it sets one; otherwise the program generates it. */
  secrets: Record<Exclude<SecretSetting, 'secretsKey'>, pulumi.Output<string>> & { secretsKey?: pulumi.Output<string> };
  destinations: Record<string, DestinationSpec>;
}

export class InfraConfigError extends Error {
  override name = 'InfraConfigError';
  constructor(lines: string[]) {
    super(`invalid Pulumi config:\n${lines.map((l) => `  ${l}`).join('\n')}`);
  }
}

type Kind = 'string' | 'json';
// Top-level values arrive as strings; structured ones as JSON (pulumi config set --path … writes them).
const KEYS: Record<keyof z.input<typeof infraConfigSchema>, Kind> = {
  project: 'string',
  region: 'string',
  topicPrefix: 'string',
  firestoreLocation: 'string',
  createFirestoreDatabase: 'string',
  firestoreDeletionPolicy: 'string',
  publicEndpoints: 'string',
  billing: 'string',
  invokers: 'json',
  signingSecretReaders: 'json',
  functions: 'json',
  settings: 'json',
  pumpHold: 'string',
  destinations: 'json',
  destinationTopics: 'json',
  dedicatedLanes: 'json',
  packageDir: 'string',
  adminToken: 'string',
  ingestToken: 'string',
  secretsKey: 'string',
  ...MONITORING_KEY_KINDS,
  ...USAGE_EXPORT_KEY_KINDS,
};

/** Reads the stack's `herald:*` config once; a bad value stops the preview with the field named. */
export function readInfraConfig(config = new pulumi.Config('herald'), gcpConfig = new pulumi.Config('gcp')): InfraConfig {
  const raw: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const [key, kind] of Object.entries(KEYS)) {
    const value = config.get(key);
    if (value === undefined || value === '') continue;
    if (kind === 'string') raw[key] = value;
    else {
      try {
        raw[key] = JSON.parse(value);
      } catch {
        problems.push(`herald:${key}: not valid JSON; set it with pulumi config set --path herald:${key}.<field> <value>`);
      }
    }
  }
  raw.project ??= gcpConfig.get('project');
  raw.region ??= gcpConfig.get('region');
  if (problems.length) throw new InfraConfigError(problems);
  const parsed = infraConfigSchema.safeParse(raw);
  if (!parsed.success) throw new InfraConfigError(issuesFromZod(parsed.error).map((i) => `herald:${i.path}: ${i.message}`));
  const c = parsed.data;
  const settingsEnv = withDeclaredTopics(
    Object.fromEntries(Object.entries(c.settings).map(([k, v]) => [ENV_NAMES[k as keyof HeraldConfig], String(v)])),
    c.destinations,
  );
  const { adminToken: _adminToken, ingestToken: _ingestToken, secretsKey, packageDir, firestoreLocation, usageExport, ...rest } = c;
  const exportPlan = usageExportPlan(usageExport, c);
  return {
    ...rest,
    ...(exportPlan ? { usageExport: exportPlan } : {}),
    firestoreLocation: firestoreLocation ?? c.region,
    packageDir: path.resolve(packageDir ?? path.join(__dirname, '..')),
    herald: runtimeConfigOf(c, settingsEnv),
    settingsEnv,
    // Read as secrets so the values stay encrypted in the state and out of the logs.
    secrets: {
      adminToken: config.requireSecret('adminToken'),
      ingestToken: config.requireSecret('ingestToken'),
      ...(secretsKey !== undefined ? { secretsKey: config.requireSecret('secretsKey') } : {}),
    },
  };
}

/**
 * A destination the stack declares is the operator's choice: its topic joins the `default`
 * account's allowed topics (HERALD_DEFAULT_ACCOUNT_TOPICS, after any the stack sets there),
 * or registering it at deploy would be refused.
 */
function withDeclaredTopics(env: Record<string, string>, destinations: Record<string, DestinationSpec>): Record<string, string> {
  const declared = Object.values(destinations).flatMap((d) => (d.topic !== undefined ? [d.topic] : []));
  if (declared.length === 0) return env;
  const name = ENV_NAMES.defaultAccountTopics;
  const set = (env[name] ?? '')
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean);
  return { ...env, [name]: [...new Set([...set, ...declared])].join(',') };
}

/** What the program tells the functions about dedicated lanes: it makes them, for the destinations the stack lists. */
export function laneEnv(dedicatedLanes: readonly string[]): Record<string, string> {
  return { [ENV_NAMES.laneProvisioning]: 'declared', ...(dedicatedLanes.length > 0 ? { [ENV_NAMES.dedicatedLanes]: dedicatedLanes.join(',') } : {}) };
}

/** The functions' own validation, run at preview on the environment they will get. */
function runtimeConfigOf(c: ParsedConfig, settingsEnv: Record<string, string>): HeraldConfig {
  const env: NodeJS.ProcessEnv = {
    ...settingsEnv,
    [ENV_NAMES.projectId]: c.project,
    [ENV_NAMES.topicPrefix]: c.topicPrefix,
    [ENV_NAMES.adminToken]: c.adminToken,
    [ENV_NAMES.ingestToken]: c.ingestToken,
    [ENV_NAMES.pushBaseUrl]: functionsBaseUrl(c.project, c.region),
    // Created with the stack: a stand-in of the same shape.
    [ENV_NAMES.pushServiceAccount]: `push@${c.project}.iam.gserviceaccount.com`,
    [ENV_NAMES.schedulerServiceAccount]: `scheduler@${c.project}.iam.gserviceaccount.com`,
    [ENV_NAMES.pushAuth]: 'oidc-behind-iam',
    ...laneEnv(c.dedicatedLanes),
    ...usageExportEnv(c.project, usageExportPlan(c.usageExport, c)),
  };
  try {
    return loadConfig(env);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    const byEnv = new Map(Object.entries(ENV_NAMES).map(([k, name]) => [name, k]));
    const lines = e.message
      .split('\n')
      .slice(1)
      .map((l) => l.trim())
      .map((l) => {
        const name = /^[A-Z_]+/.exec(l)?.[0];
        const key = name === undefined ? undefined : byEnv.get(name);
        return key === undefined ? `herald:settings: ${l}` : `herald:settings.${key}: ${l}`;
      });
    throw new InfraConfigError(lines);
  }
}

/** Where Cloud Functions serves a project's functions in a region: `${base}/${name}`. */
export function functionsBaseUrl(project: string, region: string): string {
  return `https://${region}-${project}.cloudfunctions.net`;
}
