/**
 * Delivery policies as data (docs/policies.md): which failures are retried, on
 * what schedule, for how long, and what happens after the last retry. The five presets
 * are named values taken from the seeds (policy-presets.ts); a destination may also carry a custom policy of
 * the same shape (policy.ts). `decide()` (retry-decision.ts) is the only reader of these rules,
 * and holds the helpers that read them (backoffDelay, matchesStatus).
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
// Pure helpers over the data.

/** The throttle rules in force: the policy's own, DEFAULT_THROTTLE if it throttles without naming any. */
export function throttleOf(policy: DeliveryPolicy): ThrottlePolicy | undefined {
  return policy.on429 === 'throttle' ? (policy.throttle ?? DEFAULT_THROTTLE) : policy.throttle;
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
