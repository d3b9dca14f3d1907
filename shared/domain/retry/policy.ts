import { z } from 'zod';
import { POLICY_PRESET_NAMES, PolicyPresetName } from './policy-preset-names';

export { POLICY_PRESET_NAMES, type PolicyPresetName } from './policy-preset-names';

/**
 * Delivery policies as data (docs/policies.md): which failures are retried, on
 * what schedule, for how long, and what happens after the last retry. The five presets
 * are named values taken from the seeds; a destination may also carry a custom policy of
 * the same shape. `decide()` (retry-decision.ts) is the only reader of these rules.
 *
 * Every duration is in milliseconds.
 */

export const SECOND = 1000;
export const MINUTE = 60 * SECOND;
export const HOUR = 60 * MINUTE;

/**
 * Matches HTTP statuses: one code (`408`), a class (`"5xx"`), or a range with any of
 * `gt`, `gte`, `lt`, `lte` (`{ "gt": 500 }` is every code greater than 500).
 */
export type StatusRule = number | StatusClass | StatusRange;
export const STATUS_CLASSES = ['3xx', '4xx', '5xx'] as const;
export type StatusClass = (typeof STATUS_CLASSES)[number];
export interface StatusRange {
  readonly gt?: number;
  readonly gte?: number;
  readonly lt?: number;
  readonly lte?: number;
}

/** How long to wait before retry n (n ≥ 1). */
export type Backoff =
  | { readonly kind: 'immediate' }
  /** delaysMs[n-1]; past the end of the list the last delay repeats. */
  | { readonly kind: 'fixed'; readonly delaysMs: readonly number[] }
  /** initialMs + (n-1)·incrementMs, at most capMs. */
  | { readonly kind: 'linear'; readonly initialMs: number; readonly incrementMs: number; readonly capMs?: number }
  /** initialMs · factor^(n-1), at most capMs. */
  | { readonly kind: 'exponential'; readonly initialMs: number; readonly factor: number; readonly capMs?: number };

/**
 * 429 under `on429: 'throttle'`: the event waits on this backoff without consuming a
 * retry, for as long as `windowMs` since its first attempt has not passed (docs/policies.md: a
 * throttled event counts as a failure once it stayed undelivered for more than an hour).
 * After the window a 429 is an ordinary retried failure on the policy's schedule.
 */
export interface ThrottlePolicy {
  readonly backoff: Backoff;
  readonly windowMs: number;
}

export interface DeliveryPolicy {
  /** The preset name, or `custom`. */
  readonly name: string;
  /** The failures that are retried. Statuses may be `any` (every non-2xx). */
  readonly retryOn: {
    readonly statuses: 'any' | readonly StatusRule[];
    readonly timeouts: boolean;
    readonly networkErrors: boolean;
  };
  /** `retry`: 429 is an ordinary failure (retried if listed). `throttle`: see ThrottlePolicy. */
  readonly on429: 'retry' | 'throttle';
  /** Used when on429 is `throttle`; absent means DEFAULT_THROTTLE. */
  readonly throttle?: ThrottlePolicy;
  /** Statuses that suspend the destination at once (criteria suspension). 410 always does. */
  readonly suspendOn: readonly StatusRule[];
  /** A Pub/Sub destination whose topic refuses Herald (no permission) or is missing is suspended at once. */
  readonly suspendOnTopicRefusal?: boolean;
  readonly backoff: Backoff;
  /** Delay of retry n counted from the attempt that just failed, or from the first attempt. */
  readonly measureFrom: 'previous' | 'origin';
  /** Attempts in all, the first included; throttled 429s do not count. Absent: no limit but maxAgeMs. */
  readonly maxAttempts?: number;
  /** No attempt is scheduled at or after the event's publish time + maxAgeMs. */
  readonly maxAgeMs?: number;
  readonly attemptTimeoutMs: number;
  /** When retries are exhausted (attempts or age): the event dies, or the destination is deactivated and its events queued. */
  readonly afterLastRetry: 'dead' | 'deactivate-and-queue';
  /** Retry-After on 429/503 moves the retry, clamped to 1×–2× the scheduled delay. */
  readonly honourRetryAfter: boolean;
  /** Threshold suspension (docs/suspension.md): absent, a destination is never suspended for its success rate. */
  readonly threshold?: ThresholdPolicy;
}

/**
 * Suspend the destination when its success rate over the last `windowMs` falls below
 * `successRate`, once at least `minSample` attempts were counted in that window. A 429
 * counts against it only when its event has waited longer than `windowMs`.
 */
export interface ThresholdPolicy {
  readonly successRate: number;
  readonly windowMs: number;
  readonly minSample: number;
}

/**
 * Seed 000: below 95 % over the last rolling hour. The seed names no sample size; 50
 * attempts in the hour keeps a quiet destination from being suspended for two or three
 * failures (at 3 failures in 50, the rate is 94 %: a real problem at that volume).
 */
export const EVENT_PLATFORM_THRESHOLD = { successRate: 0.95, windowMs: HOUR, minSample: 50 } as const satisfies ThresholdPolicy;

export const DEFAULT_ATTEMPT_TIMEOUT_MS = 5 * SECOND;
/**
 * An attempt must end inside the lane's 60 s push ack deadline with room for Herald's own
 * work (topology.ts LANE_HANDLING_BUDGET_MS): past the deadline Pub/Sub pushes the message
 * again while the first push is still handled, and the delivery may be sent twice.
 */
export const MAX_ATTEMPT_TIMEOUT_MS = 45 * SECOND;

/**
 * Throttle backoff when a policy names none: 10 s doubling up to 5 min, for one hour
 * (docs/policies.md). About 16 throttled attempts fit in the hour.
 */
export const DEFAULT_THROTTLE = {
  backoff: { kind: 'exponential', initialMs: 10 * SECOND, factor: 2, capMs: 5 * MINUTE },
  windowMs: HOUR,
} as const satisfies ThrottlePolicy;

// ---------------------------------------------------------------------------------------
// Presets (seeds 000–003). Each number below is the seed's.

/** Seed 000: 5xx, timeouts, network errors and 408 retried 5, 10, 20 min after the previous attempt; 429 throttles; 404 and 3xx suspend. */
export const EVENT_PLATFORM = {
  name: 'event-platform',
  retryOn: { statuses: ['5xx', 408], timeouts: true, networkErrors: true },
  on429: 'throttle',
  throttle: DEFAULT_THROTTLE,
  suspendOn: [404, '3xx'],
  suspendOnTopicRefusal: true,
  backoff: { kind: 'fixed', delaysMs: [5 * MINUTE, 10 * MINUTE, 20 * MINUTE] },
  measureFrom: 'previous',
  maxAttempts: 4,
  attemptTimeoutMs: DEFAULT_ATTEMPT_TIMEOUT_MS,
  afterLastRetry: 'dead',
  honourRetryAfter: true,
  threshold: EVENT_PLATFORM_THRESHOLD,
} as const satisfies DeliveryPolicy;

/** Seed 001 (Pub/Sub push): every failure retried, 10 s doubling up to 600 s, until 24 h after publication. */
export const EVENTARC = {
  name: 'eventarc',
  retryOn: { statuses: 'any', timeouts: true, networkErrors: true },
  on429: 'retry',
  suspendOn: [],
  backoff: { kind: 'exponential', initialMs: 10 * SECOND, factor: 2, capMs: 600 * SECOND },
  measureFrom: 'previous',
  maxAgeMs: 24 * HOUR,
  attemptTimeoutMs: DEFAULT_ATTEMPT_TIMEOUT_MS,
  afterLastRetry: 'dead',
  honourRetryAfter: true,
} as const satisfies DeliveryPolicy;

/**
 * Seed 002, best-effort aggregation: 403, 408, 409, 429, 500, 502, 503, 504 retried after
 * 15 s, then 30 s. The seed lists response codes only; a timeout or a network error (no
 * response at all) is retried too, like the 408 and 504 it stands for.
 */
export const ADOBE_BEST_EFFORT = {
  name: 'adobe-best-effort',
  retryOn: { statuses: [403, 408, 409, 429, 500, 502, 503, 504], timeouts: true, networkErrors: true },
  on429: 'retry',
  suspendOn: [],
  backoff: { kind: 'fixed', delaysMs: [15 * SECOND, 30 * SECOND] },
  measureFrom: 'previous',
  maxAttempts: 3,
  attemptTimeoutMs: DEFAULT_ATTEMPT_TIMEOUT_MS,
  afterLastRetry: 'dead',
  honourRetryAfter: true,
} as const satisfies DeliveryPolicy;

/**
 * Seed 002, configurable aggregation: 420, 429 and codes greater than 500 (not 500 itself)
 * retried 30 min later. The seed sets no cap; Herald's is 3 retries (4 attempts, dead
 * 90 min after the first), the same count as event-platform. Timeouts and network errors
 * are retried (no response was returned to judge).
 */
export const ADOBE_CONFIGURABLE = {
  name: 'adobe-configurable',
  retryOn: { statuses: [420, 429, { gt: 500 }], timeouts: true, networkErrors: true },
  on429: 'retry',
  suspendOn: [],
  backoff: { kind: 'fixed', delaysMs: [30 * MINUTE, 30 * MINUTE, 30 * MINUTE] },
  measureFrom: 'previous',
  maxAttempts: 4,
  attemptTimeoutMs: DEFAULT_ATTEMPT_TIMEOUT_MS,
  afterLastRetry: 'dead',
  honourRetryAfter: true,
} as const satisfies DeliveryPolicy;

/**
 * Seed 003: every failure retried 5 times, retry x at 2^(3x) s after the ORIGINAL failed
 * attempt (8 s, 64 s, 512 s, 4096 s, 32768 s ≈ 9.1 h); then the destination is
 * deactivated and its events queued. (The seed also says "9 attempts" twice; its schedule,
 * its "up to 5 times" and its "5th and final attempt … under 9.5 hours" agree on 5.)
 */
export const CLOUD_ELEMENTS = {
  name: 'cloud-elements',
  retryOn: { statuses: 'any', timeouts: true, networkErrors: true },
  on429: 'retry',
  suspendOn: [],
  backoff: { kind: 'exponential', initialMs: 8 * SECOND, factor: 8 },
  measureFrom: 'origin',
  maxAttempts: 6,
  attemptTimeoutMs: DEFAULT_ATTEMPT_TIMEOUT_MS,
  afterLastRetry: 'deactivate-and-queue',
  honourRetryAfter: true,
} as const satisfies DeliveryPolicy;

export const POLICY_PRESETS = {
  'event-platform': EVENT_PLATFORM,
  eventarc: EVENTARC,
  'adobe-best-effort': ADOBE_BEST_EFFORT,
  'adobe-configurable': ADOBE_CONFIGURABLE,
  'cloud-elements': CLOUD_ELEMENTS,
} as const satisfies Record<PolicyPresetName, DeliveryPolicy>;

// ---------------------------------------------------------------------------------------
// Validation of a destination's `policy`: a preset name or a custom policy object.

const DAY = 24 * HOUR;
const MAX_DELAY_MS = DAY;
const MAX_AGE_MS = 7 * DAY;
const MAX_ATTEMPTS = 100;

const number = (what: string) =>
  z.number({ error: (i) => (i.input === undefined ? `${what} is required` : `${what} must be a number`) });
/** `why`: what the refusal of a longer one says after the bound. */
const duration = (what: string, max: number, min = 0, why?: string) =>
  number(what)
    .int(`${what} must be a whole number of milliseconds`)
    .min(min, `${what} must be at least ${min} ms`)
    .max(max, `${what} must be at most ${max} ms${why === undefined ? '' : `: ${why}`}`);
/** A strict object's messages: its unknown keys named, or what it must be. */
const objectError = (what: string, shape: string) => (issue: { code?: string; keys?: string[] }) =>
  issue.code === 'unrecognized_keys' ? `${what} has unknown field${issue.keys?.length === 1 ? '' : 's'} ${issue.keys?.join(', ')}` : shape;
const bool = (what: string) => z.boolean({ error: `${what} must be true or false` });

const statusCode = number('a status code').int('a status code must be an integer').min(100, 'a status code must be 100–599').max(599, 'a status code must be 100–599');
const statusRange = z
  .strictObject(
    { gt: statusCode.optional(), gte: statusCode.optional(), lt: statusCode.optional(), lte: statusCode.optional() },
    { error: objectError('a status range', 'a status range is an object with gt, gte, lt or lte') },
  )
  .refine((r) => Object.values(r).some((v) => v !== undefined), 'a status range needs at least one of gt, gte, lt, lte');
const statusRule = z.union([statusCode, z.enum(STATUS_CLASSES), statusRange], {
  error: 'a status rule is a code (408), a class ("5xx") or a range ({"gt": 500})',
});
const statusRules = (what: string) => z.array(statusRule, { error: `${what} must be an array of status rules` }).max(50, `${what} takes at most 50 rules`);

const backoffSchema = (what: string) =>
  z.discriminatedUnion(
    'kind',
    [
      z.strictObject({ kind: z.literal('immediate') }),
      z.strictObject({
        kind: z.literal('fixed'),
        delaysMs: z
          .array(duration(`${what}.delaysMs[]`, MAX_DELAY_MS), { error: (i) => `${what}.delaysMs ${i.input === undefined ? 'is required: ' : 'must be '}an array of delays in ms` })
          .min(1, `${what}.delaysMs needs at least one delay`)
          .max(MAX_ATTEMPTS, `${what}.delaysMs takes at most ${MAX_ATTEMPTS} delays`),
      }),
      z.strictObject({
        kind: z.literal('linear'),
        initialMs: duration(`${what}.initialMs`, MAX_DELAY_MS),
        incrementMs: duration(`${what}.incrementMs`, MAX_DELAY_MS),
        capMs: duration(`${what}.capMs`, MAX_DELAY_MS).optional(),
      }),
      z.strictObject({
        kind: z.literal('exponential'),
        initialMs: duration(`${what}.initialMs`, MAX_DELAY_MS, 1),
        factor: number(`${what}.factor`).min(1, `${what}.factor must be at least 1`).max(16, `${what}.factor must be at most 16`),
        capMs: duration(`${what}.capMs`, MAX_DELAY_MS).optional(),
      }),
    ],
    { error: `${what}.kind must be one of immediate, fixed, linear, exponential` },
  );

/** A custom policy as a destination spec carries it; omitted fields take the defaults shown. */
export const customPolicySchema = z
  .strictObject(
    {
      name: z.literal('custom', { error: 'a custom policy name, if given, must be "custom"' }).default('custom'),
      retryOn: z.strictObject(
        {
          statuses: z.unknown().transform((input, ctx): 'any' | StatusRule[] => {
            if (input === undefined) return reject(ctx, 'retryOn.statuses is required: "any" or an array of status rules');
            return input === 'any' ? 'any' : forward(statusRules('retryOn.statuses'), input, ctx);
          }),
          timeouts: bool('retryOn.timeouts').default(true),
          networkErrors: bool('retryOn.networkErrors').default(true),
        },
        { error: objectError('retryOn', 'retryOn must be an object {statuses, timeouts?, networkErrors?}') },
      ),
      on429: z.enum(['retry', 'throttle'], { error: 'on429 must be "retry" or "throttle"' }).default('retry'),
      throttle: z
        .strictObject(
          { backoff: backoffSchema('throttle.backoff'), windowMs: duration('throttle.windowMs', DAY, 1) },
          { error: objectError('throttle', 'throttle must be an object {backoff, windowMs}') },
        )
        .optional(),
      suspendOn: statusRules('suspendOn').default([]),
      suspendOnTopicRefusal: bool('suspendOnTopicRefusal').default(false),
      backoff: backoffSchema('backoff'),
      measureFrom: z.enum(['previous', 'origin'], { error: 'measureFrom must be "previous" or "origin"' }).default('previous'),
      maxAttempts: number('maxAttempts').int('maxAttempts must be an integer').min(1, 'maxAttempts must be at least 1').max(MAX_ATTEMPTS, `maxAttempts must be at most ${MAX_ATTEMPTS}`).optional(),
      maxAgeMs: duration('maxAgeMs', MAX_AGE_MS, 1).optional(),
      attemptTimeoutMs: duration('attemptTimeoutMs', MAX_ATTEMPT_TIMEOUT_MS, 100, "an attempt must end inside the lane's 60 s push deadline, with room for Herald's own work").default(DEFAULT_ATTEMPT_TIMEOUT_MS),
      afterLastRetry: z.enum(['dead', 'deactivate-and-queue'], { error: 'afterLastRetry must be "dead" or "deactivate-and-queue"' }).default('dead'),
      honourRetryAfter: bool('honourRetryAfter').default(true),
      threshold: z
        .strictObject(
          {
            successRate: number('threshold.successRate').gt(0, 'threshold.successRate must be above 0').max(1, 'threshold.successRate must be at most 1'),
            windowMs: duration('threshold.windowMs', DAY, 1000),
            minSample: number('threshold.minSample').int('threshold.minSample must be an integer').min(1, 'threshold.minSample must be at least 1').max(1_000_000, 'threshold.minSample must be at most 1000000'),
          },
          { error: objectError('threshold', 'threshold must be an object {successRate, windowMs, minSample}') },
        )
        .optional(),
    },
    { error: objectError('a custom policy', 'a custom policy must be a JSON object') },
  )
  .refine((p) => p.maxAttempts !== undefined || p.maxAgeMs !== undefined, {
    message: 'give maxAttempts or maxAgeMs (or both): a policy must end',
    path: ['maxAttempts'],
  })
  .refine((p) => p.backoff.kind !== 'immediate' || p.maxAttempts !== undefined, {
    message: 'an immediate backoff needs maxAttempts, or it would retry in a tight loop',
    path: ['maxAttempts'],
  })
  .refine((p) => p.throttle === undefined || p.on429 === 'throttle', {
    message: 'throttle applies only with on429: "throttle"',
    path: ['throttle'],
  });

// The custom shape's output is a DeliveryPolicy (compile-time check).
const _customIsPolicy = (p: z.output<typeof customPolicySchema>): DeliveryPolicy => p;

const presetNameSchema = z.enum(POLICY_PRESET_NAMES, { error: `policy must be one of ${POLICY_PRESET_NAMES.join(', ')} or a custom policy object` });

export type PolicySpec = PolicyPresetName | z.output<typeof customPolicySchema>;

/**
 * A destination's `policy`: a preset name or a custom policy object. The input's type
 * picks the schema, so a bad name or a bad field gets its own message, not "invalid union".
 */
export const policySpecSchema = z.unknown().transform((input, ctx): PolicySpec => {
  if (typeof input === 'string') return forward(presetNameSchema, input, ctx);
  if (isPlainObject(input)) return forward(customPolicySchema, input, ctx);
  return reject(ctx, `policy must be a preset name (${POLICY_PRESET_NAMES.join(', ')}) or a custom policy object`);
});

/** Parses `input` with `schema` inside a transform, passing its issues on with their paths. */
function forward<T>(schema: z.ZodType<T, unknown>, input: unknown, ctx: z.RefinementCtx): T {
  const parsed = schema.safeParse(input);
  if (parsed.success) return parsed.data;
  for (const issue of parsed.error.issues) ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path });
  return z.NEVER;
}

function reject(ctx: z.RefinementCtx, message: string): never {
  ctx.addIssue({ code: 'custom', message });
  return z.NEVER;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function isPolicyPresetName(name: string): name is PolicyPresetName {
  return Object.prototype.hasOwnProperty.call(POLICY_PRESETS, name);
}

/** The policy a (validated) spec stands for. */
export function resolvePolicy(spec: PolicySpec): DeliveryPolicy {
  return typeof spec === 'string' ? POLICY_PRESETS[spec] : spec;
}

// ---------------------------------------------------------------------------------------
// Pure helpers over the data.

/** Delay of retry n (1-based) under a backoff, in ms. */
export function backoffDelay(backoff: Backoff, n: number): number {
  const i = Math.max(1, Math.floor(n));
  switch (backoff.kind) {
    case 'immediate':
      return 0;
    case 'fixed':
      return backoff.delaysMs[Math.min(i, backoff.delaysMs.length) - 1] ?? 0;
    case 'linear':
      return capped(backoff.initialMs + (i - 1) * backoff.incrementMs, backoff.capMs);
    case 'exponential':
      return capped(backoff.initialMs * backoff.factor ** (i - 1), backoff.capMs);
  }
}

function capped(ms: number, cap: number | undefined): number {
  return cap === undefined ? ms : Math.min(ms, cap);
}

/** The throttle rules in force: the policy's own, DEFAULT_THROTTLE if it throttles without naming any. */
export function throttleOf(policy: DeliveryPolicy): ThrottlePolicy | undefined {
  return policy.on429 === 'throttle' ? (policy.throttle ?? DEFAULT_THROTTLE) : policy.throttle;
}

export function matchesStatus(rules: 'any' | readonly StatusRule[], status: number): boolean {
  if (rules === 'any') return true;
  return rules.some((rule) => {
    if (typeof rule === 'number') return rule === status;
    if (typeof rule === 'string') return Math.floor(status / 100) === Number(rule[0]);
    return (
      (rule.gt === undefined || status > rule.gt) &&
      (rule.gte === undefined || status >= rule.gte) &&
      (rule.lt === undefined || status < rule.lt) &&
      (rule.lte === undefined || status <= rule.lte)
    );
  });
}

/**
 * HERALD_TIME_SCALE: the policy with every delay and window divided by `factor` (retry
 * and throttle delays, the throttle window, max age); attempt timeouts are not scaled.
 * Scaling is the caller's choice, so decide() never needs to know about it.
 */
export function scalePolicy(policy: DeliveryPolicy, factor: number): DeliveryPolicy {
  if (!Number.isFinite(factor) || factor <= 0) throw new RangeError(`time scale must be a positive number, got ${factor}`);
  if (factor === 1) return policy;
  const s = (ms: number) => ms / factor;
  const scaled: DeliveryPolicy = { ...policy, backoff: scaleBackoff(policy.backoff, s) };
  const throttle = throttleOf(policy);
  const withThrottle = throttle
    ? { ...scaled, throttle: { backoff: scaleBackoff(throttle.backoff, s), windowMs: s(throttle.windowMs) } }
    : scaled;
  const withThreshold = policy.threshold ? { ...withThrottle, threshold: { ...policy.threshold, windowMs: s(policy.threshold.windowMs) } } : withThrottle;
  return policy.maxAgeMs === undefined ? withThreshold : { ...withThreshold, maxAgeMs: s(policy.maxAgeMs) };
}

function scaleBackoff(backoff: Backoff, s: (ms: number) => number): Backoff {
  switch (backoff.kind) {
    case 'immediate':
      return backoff;
    case 'fixed':
      return { kind: 'fixed', delaysMs: backoff.delaysMs.map(s) };
    case 'linear':
      return { ...backoff, initialMs: s(backoff.initialMs), incrementMs: s(backoff.incrementMs), ...(backoff.capMs === undefined ? {} : { capMs: s(backoff.capMs) }) };
    case 'exponential':
      return { ...backoff, initialMs: s(backoff.initialMs), ...(backoff.capMs === undefined ? {} : { capMs: s(backoff.capMs) }) };
  }
}
