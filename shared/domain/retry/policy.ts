import { z } from 'zod';
import { POLICY_PRESET_NAMES, PolicyPresetName } from './policy-preset-names';
import { DEFAULT_ATTEMPT_TIMEOUT_MS, DeliveryPolicy, HOUR, MAX_ATTEMPT_TIMEOUT_MS, STATUS_CLASSES, StatusRule } from './delivery-policy';
import { POLICY_PRESETS } from './policy-presets';


/** Validation of a destination's `policy`: a preset name or a custom policy object. */

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

/** The policy a (validated) spec stands for. */
export function resolvePolicy(spec: PolicySpec): DeliveryPolicy {
  return typeof spec === 'string' ? POLICY_PRESETS[spec] : spec;
}
