import { AttemptResult, isSuccess } from './delivery';
import { Backoff, DeliveryPolicy, StatusRule, throttleOf } from './delivery-policy';

/**
 * What a delivery policy makes of one attempt's result: the one pure function behind the
 * retry engine and `herald simulate`. No clock reads: `now` is when this attempt was made
 * (the schedule is measured from it); scaling by HERALD_TIME_SCALE is done on the policy
 * beforehand (scalePolicy), so this function never sees it.
 */

/** The attempts made before this one, as a DeliveryRecord keeps them. */
export interface AttemptHistory {
  /** Attempts made before this one, throttled ones included. */
  attempts: number;
  /** How many of those were 429s throttled without consuming a retry. */
  throttled: number;
  /** When the first attempt was made: origin of `measureFrom: 'origin'` and of the throttle window. Absent before it. */
  firstAttemptAt?: Date;
}

export const NO_HISTORY: AttemptHistory = Object.freeze({ attempts: 0, throttled: 0 });

/** Why an event dies. */
export type DeadCause = 'not-retried' | 'retries-exhausted' | 'max-age';
/** Why the destination is suspended (deactivated); the event itself is then QUEUED. */
export type SuspendCause = 'gone' | 'criteria' | 'retries-exhausted' | 'max-age' | 'blocked-address' | 'topic-not-allowed';

export type Decision =
  | { kind: 'delivered' }
  /** Attempt again at `at`; `retry` is the retry's number (1 = the first retry). */
  | { kind: 'retry'; at: Date; delayMs: number; retry: number; reason: string }
  /** 429 while throttling: attempt again at `at` without consuming a retry; `throttle` counts them. */
  | { kind: 'throttle'; at: Date; delayMs: number; throttle: number; reason: string }
  /** Terminal for the event: DEAD, onto the dead-letter topic. */
  | { kind: 'dead'; cause: DeadCause; reason: string }
  /** Terminal for the destination: it is suspended and this event is QUEUED. */
  | { kind: 'suspend'; cause: SuspendCause; reason: string }
  /** failureMode "queue": the failed event is QUEUED for the operator instead of retried or dead. */
  | { kind: 'queue'; reason: string };

export type DecisionKind = Decision['kind'];

/** Standard Webhooks: 410 Gone disables the endpoint under every policy. */
export const GONE = 410;

export function decide(
  policy: DeliveryPolicy,
  history: AttemptHistory,
  result: AttemptResult,
  now: Date,
  eventPublishedAt: Date,
): Decision {
  if (isSuccess(result)) return { kind: 'delivered' };
  const what = label(result);
  const status = result.kind === 'response' ? result.status : undefined;
  if (status === GONE) return { kind: 'suspend', cause: 'gone', reason: `${what} Gone: the receiver asked not to be sent more events` };
  // Under every policy: retrying would only probe the same refused address again; suspended, its events wait QUEUED.
  if (result.kind === 'blocked') return { kind: 'suspend', cause: 'blocked-address', reason: `${what}: ${result.error}` };
  // Likewise: until the operator allows the topic again, every attempt would be refused the same way.
  if (result.kind === 'topic' && result.problem === 'not-allowed') return { kind: 'suspend', cause: 'topic-not-allowed', reason: `${what}: ${result.error}` };
  if (result.kind === 'topic' && policy.suspendOnTopicRefusal) {
    const why = result.problem === 'permission-denied' ? 'Herald is not allowed to publish to the topic' : 'the topic does not exist';
    return { kind: 'suspend', cause: 'criteria', reason: `${what}: ${why}; this suspends the destination at once under ${policy.name}` };
  }
  if (status !== undefined && matchesStatus(policy.suspendOn, status)) {
    return { kind: 'suspend', cause: 'criteria', reason: `${what} suspends the destination at once under ${policy.name}` };
  }

  const t = now.getTime();
  const origin = history.firstAttemptAt?.getTime() ?? t;
  const deadline = policy.maxAgeMs === undefined ? undefined : eventPublishedAt.getTime() + policy.maxAgeMs;
  const throttle = throttleOf(policy);

  if (status === 429 && policy.on429 === 'throttle' && throttle !== undefined) {
    if (t - origin <= throttle.windowMs) {
      const n = history.throttled + 1;
      const wait = withRetryAfter(policy, result, backoffDelay(throttle.backoff, n), now);
      const at = t + wait.ms;
      if (deadline !== undefined && at >= deadline) return exhausted(policy, 'max-age', `${what} while throttled: the event is ${duration(policy.maxAgeMs ?? 0)} old by then`);
      return {
        kind: 'throttle',
        at: new Date(at),
        delayMs: wait.ms,
        throttle: n,
        reason: `${what} throttled (${n}), no retry used: again in ${duration(wait.ms)}${wait.note}`,
      };
    }
    // Undelivered past the window: from now on a 429 is a failure like any other (docs/policies.md).
  } else if (!isRetried(policy, result)) {
    return { kind: 'dead', cause: 'not-retried', reason: `${what} is not retried under ${policy.name}` };
  }

  const attempt = history.attempts - history.throttled + 1;
  if (policy.maxAttempts !== undefined && attempt >= policy.maxAttempts) {
    const retries = policy.maxAttempts - 1;
    return exhausted(policy, 'retries-exhausted', `${what} on attempt ${attempt}: ${policy.name} allows ${retries} ${retries === 1 ? 'retry' : 'retries'}`);
  }
  const retry = attempt;
  const from = policy.measureFrom === 'origin' ? origin : t;
  const scheduled = Math.max(0, from + backoffDelay(policy.backoff, retry) - t);
  const wait = withRetryAfter(policy, result, scheduled, now);
  const at = t + wait.ms;
  if (deadline !== undefined && at >= deadline) {
    return exhausted(policy, 'max-age', `${what}: retry ${retry} would come ${duration(at - eventPublishedAt.getTime())} after publication, past the ${duration(policy.maxAgeMs ?? 0)} limit`);
  }
  const of = policy.maxAttempts === undefined ? '' : ` of ${policy.maxAttempts - 1}`;
  return { kind: 'retry', at: new Date(at), delayMs: wait.ms, retry, reason: `${what}: retry ${retry}${of} in ${duration(wait.ms)}${wait.note}` };
}

/**
 * A destination in failureMode "queue" (docs/accounts.md) keeps a failed event for retrieval
 * instead of retrying it or letting it die; throttling and suspension are unchanged.
 */
export function withFailureMode(decision: Decision, failureMode: 'retry' | 'queue'): Decision {
  if (failureMode !== 'queue' || (decision.kind !== 'retry' && decision.kind !== 'dead')) return decision;
  const failure = decision.reason.replace(/: retry \d+.*$/, '');
  return { kind: 'queue', reason: `${failure}; queued (failureMode queue)` };
}

/** The history after this attempt, given what decide() made of it. */
export function afterAttempt(history: AttemptHistory, decision: Decision, now: Date): AttemptHistory {
  return {
    attempts: history.attempts + 1,
    throttled: history.throttled + (decision.kind === 'throttle' ? 1 : 0),
    firstAttemptAt: history.firstAttemptAt ?? now,
  };
}

function isRetried(policy: DeliveryPolicy, result: AttemptResult): boolean {
  switch (result.kind) {
    case 'response':
      return matchesStatus(policy.retryOn.statuses, result.status);
    case 'timeout':
      return policy.retryOn.timeouts;
    case 'network':
    case 'topic':
      return policy.retryOn.networkErrors;
    case 'published':
    case 'blocked':
      return false;
  }
}

function exhausted(policy: DeliveryPolicy, cause: 'retries-exhausted' | 'max-age', reason: string): Decision {
  return policy.afterLastRetry === 'deactivate-and-queue'
    ? { kind: 'suspend', cause, reason: `${reason}; the destination is deactivated and its events queued` }
    : { kind: 'dead', cause, reason };
}

/** Retry-After on 429/503 moves a retry within 1×–2× its scheduled delay. */
function withRetryAfter(policy: DeliveryPolicy, result: AttemptResult, scheduledMs: number, now: Date): { ms: number; note: string } {
  if (!policy.honourRetryAfter || result.kind !== 'response' || (result.status !== 429 && result.status !== 503) || result.retryAfter === undefined) {
    return { ms: scheduledMs, note: '' };
  }
  const asked = parseRetryAfter(result.retryAfter, now);
  if (asked === undefined) return { ms: scheduledMs, note: '' };
  const ms = Math.min(Math.max(asked, scheduledMs), 2 * scheduledMs);
  return { ms, note: ms === asked ? ' (Retry-After)' : ` (Retry-After ${duration(asked)} clamped to 1×–2× the scheduled ${duration(scheduledMs)})` };
}

/** Retry-After as delay-seconds or an HTTP-date, in ms from `now` (never negative); undefined if unreadable. */
export function parseRetryAfter(value: string, now: Date): number | undefined {
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  if (!/[a-z]/i.test(text)) return undefined;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now.getTime());
}

function label(result: AttemptResult): string {
  switch (result.kind) {
    case 'response':
      return `HTTP ${result.status}`;
    case 'timeout':
      return `timeout after ${result.timeoutMs} ms`;
    case 'network':
      return `network error (${result.error})`;
    case 'published':
      return 'Pub/Sub published';
    case 'topic':
      return result.problem === 'not-allowed' ? 'topic not allowed' : `Pub/Sub ${result.problem}`;
    case 'blocked':
      return `blocked address (${result.addressClass})`;
  }
}

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

/** Whether a status matches the rules: one code, a class (`"5xx"`), or a range. */
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

/** 32768000 → "9 h 6 min 8 s". */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  let s = Math.round(ms / 1000);
  const parts: string[] = [];
  for (const [unit, size] of [['d', 86400], ['h', 3600], ['min', 60]] as const) {
    if (s >= size) {
      parts.push(`${Math.floor(s / size)} ${unit}`);
      s %= size;
    }
  }
  if (s > 0 || parts.length === 0) parts.push(`${s} s`);
  return parts.join(' ');
}
