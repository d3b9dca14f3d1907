import { DEFAULT_LANE_SHARDS, DEFAULT_RETRY_SHARDS, MAX_SHARDS } from './topology';
import { z } from 'zod';
import { secretsKeySchema } from './domain/access/secret-box';
import { DEFAULT_RETENTION_DAYS } from './domain/delivery/delivery-retention';
import { isSecureOrLoopback } from './domain/access/portal';
import { allowedTopicsSchema } from './domain/access/topic-allow-list';
import { ACCOUNT_ID, INTERNAL_DESTINATION_ID } from './domain/ids';

/**
 * The settings Herald reads from the environment: each one's schema (its bounds and default)
 * and the variable it is read from. config.ts loads and checks them.
 */

const KIB = 1024;

/** Destinations one instance's directory holds by default: 20,000 at ~1 KiB each is ~20 MiB of a 512 MiB instance. */
export const DEFAULT_DIRECTORY_MAX_DESTINATIONS = 20_000;

/**
 * `token`: the shared HERALD_PUSH_TOKEN in `?token=` (local mode: the emulator sends no OIDC header).
 * `oidc`: a Google-signed OIDC token, verified by Herald (signature, issuer, expiry, audience, email).
 * `oidc-behind-iam`: as `oidc`; and for a function only its invokers may call, a token whose
 * signature Cloud Run removed after its own IAM check is accepted on its claims.
 */
export const PUSH_AUTH_MODES = ['token', 'oidc', 'oidc-behind-iam'] as const;
export type PushAuthMode = (typeof PUSH_AUTH_MODES)[number];

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'], { error: 'must be true or false' })
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

const sha256Hex = z
  .string()
  .regex(/^[0-9a-fA-F]{64}$/, 'must be the SHA-256 of the token, 64 hex digits (printf %s "$TOKEN" | sha256sum)')
  .transform((v) => v.toLowerCase());

/** A comma-separated list, parsed as a whole by `schema`; a bad entry is named by its place and value (the issue stays on the variable). */
function commaList<T>(schema: z.ZodType<T, string[]>) {
  return z.string().transform((value, ctx) => {
    const entries = value
      .split(',')
      .map((e) => e.trim())
      .filter(Boolean);
    const parsed = schema.safeParse(entries);
    if (parsed.success) return parsed.data;
    const issue = parsed.error.issues[0]!;
    const at = typeof issue.path[0] === 'number' ? `entry ${issue.path[0] + 1} (${entries[issue.path[0]]}): ` : '';
    ctx.addIssue({ code: 'custom', message: `${at}${issue.message}` });
    return z.NEVER;
  });
}

const int = (min: number, max: number) => z.coerce.number({ error: 'must be a number' }).int('must be a whole number').min(min).max(max);

export const envSchema = z.object({
  projectId: z.string().regex(/^[a-z][a-z0-9-]{4,28}[a-z0-9]$/, 'must be a GCP project id (6-30 lowercase letters, digits, hyphens)').default('herald-local'),
  topicPrefix: z.string().regex(/^[a-z][a-z0-9-]{0,30}$/, 'must be lowercase letters, digits and hyphens, starting with a letter').default('herald'),
  adminToken: z.string().min(16, 'must be at least 16 characters').optional(),
  ingestToken: z.string().min(16, 'must be at least 16 characters').optional(),
  pushToken: z.string().min(16, 'must be at least 16 characters').optional(),
  /** The admin and ingest tokens may be given as their SHA-256 instead (hex): the process then never holds them. */
  adminTokenSha256: sha256Hex.optional(),
  ingestTokenSha256: sha256Hex.optional(),
  /**
   * The keyring destination signing secrets are encrypted with in Firestore (shared/domain/access/secret-box.ts):
   * comma-separated base64 keys of 32 bytes, the first encrypting, all decrypting. Required
   * against real Firestore (secretBoxOf); local mode makes and keeps one.
   */
  secretsKey: secretsKeySchema.optional(),
  maxBodyBytes: int(1 * KIB, 10 * 1024 * KIB).default(1024 * KIB),
  maxEventBytes: int(1 * KIB, 900 * KIB).default(256 * KIB),
  /** A request's whole body must arrive within this long of its admission, or it is refused (408): a slow or lying sender holds nothing longer. */
  bodyTimeoutMs: int(1_000, 300_000).default(10_000),
  /** Attempt timeout under the presets; a custom policy names its own. Never scaled. */
  deliveryTimeoutMs: int(100, 60_000).default(5_000),
  /** Divides every policy delay and window (local mode and tests play schedules fast). */
  timeScale: z.coerce.number({ error: 'must be a number' }).positive('must be greater than 0').max(1_000_000).default(1),
  /** An IN_FLIGHT claim older than this is taken again (its holder is presumed dead). Longer than any attempt timeout. */
  claimTtlMs: int(1_000, 3_600_000).default(90_000),
  /** How often the retry pump looks for due deliveries. */
  pumpIntervalMs: int(100, 60_000).default(1_000),
  /**
   * The reconciler checks an accepted event this long after ingest took it: longer than Pub/Sub
   * takes to bring it to every destination when all is well (its push backoff reaches 10 min).
   * Local mode's default is 60 s.
   */
  reconcileAfterMs: int(1_000, 86_400_000).default(900_000),
  /**
   * How long a settled delivery record (DELIVERED, or DEAD with its dead letter out) is kept
   * after it settled: Firestore's TTL policy deletes it after (domain/delivery/delivery-retention.ts).
   * Longer than the reconciler may wait to count an event's records (loadConfig checks).
   */
  deliveryRetentionDays: int(1, 3650).default(DEFAULT_RETENTION_DAYS),
  /** How often local mode runs the reconciler (GCP: at the start of each scheduled pump run). */
  reconcileIntervalMs: int(100, 600_000).default(5_000),
  /**
   * Least time between two intake journal writes of one process: longer is fewer writes per
   * event under load (about 1000 / this many a second) and a longer wait for ingest's answer.
   */
  journalGapMs: int(0, 2_000).default(100),
  /** Success-rate counters are flushed at most this often per process: each counter document takes at most one write per flush. */
  rateFlushMs: int(100, 60_000).default(1_000),
  /** How often local mode runs the suspension check (GCP: Cloud Scheduler, each minute); default a minute of scaled time. */
  suspensionCheckMs: int(100, 3_600_000).optional(),
  /**
   * How long one replay run works before it stops and reports `incomplete` (a re-run continues):
   * below the replay trigger's ack deadline (600 s), or Pub/Sub would deliver the trigger again.
   */
  replayRunMs: int(1_000, 540_000).default(480_000),
  allowLoopback: bool.default(false),
  destinationCacheMs: int(0, 600_000).default(10_000),
  /** Destinations one instance's directory holds at most (whole accounts, least recently used dropped first). */
  directoryMaxDestinations: int(100, 10_000_000).default(DEFAULT_DIRECTORY_MAX_DESTINATIONS),
  /**
   * Shared lanes for first attempts and for the retry pump's retries (topology.ts): the Pulumi
   * program declares as many as the functions use. Raising them spreads destinations wider;
   * Pub/Sub allows 10,000 topics per project.
   */
  laneShards: int(1, MAX_SHARDS).default(DEFAULT_LANE_SHARDS),
  retryShards: int(1, MAX_SHARDS).default(DEFAULT_RETRY_SHARDS),
  /**
   * Who makes dedicated lanes (`"lane": "dedicated"`): `runtime`, Herald when the destination is
   * registered (local mode, the emulator); `declared`, the Pulumi program, for the destinations
   * in HERALD_DEDICATED_LANES (herald:dedicatedLanes), so that the deployed identity needs no
   * project-wide Pub/Sub role. Set by the Pulumi program.
   */
  laneProvisioning: z.enum(['runtime', 'declared'], { error: 'must be runtime or declared' }).default('runtime'),
  /** With `declared`: the destinations (as Herald names them: `orders`, `acme_orders`) that have a dedicated lane, comma-separated. */
  dedicatedLanes: commaList(z.array(z.string().regex(INTERNAL_DESTINATION_ID, 'must be a destination id as Herald names it: orders, or acme_orders in account acme'))).optional(),
  /**
   * On a shared lane a delivery waits in-process for its rate slot at most this long (a later
   * slot defers it to the retry pump): the push it holds is a slot other destinations share.
   */
  sharedLaneWaitMs: int(0, 30_000).default(1_000),
  /**
   * A destination that had an event less than this long ago on this instance is busy: its next
   * events, from other requests, wait up to this long to go onto its lane together, one push
   * (domain/intake/lane-coalescing.ts). 0: every event goes at once.
   */
  laneLingerMs: int(0, 1_000).default(20),
  /**
   * A destination whose attempts take this long (or time out) is slow: while it is, its first
   * attempts leave the shared lanes for the retry lanes (through the pump) instead of holding
   * a push slot that other destinations share.
   */
  slowAttemptMs: int(100, 60_000).default(2_000),
  /**
   * The quotas of an account the operator gave none (PATCH /admin/accounts/{id} "quotas"); 0
   * means none. The `default` account, which everything from before accounts belongs to, has
   * none unless the operator sets them.
   */
  accountPublishQuota: int(0, 1_000_000).default(1_000),
  accountDestinationQuota: int(0, 1_000_000).default(1_000),
  /**
   * Topics the `default` account's destinations may publish to besides the allowedTopics the
   * operator gave it (PATCH /admin/accounts/default): comma-separated topics and prefixes. For
   * deployments that use `default` alone, and the destinations a Pulumi stack declares (the
   * program adds their topics). Every other account has only its own list.
   */
  defaultAccountTopics: commaList(allowedTopicsSchema).optional(),
  /**
   * The origins that may frame the customer portal (its page's CSP frame-ancestors): the
   * platform's own pages that embed it. None by default: the portal is not framed until the
   * operator lists them. The operator console is never framed, whatever this says.
   */
  portalFrameAncestors: z
    .string()
    .transform((v) => v.split(/[\s,]+/).filter((o) => o !== ''))
    .superRefine((origins, ctx) => {
      for (const o of origins.filter((o) => !isPortalFrameOrigin(o))) {
        ctx.addIssue({ code: 'custom', message: `${JSON.stringify(o)} is not an origin: give each as https://host[:port], like https://app.example.com, separated by spaces or commas (lower case, no path, no wildcard; http only for localhost, 127.0.0.0/8 or [::1])` });
      }
    })
    .default([]),
  /**
   * Where users reach the console (portal links are `<this>/portal#portal=…`); default the
   * admin function's, HERALD_PUSH_BASE_URL + /admin/console. Never taken from a request's headers.
   */
  consoleUrl: z
    .string()
    .superRefine((value, ctx) => {
      let url: URL;
      try {
        url = new URL(value);
      } catch {
        ctx.addIssue({ code: 'custom', message: 'must be an absolute URL, like https://herald.example.com/admin/console' });
        return;
      }
      if (!isSecureOrLoopback(url)) ctx.addIssue({ code: 'custom', message: 'must be https (http only for localhost, 127.0.0.0/8 or [::1])' });
      if (url.search !== '' || url.hash !== '') ctx.addIssue({ code: 'custom', message: 'must have no query string and no fragment: portal links add their own' });
    })
    .transform((v) => v.replace(/\/+$/, ''))
    .optional(),
  /** Where the console's built files are (default console/dist in the package); tests point it elsewhere. */
  consoleDir: z.string().min(1).optional(),
  logLevel: z.enum(['DEBUG', 'INFO', 'WARNING', 'ERROR'], { error: 'must be DEBUG, INFO, WARNING or ERROR' }).default('INFO'),
  /** Base URL that push subscriptions call: `${pushBaseUrl}/deliver` (function URLs on GCP). */
  pushBaseUrl: z.url({ error: 'must be an absolute URL' }).optional(),
  /** Service account whose OIDC token Pub/Sub attaches to pushes (GCP only). */
  pushServiceAccount: z.email({ error: 'must be a service account email' }).optional(),
  /** Service account whose OIDC token Cloud Scheduler attaches when it starts pump and suspension-check; default the push account. */
  schedulerServiceAccount: z.email({ error: 'must be a service account email' }).optional(),
  /**
   * How push and scheduler requests (route, deliver, replay, pump, suspension-check) are
   * authenticated; default `oidc` when HERALD_PUSH_SERVICE_ACCOUNT is set, else `token`
   * (shared/app/access/push-auth.ts). Never none: with neither configured every such request is refused.
   */
  pushAuth: z.enum(PUSH_AUTH_MODES, { error: `must be one of ${PUSH_AUTH_MODES.join(', ')}` }).optional(),
  /**
   * The prefix of Herald's operational events' types (docs/operational-events.md): `herald.`
   * makes `herald.destination.suspended`. Lowercase dot-separated words ending in a dot.
   */
  operationalEventPrefix: z
    .string()
    .regex(/^[a-z][a-z0-9-]*(\.[a-z0-9-]+)*\.$/, 'must be lowercase words separated by dots and ending in a dot, like herald. or acme.webhooks.')
    .default('herald.'),
  /**
   * The fractions of a destination's suspension threshold (its failure rate) at which
   * `herald.destination.failing` is announced, each once per crossing: `0.9`, or `0.5,0.9`.
   * Empty: never.
   */
  operationalFailingFractions: commaList(
    z.array(z.string().transform(Number).pipe(z.number({ error: 'must be a number' }).gt(0, 'must be above 0').max(1, 'must be at most 1 (the threshold itself)'))).max(5, 'at most 5 fractions'),
  ).default([0.9]),
  /**
   * The least time between two operational events of one kind about one destination (or, for a
   * quota, one account), per instance; those between are counted in the next one's `suppressed`.
   * Suspended and reactivated are one per state change and not limited.
   */
  operationalEventsIntervalMs: int(0, 86_400_000).default(300_000),
  /** An account that receives a copy of every account's operational events (the operator's own); absent: none. */
  operationalEventsAccount: z.string().regex(ACCOUNT_ID, 'must be an account id: 1-63 lowercase letters, digits and hyphens').optional(),
  /** Herald's own metrics (docs/observability.md): `off` records and exports nothing. */
  telemetry: z.enum(['on', 'off'], { error: 'must be on or off' }).default('on'),
  /** Metrics to Cloud Monitoring; default on where Herald runs on GCP (K_SERVICE set), off in local mode and elsewhere. */
  cloudMonitoring: bool.optional(),
  /** An OpenTelemetry collector's OTLP/HTTP base URL: metrics are also sent to `<this>/v1/metrics`, spans to `<this>/v1/traces`. */
  otlpEndpoint: z
    .url({ protocol: /^https?$/, error: 'must be an http(s) URL, like http://127.0.0.1:4318' })
    .optional(),
  /** How often metrics are pushed (Cloud Monitoring, OTLP): their points per minute depend on this, not on traffic. Cloud Monitoring takes one point per series per 5 s at most. */
  metricsIntervalMs: int(5_000, 3_600_000).default(60_000),
  /** Spans to Cloud Trace; default on where Herald runs on GCP (K_SERVICE set), off in local mode and elsewhere (docs/observability.md#traces). */
  cloudTrace: bool.optional(),
  /** Of the traces Herald starts itself (no producer's traceparent), the share sampled; a continued trace keeps its producer's decision. */
  traceSampleRatio: z.coerce.number({ error: 'must be a number' }).min(0, 'must be between 0 and 1').max(1, 'must be between 0 and 1').default(0.01),
  /**
   * The BigQuery table the daily usage export writes (docs/usage.md#exporting-to-bigquery),
   * `project.dataset.table`; set by the Pulumi program with `herald:usageExport`. Absent: no export.
   */
  usageExportTable: z
    .string()
    .regex(/^[a-z][a-z0-9-]{4,28}[a-z0-9]\.\w{1,1024}\.\w{1,1024}$/, 'must be a BigQuery table as project.dataset.table, like acme-prod.herald_usage.usage')
    .transform((v) => {
      const [project, dataset, table] = v.split('.') as [string, string, string];
      return { project, dataset, table };
    })
    .optional(),
  /** The BigQuery location of that table's dataset (`US`, `europe-west1`): where its load jobs run. Absent: BigQuery's default (US). */
  usageExportLocation: z.string().regex(/^[A-Za-z]+(-[a-z]+\d*)*$/, 'must be a BigQuery location like US, EU or europe-west1').optional(),
});

export type HeraldConfig = z.infer<typeof envSchema>;

export const ENV_NAMES: Record<keyof HeraldConfig, string> = {
  projectId: 'HERALD_PROJECT_ID',
  topicPrefix: 'HERALD_TOPIC_PREFIX',
  adminToken: 'HERALD_ADMIN_TOKEN',
  ingestToken: 'HERALD_INGEST_TOKEN',
  pushToken: 'HERALD_PUSH_TOKEN',
  maxBodyBytes: 'HERALD_MAX_BODY_BYTES',
  maxEventBytes: 'HERALD_MAX_EVENT_BYTES',
  bodyTimeoutMs: 'HERALD_BODY_TIMEOUT_MS',
  deliveryTimeoutMs: 'HERALD_DELIVERY_TIMEOUT_MS',
  timeScale: 'HERALD_TIME_SCALE',
  claimTtlMs: 'HERALD_CLAIM_TTL_MS',
  pumpIntervalMs: 'HERALD_PUMP_INTERVAL_MS',
  reconcileAfterMs: 'HERALD_RECONCILE_AFTER_MS',
  deliveryRetentionDays: 'HERALD_DELIVERY_RETENTION_DAYS',
  reconcileIntervalMs: 'HERALD_RECONCILE_INTERVAL_MS',
  journalGapMs: 'HERALD_JOURNAL_GAP_MS',
  rateFlushMs: 'HERALD_RATE_FLUSH_MS',
  suspensionCheckMs: 'HERALD_SUSPENSION_CHECK_MS',
  replayRunMs: 'HERALD_REPLAY_RUN_MS',
  allowLoopback: 'HERALD_ALLOW_LOOPBACK',
  destinationCacheMs: 'HERALD_DESTINATION_CACHE_MS',
  directoryMaxDestinations: 'HERALD_DIRECTORY_MAX_DESTINATIONS',
  laneShards: 'HERALD_LANE_SHARDS',
  retryShards: 'HERALD_RETRY_SHARDS',
  sharedLaneWaitMs: 'HERALD_SHARED_LANE_WAIT_MS',
  laneLingerMs: 'HERALD_LANE_LINGER_MS',
  slowAttemptMs: 'HERALD_SLOW_ATTEMPT_MS',
  accountPublishQuota: 'HERALD_ACCOUNT_PUBLISH_QUOTA',
  accountDestinationQuota: 'HERALD_ACCOUNT_DESTINATION_QUOTA',
  portalFrameAncestors: 'HERALD_PORTAL_FRAME_ANCESTORS',
  consoleUrl: 'HERALD_CONSOLE_URL',
  defaultAccountTopics: 'HERALD_DEFAULT_ACCOUNT_TOPICS',
  laneProvisioning: 'HERALD_LANE_PROVISIONING',
  dedicatedLanes: 'HERALD_DEDICATED_LANES',
  consoleDir: 'HERALD_CONSOLE_DIR',
  logLevel: 'HERALD_LOG_LEVEL',
  pushBaseUrl: 'HERALD_PUSH_BASE_URL',
  pushServiceAccount: 'HERALD_PUSH_SERVICE_ACCOUNT',
  adminTokenSha256: 'HERALD_ADMIN_TOKEN_SHA256',
  ingestTokenSha256: 'HERALD_INGEST_TOKEN_SHA256',
  schedulerServiceAccount: 'HERALD_SCHEDULER_SERVICE_ACCOUNT',
  pushAuth: 'HERALD_PUSH_AUTH',
  secretsKey: 'HERALD_SECRETS_KEY',
  operationalEventPrefix: 'HERALD_OPERATIONAL_EVENT_PREFIX',
  operationalFailingFractions: 'HERALD_OPERATIONAL_FAILING_FRACTIONS',
  operationalEventsIntervalMs: 'HERALD_OPERATIONAL_EVENTS_INTERVAL_MS',
  operationalEventsAccount: 'HERALD_OPERATIONAL_EVENTS_ACCOUNT',
  telemetry: 'HERALD_TELEMETRY',
  cloudMonitoring: 'HERALD_CLOUD_MONITORING',
  otlpEndpoint: 'HERALD_OTLP_ENDPOINT',
  metricsIntervalMs: 'HERALD_METRICS_INTERVAL_MS',
  cloudTrace: 'HERALD_CLOUD_TRACE',
  traceSampleRatio: 'HERALD_TRACE_SAMPLE_RATIO',
  usageExportTable: 'HERALD_USAGE_EXPORT_TABLE',
  usageExportLocation: 'HERALD_USAGE_EXPORT_LOCATION',
};

/** `scheme://host[:port]` exactly, https (http only to a loopback host). */
function isPortalFrameOrigin(value: string): boolean {
  try {
    const url = new URL(value);
    return url.origin === value && /^(?:[a-z0-9-]+(?:\.[a-z0-9-]+)*|\[[0-9a-f:.]+\])$/.test(url.hostname) && isSecureOrLoopback(url);
  } catch {
    return false;
  }
}
