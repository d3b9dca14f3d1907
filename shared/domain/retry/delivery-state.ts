import { AttemptResult, DeliveryRecord, DeliveryStatus, describeFailure, isSuccess } from './delivery';
import { AttemptHistory, Decision } from './retry-decision';
import { AttemptDetail, withAttempt } from './attempt-detail';

/**
 * Seed 004's state machine for one (event, destination) delivery, as a pure transition
 * function: PENDING → IN_FLIGHT (claim) → DELIVERED | PENDING (retry, later availableAt)
 * | DEAD | QUEUED; PENDING | IN_FLIGHT → QUEUED (destination suspended); PENDING | IN_FLIGHT →
 * DELIVERED (a redelivered push's send succeeded); QUEUED | DEAD → PENDING
 * (operator redelivery / replay). An invalid transition is a returned error, never a throw.
 */

/** The part of a DeliveryRecord the state machine reads and writes. */
export type DeliveryState = Pick<
  DeliveryRecord,
  | 'status'
  | 'attempts'
  | 'throttled'
  | 'reason'
  | 'lastError'
  | 'attemptLog'
  | 'availableAt'
  | 'rateDeferred'
  | 'claimedAt'
  | 'firstAttemptAt'
  | 'lastAttemptAt'
  | 'deliveredAt'
  | 'deadLetterDueAt'
  | 'order'
>;

export type Transition =
  /**
   * Take a due PENDING delivery, or one whose IN_FLIGHT claim is older than claimTtlMs. `early`:
   * rate control brings a rate-deferred delivery forward (turns of its destination go unused),
   * before its availableAt — never one waiting for a retry's time.
   */
  | { type: 'claim'; now: Date; claimTtlMs: number; early?: boolean }
  /** The claimed attempt, made at `at`, came to `result`, which decide() judged `decision`; `detail` is kept in attemptLog. */
  | { type: 'attempted'; at: Date; result: AttemptResult; decision: Decision; detail?: AttemptDetail }
  /**
   * A lane message Pub/Sub brought again was sent without a claim (no read on a first push, app/delivery/first-attempt.ts)
   * while the delivery waited for its retry (PENDING) or its claimed retry ran (IN_FLIGHT), and the
   * destination took it: DELIVERED as a claimed retry's success makes it (the attempt counted, the
   * claim and the wait cleared). Only a success: a failed send leaves the delivery to its schedule.
   */
  | { type: 'delivered-unclaimed'; at: Date; result: AttemptResult; detail?: AttemptDetail }
  /** The message a claim sent reached `deliver`: the attempt starts, renewing the claim if it is still `claimedAt`. */
  | { type: 'start'; now: Date; claimedAt: string }
  /** The delivery cannot be attempted any more (its destination was deleted): DEAD with `reason`. */
  | { type: 'abandon'; reason: string; now: Date }
  /** Hold a PENDING delivery, or one claimed for an attempt not made (its destination is suspended). */
  | { type: 'queue'; now: Date; reason: string }
  /** Rate control has no slot soon enough: a claimed delivery waits, unattempted, until `until`. */
  | { type: 'defer'; until: Date }
  /**
   * Herald itself was overloaded (its own Pub/Sub or Firestore answered UNAVAILABLE, …): the
   * claimed delivery waits until `until` with no attempt counted against its destination.
   */
  | { type: 'back-off'; until: Date }
  /** A DEAD delivery's dead letter is on the dead-letter topic: nothing is owed any more. */
  | { type: 'dead-lettered' }
  /** Operator: a QUEUED or DEAD delivery starts over (fresh retry budget), due at once. */
  | { type: 'redeliver'; now: Date };

export type TransitionType = Transition['type'];

export type TransitionErrorCode =
  /** The transition does not leave this state. */
  | 'invalid-transition'
  /** A PENDING delivery claimed before its availableAt. */
  | 'not-due'
  /** An IN_FLIGHT delivery whose claim has not expired. */
  | 'claim-held'
  /** A start whose claim was taken over (expired and claimed again) or settled meanwhile. */
  | 'claim-lost'
  /** A decision that contradicts the result (delivered without a 2xx, or the reverse). */
  | 'inconsistent-decision';

export interface TransitionError {
  code: TransitionErrorCode;
  from: DeliveryStatus;
  transition: TransitionType;
  message: string;
}

export type TransitionResult<S> = { ok: true; state: S } | { ok: false; error: TransitionError };

/** How long a redelivered ordered delivery waits before the pump places it again: redeliveries within it are placed together. */
export const REDELIVERED_ORDER_GRACE_MS = 2_000;

/** Where each decision leaves the delivery. */
export const STATUS_AFTER: Record<Decision['kind'], DeliveryStatus> = {
  delivered: 'DELIVERED',
  retry: 'PENDING',
  throttle: 'PENDING',
  dead: 'DEAD',
  suspend: 'QUEUED',
  queue: 'QUEUED',
};

export function transition<S extends DeliveryState>(state: S, t: Transition): TransitionResult<S> {
  const fail = (code: TransitionErrorCode, message: string): TransitionResult<S> => ({
    ok: false,
    error: { code, from: state.status, transition: t.type, message },
  });
  const invalid = () => fail('invalid-transition', `cannot ${t.type} a ${state.status} delivery`);

  switch (t.type) {
    case 'claim': {
      const now = t.now.toISOString();
      if (state.status === 'PENDING') {
        const mayBeEarly = t.early === true && state.rateDeferred === true;
        if (state.availableAt !== undefined && state.availableAt > now && !mayBeEarly) {
          return fail('not-due', `not due before ${state.availableAt}${t.early && !state.rateDeferred ? ' (waiting for a retry, not for a turn of its rate)' : ''}`);
        }
        // A rate-deferred delivery stays marked while claimed: deferred again, it goes near its turn, not to the back.
        return ok(next(state, { status: 'IN_FLIGHT', claimedAt: now }, []));
      }
      if (state.status === 'IN_FLIGHT') {
        const expiresAt = state.claimedAt === undefined ? undefined : new Date(Date.parse(state.claimedAt) + t.claimTtlMs).toISOString();
        if (expiresAt !== undefined && expiresAt > now) return fail('claim-held', `claimed at ${state.claimedAt}; the claim expires at ${expiresAt}`);
        return ok(next(state, { claimedAt: now }, []));
      }
      return invalid();
    }
    case 'start':
      if (state.status !== 'IN_FLIGHT') return invalid();
      if (state.claimedAt !== t.claimedAt) return fail('claim-lost', `claimed again at ${state.claimedAt ?? '(never)'}, not ${t.claimedAt}`);
      return ok(next(state, { claimedAt: t.now.toISOString() }, []));
    case 'abandon':
      if (state.status === 'DELIVERED' || state.status === 'DEAD') return invalid();
      return ok(next(state, { status: 'DEAD', reason: t.reason, deadLetterDueAt: t.now.toISOString() }, ['claimedAt', 'availableAt', 'rateDeferred']));
    case 'attempted': {
      if (state.status !== 'IN_FLIGHT') return invalid();
      const { decision, result } = t;
      if ((decision.kind === 'delivered') !== isSuccess(result)) {
        return fail('inconsistent-decision', `decision ${decision.kind} does not fit the result (${result.kind === 'response' ? `HTTP ${result.status}` : result.kind})`);
      }
      return ok(settle(next(state, {}, ['rateDeferred']), t));
    }
    case 'delivered-unclaimed': {
      if (state.status !== 'PENDING' && state.status !== 'IN_FLIGHT') return invalid();
      if (!isSuccess(t.result)) return fail('inconsistent-decision', `only a success settles a delivery without its claim, not ${t.result.kind === 'response' ? `HTTP ${t.result.status}` : t.result.kind}`);
      const attempted = { type: 'attempted', at: t.at, result: t.result, decision: { kind: 'delivered' }, ...(t.detail ? { detail: t.detail } : {}) } as const;
      return ok(settle(next(state, {}, ['rateDeferred']), attempted));
    }
    case 'queue':
      if (state.status !== 'PENDING' && state.status !== 'IN_FLIGHT') return invalid();
      return ok(next(state, { status: 'QUEUED', reason: t.reason }, ['availableAt', 'claimedAt', 'rateDeferred']));
    case 'defer':
      if (state.status !== 'IN_FLIGHT') return invalid();
      return ok(next(state, { status: 'PENDING', availableAt: t.until.toISOString(), rateDeferred: true }, ['claimedAt']));
    case 'back-off':
      if (state.status !== 'IN_FLIGHT') return invalid();
      return ok(next(state, { status: 'PENDING', availableAt: t.until.toISOString() }, ['claimedAt']));
    case 'dead-lettered':
      if (state.status !== 'DEAD' || state.deadLetterDueAt === undefined) return invalid();
      return ok(next(state, {}, ['deadLetterDueAt']));
    case 'redeliver':
      if (state.status !== 'QUEUED' && state.status !== 'DEAD') return invalid();
      // An ordered delivery's key may have moved past it: the pump gives it its place again first (domain/modes/ordering.ts
      // resequenced), a moment later, so that what an operator or a replay redelivers together is placed together, in its old order.
      return ok(
        next(
          state,
          {
            status: 'PENDING',
            availableAt: state.order ? new Date(t.now.getTime() + REDELIVERED_ORDER_GRACE_MS).toISOString() : t.now.toISOString(),
            attempts: 0,
            throttled: 0,
            ...(state.order ? { order: { ...state.order, again: true as const } } : {}),
          },
          ['claimedAt', 'firstAttemptAt', 'reason', 'rateDeferred', 'deadLetterDueAt'],
        ),
      );
  }
}

/** IN_FLIGHT after the attempt: where its decision leaves the delivery. */
function settle<S extends DeliveryState>(state: S, t: Extract<Transition, { type: 'attempted' }>): S {
  const { decision, result } = t;
  const at = t.at.toISOString();
  const counted = {
    attempts: state.attempts + 1,
    firstAttemptAt: state.firstAttemptAt ?? at,
    lastAttemptAt: at,
    ...(t.detail ? { attemptLog: withAttempt(state.attemptLog, t.detail) } : {}),
  };
  switch (decision.kind) {
    case 'delivered':
      return next(state, { ...counted, status: 'DELIVERED', deliveredAt: at }, ['claimedAt', 'availableAt', 'reason']);
    case 'retry':
    case 'throttle': {
      const throttled = decision.kind === 'throttle' ? { throttled: (state.throttled ?? 0) + 1 } : {};
      const lastError = describeFailure(result, t.at);
      return next(state, { ...counted, ...throttled, status: 'PENDING', availableAt: decision.at.toISOString(), lastError }, ['claimedAt', 'reason']);
    }
    case 'dead':
      return next(state, { ...counted, status: 'DEAD', lastError: describeFailure(result, t.at), reason: decision.reason, deadLetterDueAt: at }, ['claimedAt', 'availableAt']);
    case 'suspend':
    case 'queue': {
      const lastError = describeFailure(result, t.at);
      return next(state, { ...counted, status: STATUS_AFTER[decision.kind], lastError, reason: decision.reason }, ['claimedAt', 'availableAt']);
    }
  }
}

/** What decide() needs to know of the attempts before this one. */
export function historyOf(state: DeliveryState): AttemptHistory {
  const history: AttemptHistory = { attempts: state.attempts, throttled: state.throttled ?? 0 };
  if (state.firstAttemptAt !== undefined) history.firstAttemptAt = new Date(state.firstAttemptAt);
  return history;
}

function ok<S>(state: S): TransitionResult<S> {
  return { ok: true, state };
}

/** A copy of `state` with `set` applied and `drop` keys removed (absent, not undefined: Firestore refuses undefined). */
function next<S extends DeliveryState>(state: S, set: Partial<DeliveryState>, drop: (keyof DeliveryState)[]): S {
  const copy: Record<string, unknown> = { ...state, ...set };
  for (const key of drop) delete copy[key];
  return copy as S;
}
