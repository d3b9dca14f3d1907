import { PolicyPresetName } from './policy-preset-names';
import { DEFAULT_ATTEMPT_TIMEOUT_MS, DEFAULT_THROTTLE, DeliveryPolicy, HOUR, MINUTE, SECOND, ThresholdPolicy } from './delivery-policy';

/** The delivery policy presets (seeds 000–003). Each number below is the seed's. */

/**
 * Seed 000: below 95 % over the last rolling hour. The seed names no sample size; 50
 * attempts in the hour keeps a quiet destination from being suspended for two or three
 * failures (at 3 failures in 50, the rate is 94 %: a real problem at that volume).
 */
export const EVENT_PLATFORM_THRESHOLD = { successRate: 0.95, windowMs: HOUR, minSample: 50 } as const satisfies ThresholdPolicy;

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

export function isPolicyPresetName(name: string): name is PolicyPresetName {
  return Object.prototype.hasOwnProperty.call(POLICY_PRESETS, name);
}
