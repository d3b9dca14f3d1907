import { AttemptResult, DeliveryStatus } from './delivery';
import { DeliveryState, historyOf, transition, Transition } from './delivery-state';
import { DeliveryPolicy, scalePolicy } from './delivery-policy';
import { decide, Decision, DecisionKind } from './retry-decision';

/**
 * `herald simulate`: plays a policy against a scripted receiver in virtual time, through
 * the same decide() and state machine the retry engine uses. Each attempt takes no
 * virtual time; `at` is seconds from the first attempt. When the script runs out the
 * receiver keeps giving its last answer (a receiver that is down stays down), so `500`
 * alone plays the whole schedule.
 */

export type SimulatedResponse =
  | { kind: 'status'; status: number; retryAfter?: string }
  | { kind: 'timeout' }
  | { kind: 'network' };

export interface SimulateOptions {
  /** Seconds from the event's publication to the first attempt (default 0); max-age limits count from publication. */
  publishedSecondsBefore?: number;
  /** HERALD_TIME_SCALE: the policy's delays and windows divided by this (default 1). */
  timeScale?: number;
  /** Safety bound on attempts played (default 1000); the end state is then PENDING. */
  attemptLimit?: number;
}

export interface SimulationRow {
  attempt: number;
  /** Seconds from the first attempt. */
  at: number;
  status: number | 'timeout' | 'network';
  outcome: DecisionKind;
  /** Seconds from the first attempt of the next attempt, after retry or throttle. */
  next?: number;
  reason?: string;
}

export interface SimulationEnd {
  state: DeliveryStatus;
  destination: 'active' | 'suspended';
  /** Attempts made, throttled ones included. */
  attempts: number;
  /** Of those, 429s throttled without consuming a retry. */
  throttled: number;
  /** Seconds from the first attempt of the last one. */
  at: number;
  reason: string;
}

export interface Simulation {
  policy: string;
  rows: SimulationRow[];
  end: SimulationEnd;
}

export const DEFAULT_ATTEMPT_LIMIT = 1000;
const START = new Date(Date.UTC(2025, 0, 1));

export function simulate(policy: DeliveryPolicy, responses: readonly SimulatedResponse[], options: SimulateOptions = {}): Simulation {
  if (responses.length === 0) throw new RangeError('simulate needs at least one response');
  const scaled = scalePolicy(policy, options.timeScale ?? 1);
  const limit = options.attemptLimit ?? DEFAULT_ATTEMPT_LIMIT;
  const publishedAt = new Date(START.getTime() - (options.publishedSecondsBefore ?? 0) * 1000);
  const seconds = (d: Date) => Math.round(d.getTime() - START.getTime()) / 1000;

  let state: DeliveryState = { status: 'PENDING', attempts: 0, availableAt: START.toISOString() };
  const rows: SimulationRow[] = [];
  let now = START;
  let last: { decision: Decision; at: Date } | undefined;

  while (rows.length < limit) {
    state = apply(state, { type: 'claim', now, claimTtlMs: scaled.attemptTimeoutMs });
    const response = responses[Math.min(rows.length, responses.length - 1)]!;
    const result = toResult(response, scaled);
    const decision = decide(scaled, historyOf(state), result, now, publishedAt);
    state = apply(state, { type: 'attempted', at: now, result, decision });
    const row: SimulationRow = {
      attempt: rows.length + 1,
      at: seconds(now),
      status: response.kind === 'status' ? response.status : response.kind,
      outcome: decision.kind,
    };
    if (decision.kind === 'retry' || decision.kind === 'throttle') row.next = seconds(decision.at);
    if (decision.kind !== 'delivered') row.reason = decision.reason;
    rows.push(row);
    last = { decision, at: now };
    if (decision.kind !== 'retry' && decision.kind !== 'throttle') break;
    now = decision.at;
  }

  const end: SimulationEnd = {
    state: state.status,
    destination: last?.decision.kind === 'suspend' ? 'suspended' : 'active',
    attempts: state.attempts,
    throttled: state.throttled ?? 0,
    at: last ? seconds(last.at) : 0,
    reason: endReason(state.status, last?.decision, limit),
  };
  return { policy: policy.name, rows, end };
}

function endReason(status: DeliveryStatus, decision: Decision | undefined, limit: number): string {
  if (status === 'DELIVERED') return 'delivered';
  if (decision && (decision.kind === 'dead' || decision.kind === 'suspend')) return `${decision.cause}: ${decision.reason}`;
  return `simulation stopped after ${limit} attempts`;
}

function apply(state: DeliveryState, t: Transition): DeliveryState {
  const next = transition(state, t);
  // The simulation only makes valid transitions; an error here is a bug in Herald.
  if (!next.ok) throw new Error(`simulate: ${next.error.message}`);
  return next.state;
}

function toResult(response: SimulatedResponse, policy: DeliveryPolicy): AttemptResult {
  switch (response.kind) {
    case 'status':
      return {
        kind: 'response',
        status: response.status,
        durationMs: 0,
        bodyExcerpt: '',
        ...(response.retryAfter === undefined ? {} : { retryAfter: response.retryAfter }),
      };
    case 'timeout':
      return { kind: 'timeout', durationMs: policy.attemptTimeoutMs, timeoutMs: policy.attemptTimeoutMs };
    case 'network':
      return { kind: 'network', durationMs: 0, error: 'connection refused (simulated)' };
  }
}

/**
 * The CLI's `--responses`: comma-separated `200`, `500`, `timeout`, `network`, or
 * `STATUS:SECONDS` for a response with `Retry-After: SECONDS` (e.g. `503:120`).
 */
export function parseResponses(text: string): { ok: true; value: SimulatedResponse[] } | { ok: false; error: string } {
  const items = text.split(',').map((s) => s.trim());
  if (items.length === 0 || items.every((s) => s === '')) return { ok: false, error: 'give at least one response, e.g. 500,500,429,200' };
  const value: SimulatedResponse[] = [];
  for (const [i, item] of items.entries()) {
    const m = /^(\d{3})(?::(\d{1,6}))?$/.exec(item);
    if (item === 'timeout' || item === 'network') value.push({ kind: item });
    else if (m && Number(m[1]) >= 200 && Number(m[1]) <= 599) {
      value.push(m[2] === undefined ? { kind: 'status', status: Number(m[1]) } : { kind: 'status', status: Number(m[1]), retryAfter: m[2] });
    } else {
      return { ok: false, error: `response ${i + 1} "${item}" must be a status 200–599 (optionally :RETRY_AFTER_SECONDS), timeout or network` };
    }
  }
  return { ok: true, value };
}
