import { AttemptResult, DeliveryRecord, DeliveryStatus } from '../../../shared/domain/retry/delivery';
import { DeliveryState, historyOf, transition, Transition, TransitionErrorCode, TransitionResult } from '../../../shared/domain/retry/delivery-state';
import { MINUTE } from '../../../shared/domain/retry/delivery-policy';
import { EVENT_PLATFORM } from '../../../shared/domain/retry/policy-presets';
import { decide, Decision } from '../../../shared/domain/retry/retry-decision';

const T0 = new Date('2025-03-01T12:00:00.000Z');
const at = (ms: number) => new Date(T0.getTime() + ms);
const iso = (ms: number) => at(ms).toISOString();
const TTL = 30_000;
const HOURISH = 3_600_000;

const ok200: AttemptResult = { kind: 'response', status: 200, durationMs: 5, bodyExcerpt: '' };
const e500: AttemptResult = { kind: 'response', status: 500, durationMs: 5, bodyExcerpt: 'oops' };
const e429: AttemptResult = { kind: 'response', status: 429, durationMs: 5, bodyExcerpt: '' };

const delivered: Decision = { kind: 'delivered' };
const retry: Decision = { kind: 'retry', at: at(5 * MINUTE), delayMs: 5 * MINUTE, retry: 1, reason: 'HTTP 500: retry 1 of 3 in 5 min' };
const throttle: Decision = { kind: 'throttle', at: at(10_000), delayMs: 10_000, throttle: 1, reason: 'throttled' };
const dead: Decision = { kind: 'dead', cause: 'retries-exhausted', reason: 'HTTP 500 on attempt 4' };
const suspend: Decision = { kind: 'suspend', cause: 'gone', reason: 'HTTP 410 Gone' };

const pending: DeliveryState = { status: 'PENDING', attempts: 0, availableAt: iso(0) };
const inFlight: DeliveryState = { status: 'IN_FLIGHT', attempts: 0, availableAt: iso(0), claimedAt: iso(0) };

function expectOk<S>(result: TransitionResult<S>): S {
  if (!result.ok) throw new Error(`expected ok, got ${result.error.code}: ${result.error.message}`);
  return result.state;
}

describe('claim', () => {
  it('takes a due PENDING delivery IN_FLIGHT with claimedAt', () => {
    expect(expectOk(transition(pending, { type: 'claim', now: at(1000), claimTtlMs: TTL }))).toEqual({
      status: 'IN_FLIGHT',
      attempts: 0,
      availableAt: iso(0),
      claimedAt: iso(1000),
    });
  });

  it('takes a PENDING delivery with no availableAt', () => {
    expect(expectOk(transition({ status: 'PENDING', attempts: 0 }, { type: 'claim', now: T0, claimTtlMs: TTL })).status).toBe('IN_FLIGHT');
  });

  it('re-claims an IN_FLIGHT delivery whose claim is at least the TTL old', () => {
    expect(expectOk(transition(inFlight, { type: 'claim', now: at(TTL), claimTtlMs: TTL })).claimedAt).toBe(iso(TTL));
  });

  it('keeps the other fields of a full DeliveryRecord', () => {
    const record: DeliveryRecord = { id: 'd.e', destinationId: 'd', eventId: 'e', eventSource: 's', eventType: 't', ...pending };
    expect(expectOk(transition(record, { type: 'claim', now: T0, claimTtlMs: TTL }))).toMatchObject({ id: 'd.e', destinationId: 'd', eventType: 't' });
  });
});

describe('rate deferrals', () => {
  const deferred: DeliveryState = { status: 'PENDING', attempts: 0, availableAt: iso(HOURISH), rateDeferred: true };

  it('a claimed delivery deferred for a turn is PENDING, marked as waiting for its rate', () => {
    expect(expectOk(transition(inFlight, { type: 'defer', until: at(HOURISH) }))).toEqual(deferred);
  });

  it('rate control may claim it before its time (brought forward); the claim keeps the mark until the attempt', () => {
    const claimed = expectOk(transition(deferred, { type: 'claim', now: at(1000), claimTtlMs: TTL, early: true }));
    expect(claimed).toEqual({ status: 'IN_FLIGHT', attempts: 0, availableAt: iso(HOURISH), claimedAt: iso(1000), rateDeferred: true });
    // Started: still marked (deferred again, it goes near its turn); attempted: no longer waiting for its rate.
    const started = expectOk(transition(claimed, { type: 'start', now: at(1100), claimedAt: iso(1000) }));
    expect(started).toMatchObject({ rateDeferred: true });
    expect(expectOk(transition(started, { type: 'attempted', at: at(1200), result: ok200, decision: delivered }))).not.toHaveProperty('rateDeferred');
    // Not the ordinary pump's claim.
    expect(transition(deferred, { type: 'claim', now: at(1000), claimTtlMs: TTL })).toMatchObject({ ok: false, error: { code: 'not-due' } });
  });

  it('never a retry waiting for its time', () => {
    const retrying: DeliveryState = { status: 'PENDING', attempts: 1, availableAt: iso(5 * MINUTE) };
    const result = transition(retrying, { type: 'claim', now: at(1000), claimTtlMs: TTL, early: true });
    expect(result).toMatchObject({ ok: false, error: { code: 'not-due', message: expect.stringContaining('waiting for a retry') } });
  });

  it('queueing, abandoning or redelivering clears the mark', () => {
    expect(expectOk(transition(deferred, { type: 'queue', now: T0, reason: 'suspended' }))).not.toHaveProperty('rateDeferred');
    expect(expectOk(transition(deferred, { type: 'abandon', reason: 'gone', now: T0 }))).not.toHaveProperty('rateDeferred');
    const queued = expectOk(transition(deferred, { type: 'queue', now: T0, reason: 'suspended' }));
    expect(expectOk(transition({ ...queued, rateDeferred: true }, { type: 'redeliver', now: T0 }))).not.toHaveProperty('rateDeferred');
  });
});

describe('start and abandon', () => {
  it('starts the attempt its claim sent, renewing the claim', () => {
    expect(expectOk(transition(inFlight, { type: 'start', now: at(500), claimedAt: iso(0) }))).toEqual({ ...inFlight, claimedAt: iso(500) });
  });

  it('abandons a PENDING, IN_FLIGHT or QUEUED delivery as DEAD with the reason', () => {
    for (const state of [pending, inFlight, { ...pending, status: 'QUEUED' as const }]) {
      const dead = expectOk(transition(state, { type: 'abandon', reason: 'destination deleted', now: T0 }));
      expect(dead).toMatchObject({ status: 'DEAD', reason: 'destination deleted' });
      expect(dead.claimedAt).toBeUndefined();
      expect(dead.availableAt).toBeUndefined();
    }
  });
});

describe('attempted (from IN_FLIGHT)', () => {
  it('→ DELIVERED: attempts+1, deliveredAt, no claim or availableAt', () => {
    expect(expectOk(transition(inFlight, { type: 'attempted', at: at(1000), result: ok200, decision: delivered }))).toEqual({
      status: 'DELIVERED',
      attempts: 1,
      firstAttemptAt: iso(1000),
      lastAttemptAt: iso(1000),
      deliveredAt: iso(1000),
    });
  });

  it('→ PENDING on retry: later availableAt, attempts+1, lastError', () => {
    expect(expectOk(transition(inFlight, { type: 'attempted', at: at(1000), result: e500, decision: retry }))).toEqual({
      status: 'PENDING',
      attempts: 1,
      availableAt: iso(5 * MINUTE),
      firstAttemptAt: iso(1000),
      lastAttemptAt: iso(1000),
      lastError: { at: iso(1000), status: 500, error: 'HTTP 500', bodyExcerpt: 'oops' },
    });
  });

  it('→ PENDING on throttle counts the throttle', () => {
    const s = expectOk(transition({ ...inFlight, attempts: 2, throttled: 1, firstAttemptAt: iso(-5000) }, { type: 'attempted', at: at(1000), result: e429, decision: throttle }));
    expect(s).toMatchObject({ status: 'PENDING', attempts: 3, throttled: 2, availableAt: iso(10_000), firstAttemptAt: iso(-5000) });
    expect(historyOf(s)).toEqual({ attempts: 3, throttled: 2, firstAttemptAt: at(-5000) });
  });

  it('→ DEAD with the reason and lastError', () => {
    expect(expectOk(transition({ ...inFlight, attempts: 3 }, { type: 'attempted', at: at(1000), result: e500, decision: dead }))).toEqual({
      status: 'DEAD',
      attempts: 4,
      firstAttemptAt: iso(1000),
      lastAttemptAt: iso(1000),
      lastError: { at: iso(1000), status: 500, error: 'HTTP 500', bodyExcerpt: 'oops' },
      reason: 'HTTP 500 on attempt 4',
      deadLetterDueAt: iso(1000),
    });
  });

  it('a DEAD delivery owes its dead letter until it is marked dead-lettered; a replay clears the debt', () => {
    const died = expectOk(transition({ ...inFlight, attempts: 3 }, { type: 'attempted', at: at(1000), result: e500, decision: dead }));
    const sent = expectOk(transition(died, { type: 'dead-lettered' }));
    expect(sent).not.toHaveProperty('deadLetterDueAt');
    expect(sent.status).toBe('DEAD');
    expect(transition(sent, { type: 'dead-lettered' })).toMatchObject({ ok: false, error: { code: 'invalid-transition' } });
    expect(expectOk(transition(died, { type: 'redeliver', now: at(2000) }))).not.toHaveProperty('deadLetterDueAt');
    expect(expectOk(transition(inFlight, { type: 'abandon', reason: 'gone', now: at(5) }))).toMatchObject({ status: 'DEAD', deadLetterDueAt: iso(5) });
  });

  it('a back-off (Herald overloaded) leaves the delivery PENDING with no attempt counted and no rate mark', () => {
    const waiting = expectOk(transition({ ...inFlight, attempts: 2 }, { type: 'back-off', until: at(10_000) }));
    expect(waiting).toMatchObject({ status: 'PENDING', attempts: 2, availableAt: iso(10_000) });
    expect(waiting).not.toHaveProperty('claimedAt');
    expect(waiting).not.toHaveProperty('rateDeferred');
    expect(transition(waiting, { type: 'back-off', until: at(20_000) })).toMatchObject({ ok: false, error: { code: 'invalid-transition' } });
  });

  it('→ QUEUED when the destination is suspended', () => {
    const gone: AttemptResult = { kind: 'response', status: 410, durationMs: 5, bodyExcerpt: '' };
    expect(expectOk(transition(inFlight, { type: 'attempted', at: at(1000), result: gone, decision: suspend }))).toMatchObject({
      status: 'QUEUED',
      attempts: 1,
      reason: 'HTTP 410 Gone',
      lastError: { status: 410 },
    });
  });
});

describe('queue and redeliver', () => {
  it('queues a PENDING delivery (its destination is suspended)', () => {
    expect(expectOk(transition(pending, { type: 'queue', now: T0, reason: 'destination suspended' }))).toEqual({
      status: 'QUEUED',
      attempts: 0,
      reason: 'destination suspended',
    });
  });

  it('queues a claimed (IN_FLIGHT) delivery whose destination was suspended before its attempt: the claim goes', () => {
    const claimed: DeliveryState = { status: 'IN_FLIGHT', attempts: 1, claimedAt: iso(1000), lastError: { at: iso(0), status: 500, error: 'HTTP 500' } };
    expect(expectOk(transition(claimed, { type: 'queue', now: T0, reason: 'destination suspended: HTTP 404' }))).toEqual({
      status: 'QUEUED',
      attempts: 1,
      reason: 'destination suspended: HTTP 404',
      lastError: { at: iso(0), status: 500, error: 'HTTP 500' },
    });
  });

  it.each<DeliveryStatus>(['QUEUED', 'DEAD'])('redelivers a %s delivery: PENDING now, with a fresh retry budget and its last error kept', (status) => {
    const state: DeliveryState = {
      status,
      attempts: 4,
      throttled: 1,
      firstAttemptAt: iso(0),
      lastAttemptAt: iso(2100_000),
      lastError: { at: iso(2100_000), status: 500, error: 'HTTP 500' },
      reason: 'x',
    };
    expect(expectOk(transition(state, { type: 'redeliver', now: at(HOURISH) }))).toEqual({
      status: 'PENDING',
      attempts: 0,
      throttled: 0,
      availableAt: iso(HOURISH),
      lastAttemptAt: iso(2100_000),
      lastError: { at: iso(2100_000), status: 500, error: 'HTTP 500' },
    });
  });
});

describe('invalid transitions return a typed error', () => {
  const claim: Transition = { type: 'claim', now: at(1000), claimTtlMs: TTL };
  const attemptedOk: Transition = { type: 'attempted', at: at(1000), result: ok200, decision: delivered };
  const queue: Transition = { type: 'queue', now: T0, reason: 'r' };
  const redeliver: Transition = { type: 'redeliver', now: T0 };
  const s = (status: DeliveryStatus, extra: Partial<DeliveryState> = {}): DeliveryState => ({ status, attempts: 1, ...extra });

  it.each<[string, DeliveryState, Transition, TransitionErrorCode]>([
    ['claim before availableAt', s('PENDING', { availableAt: iso(2000) }), claim, 'not-due'],
    ['claim a live claim', s('IN_FLIGHT', { claimedAt: iso(0) }), claim, 'claim-held'],
    ['claim DELIVERED', s('DELIVERED'), claim, 'invalid-transition'],
    ['claim DEAD', s('DEAD'), claim, 'invalid-transition'],
    ['claim QUEUED', s('QUEUED'), claim, 'invalid-transition'],
    ['attempted without a claim', s('PENDING'), attemptedOk, 'invalid-transition'],
    ['attempted twice', s('DELIVERED'), attemptedOk, 'invalid-transition'],
    ['attempted on DEAD', s('DEAD'), attemptedOk, 'invalid-transition'],
    ['delivered decision on a 500', s('IN_FLIGHT'), { type: 'attempted', at: T0, result: e500, decision: delivered }, 'inconsistent-decision'],
    ['retry decision on a 200', s('IN_FLIGHT'), { type: 'attempted', at: T0, result: ok200, decision: retry }, 'inconsistent-decision'],
    ['queue DELIVERED', s('DELIVERED'), queue, 'invalid-transition'],
    ['queue DEAD', s('DEAD'), queue, 'invalid-transition'],
    ['redeliver PENDING', s('PENDING'), redeliver, 'invalid-transition'],
    ['redeliver IN_FLIGHT', s('IN_FLIGHT'), redeliver, 'invalid-transition'],
    ['redeliver DELIVERED', s('DELIVERED'), redeliver, 'invalid-transition'],
    ['start a claim taken over', s('IN_FLIGHT', { claimedAt: iso(9) }), { type: 'start', now: T0, claimedAt: iso(0) }, 'claim-lost'],
    ['start a settled delivery', s('PENDING', { claimedAt: iso(0) }), { type: 'start', now: T0, claimedAt: iso(0) }, 'invalid-transition'],
    ['abandon DELIVERED', s('DELIVERED'), { type: 'abandon', reason: 'r', now: T0 }, 'invalid-transition'],
    ['abandon DEAD', s('DEAD'), { type: 'abandon', reason: 'r', now: T0 }, 'invalid-transition'],
  ])('%s → %s', (_name, state, t, code) => {
    const result = transition(state, t);
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.error).toMatchObject({ code, from: state.status, transition: t.type });
      expect(result.error.message).toEqual(expect.any(String));
    }
  });

  it('names the claim expiry when a claim is held', () => {
    const result = transition(s('IN_FLIGHT', { claimedAt: iso(0) }), claim);
    expect(result).toEqual({
      ok: false,
      error: { code: 'claim-held', from: 'IN_FLIGHT', transition: 'claim', message: `claimed at ${iso(0)}; the claim expires at ${iso(TTL)}` },
    });
  });
});

describe('with decide()', () => {
  it('plays event-platform to DEAD through claims and attempts', () => {
    let state: DeliveryState = pending;
    let now = T0;
    const seen: string[] = [];
    for (;;) {
      state = expectOk(transition(state, { type: 'claim', now, claimTtlMs: TTL }));
      const decision = decide(EVENT_PLATFORM, historyOf(state), e500, now, T0);
      state = expectOk(transition(state, { type: 'attempted', at: now, result: e500, decision }));
      seen.push(`${(now.getTime() - T0.getTime()) / 1000}:${state.status}`);
      if (state.status !== 'PENDING') break;
      now = new Date(state.availableAt!);
    }
    expect(seen).toEqual(['0:PENDING', '300:PENDING', '900:PENDING', '2100:DEAD']);
    expect(state).toMatchObject({ attempts: 4, firstAttemptAt: iso(0), lastAttemptAt: iso(2100_000) });
  });
});
