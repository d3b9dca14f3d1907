import { LastError } from '../retry/delivery';
import { Destination } from './destination';
import { RateSummary } from '../stats/success-rate';
import { Suspension, SuspensionCause, SuspensionNotification } from '../retry/suspension-record';

/**
 * A destination's suspension (docs/suspension.md) and deactivation (docs/accounts.md) as pure functions of
 * the stored destination: while suspended nothing is attempted and its events are QUEUED,
 * until an operator reactivates it.
 */

// The record a suspension leaves on its destination: suspension-record.ts.
export type { Suspension, SuspensionCause, SuspensionNotification } from '../retry/suspension-record';

export interface SuspendRequest {
  cause: SuspensionCause;
  reason: string;
  at: Date;
  lastError?: LastError;
  /** The destination's rolling hour, as counted so far. */
  window: RateSummary;
  /** Who suspended it, for a suspension by hand (cause `manual`). */
  by?: string;
}

/** The destination suspended, or undefined if it already was (so exactly one notification goes out). */
export function suspend(destination: Destination, request: SuspendRequest): Destination | undefined {
  if (destination.status === 'suspended') return undefined;
  const at = request.at.toISOString();
  const recentErrors = request.lastError ? [request.lastError, ...request.window.recentErrors.filter((e) => e.at !== request.lastError!.at)].slice(0, 5) : request.window.recentErrors;
  const base = {
    cause: request.cause,
    reason: request.reason,
    at,
    ...(request.by === undefined ? {} : { by: request.by }),
    attempts1h: request.window.attempts,
    ...(request.window.successRate === undefined ? {} : { successRate1h: request.window.successRate }),
    recentErrors,
  };
  const suspension: Suspension = {
    ...base,
    ...(request.lastError ? { lastError: request.lastError } : {}),
    notification: notificationFor(destination, base),
  };
  // A warning ends with the suspension it warned of: after reactivation a new crossing is announced again.
  const { failing: _warned, ...rest } = destination;
  return { ...rest, status: 'suspended', suspension, updatedAt: at };
}

/** The longest reason a suspension by hand may give. */
export const MANUAL_REASON_MAX = 200;

export interface ManualSuspendRequest {
  /** The caller, as the audit log names it (`admin`, `key:<id>`, `portal:<session>`). */
  by: string;
  /** Why, in the caller's words (at most MANUAL_REASON_MAX characters); absent: none given. */
  reason?: string;
  /** The destination's rolling hour, as counted so far. */
  window: RateSummary;
}

export type ManualSuspendResult = { ok: true; destination: Destination } | { ok: false; code: 'already-suspended'; message: string };

/**
 * A suspension by hand: the same state an automatic one leaves (status suspended, its events
 * QUEUED until reactivate undoes it), with cause `manual` and who did it. Refused when the
 * destination already is suspended (the suspension it has stands). `clock` says when.
 */
export function suspendManually(destination: Destination, request: ManualSuspendRequest, clock: { now(): Date }): ManualSuspendResult {
  if (destination.status === 'suspended') {
    const s = destination.suspension;
    return {
      ok: false,
      code: 'already-suspended',
      message: `destination ${JSON.stringify(destination.id)} is already suspended${s ? ` since ${s.at} (${s.cause}): ${s.reason}` : ''}; reactivate it with POST /admin/destinations/${destination.id}/reactivate`,
    };
  }
  const given = request.reason?.trim();
  const reason = given ? given.slice(0, MANUAL_REASON_MAX) : `suspended by hand by ${request.by}`;
  const suspended = suspend(destination, { cause: 'manual', reason, at: clock.now(), window: request.window, by: request.by })!;
  return { ok: true, destination: suspended };
}

/** Why an event of a suspended destination is QUEUED instead of attempted. */
export function queuedBecauseSuspended(destination: Pick<Destination, 'suspension'>): string {
  return `destination suspended: ${destination.suspension?.reason ?? 'suspended'}`;
}

/** The destination active again, or undefined if it was not suspended. */
export function reactivate(destination: Destination, now: Date): Destination | undefined {
  if (destination.status !== 'suspended') return undefined;
  const { suspension: _gone, failing: _warned, ...rest } = destination;
  const at = now.toISOString();
  return { ...rest, status: 'active', reactivatedAt: at, updatedAt: at };
}

const CAUSE_TEXT: Record<SuspensionCause, string> = {
  gone: 'the endpoint answered 410 Gone',
  criteria: 'the endpoint gave an answer that suspends at once',
  'retries-exhausted': 'an event failed its last retry (the policy deactivates the destination then)',
  'max-age': 'an event ran out of time (the policy deactivates the destination then)',
  'blocked-address': 'its host resolved to an address Herald may not connect to (private, loopback, link-local or metadata)',
  'topic-not-allowed': "its topic is not among the topics its account may publish to (the operator's allowedTopics), or is named like one of Herald's own",
  threshold: 'its success rate fell below the threshold',
  manual: 'it was suspended by hand',
};

function notificationFor(destination: Destination, s: Omit<Suspension, 'notification' | 'lastError'>): SuspensionNotification {
  const target = destination.url ?? destination.topic ?? '(no target)';
  const rate = s.successRate1h === undefined ? 'no attempts counted' : `${(s.successRate1h * 100).toFixed(1)} %`;
  const api = `POST /admin/destinations/${destination.id}/reactivate`;
  const cli = `herald destinations reactivate ${destination.id}`;
  const text = [
    `Herald suspended the destination "${destination.id}" (${target}) at ${s.at}: ${CAUSE_TEXT[s.cause]}${s.by === undefined ? '' : ` by ${s.by}`}.`,
    '',
    `Reason: ${s.reason}`,
    `Success rate over the last hour: ${rate} (${s.attempts1h} attempts).`,
    '',
    'Recent errors:',
    ...(s.recentErrors.length ? s.recentErrors.map((e) => `  ${e.at}  ${e.error}${e.bodyExcerpt ? ` — ${e.bodyExcerpt.slice(0, 200)}` : ''}`) : ['  (none recorded)']),
    '',
    'While it is suspended no event is sent to it: its events are QUEUED, none is lost.',
    `Once the endpoint is fixed, reactivate it and its queued events are delivered: ${cli} (or ${api}).`,
  ].join('\n');
  return {
    type: 'herald.destination.suspended',
    destinationId: destination.id,
    ...(destination.technicalEmail ? { to: destination.technicalEmail } : {}),
    subject: `[Herald] destination ${destination.id} suspended: ${s.reason}`.slice(0, 200),
    text,
    reason: s.reason,
    cause: s.cause,
    ...(s.by === undefined ? {} : { by: s.by }),
    suspendedAt: s.at,
    attempts1h: s.attempts1h,
    ...(s.successRate1h === undefined ? {} : { successRate1h: s.successRate1h }),
    recentErrors: s.recentErrors,
    reactivate: { api, cli },
  };
}
