import { AttemptResult } from '../../../shared/domain/retry/delivery';
import { policySpecSchema, resolvePolicy } from '../../../shared/domain/retry/policy';
import { HOUR, scalePolicy } from '../../../shared/domain/retry/delivery-policy';
import { EVENT_PLATFORM, EVENT_PLATFORM_THRESHOLD } from '../../../shared/domain/retry/policy-presets';
import { withFailureMode } from '../../../shared/domain/retry/retry-decision';
import { bucketStart, RateBucket, rateOutcome, summarize, thresholdVerdict } from '../../../shared/domain/stats/success-rate';

const status = (s: number): AttemptResult => ({ kind: 'response', status: s, durationMs: 5, bodyExcerpt: '' });
const timeout: AttemptResult = { kind: 'timeout', durationMs: 5000, timeoutMs: 5000 };
const network: AttemptResult = { kind: 'network', durationMs: 1, error: 'ECONNREFUSED' };

describe('what an attempt does to the success rate (seed 000)', () => {
  it.each([200, 201, 204, 299])('%i succeeds', (s) => expect(rateOutcome(status(s), 0, HOUR)).toBe('success'));
  it.each([500, 502, 503, 504, 599])('%i (5xx) fails', (s) => expect(rateOutcome(status(s), 0, HOUR)).toBe('failure'));
  it.each([400, 401, 403, 404, 408, 409, 410, 422])('%i (another 4xx) fails', (s) => expect(rateOutcome(status(s), 0, HOUR)).toBe('failure'));
  it.each([301, 302, 307])('%i (a redirect, never followed) fails', (s) => expect(rateOutcome(status(s), 0, HOUR)).toBe('failure'));
  it('a timeout fails', () => expect(rateOutcome(timeout, 0, HOUR)).toBe('failure'));
  it('a network error fails', () => expect(rateOutcome(network, 0, HOUR)).toBe('failure'));

  it('a 429 whose event has waited just under the hour is not counted', () => {
    expect(rateOutcome(status(429), HOUR - 1, HOUR)).toBe('ignored');
  });
  it('a 429 whose event has waited exactly the hour is not counted yet ("more than an hour")', () => {
    expect(rateOutcome(status(429), HOUR, HOUR)).toBe('ignored');
  });
  it('a 429 whose event has waited just over the hour fails', () => {
    expect(rateOutcome(status(429), HOUR + 1, HOUR)).toBe('failure');
  });
  it('the hour scales with the window it is given (HERALD_TIME_SCALE)', () => {
    expect(rateOutcome(status(429), 13_000, 12_000)).toBe('failure');
    expect(rateOutcome(status(429), 11_000, 12_000)).toBe('ignored');
  });
});

describe('the threshold rule: below 95 % with at least the minimum sample', () => {
  const t = EVENT_PLATFORM_THRESHOLD;
  const counts = (successes: number, failures: number, ignored = 0) => ({ attempts: successes + failures + ignored, successes, failures });

  it('ships seed 000 numbers: 95 %, one hour, a minimum sample of 50', () => {
    expect(t).toEqual({ successRate: 0.95, windowMs: HOUR, minSample: 50 });
    expect(EVENT_PLATFORM.threshold).toBe(t);
  });

  it('exactly 95 % is not below: no suspension', () => {
    const v = thresholdVerdict(counts(95, 5), t);
    expect(v.suspend).toBe(false);
  });

  it('just below 95 % suspends, saying the rate, the sample and the threshold', () => {
    const v = thresholdVerdict(counts(94, 6), t);
    expect(v).toEqual({ suspend: true, reason: 'success rate 94 % over the last hour (94 of 100 attempts) is below 95 %' });
  });

  it('a sample one short of the minimum never suspends, however bad', () => {
    expect(thresholdVerdict(counts(0, 49), t).suspend).toBe(false);
    expect(thresholdVerdict(counts(0, 49), t)).toEqual({ suspend: false, why: '49 counted attempts, below the minimum sample of 50' });
  });

  it('at exactly the minimum sample the rule applies', () => {
    expect(thresholdVerdict(counts(47, 3), t)).toMatchObject({ suspend: true });
    expect(thresholdVerdict(counts(48, 2), t).suspend).toBe(false); // 96 %
  });

  it('ignored 429s count toward attempts but not toward the sample or the rate', () => {
    expect(thresholdVerdict(counts(40, 5, 100), t).suspend).toBe(false); // 45 counted: below the minimum
    expect(thresholdVerdict(counts(60, 0, 1000), t).suspend).toBe(false); // 100 %
  });

  it('a custom threshold is honoured', () => {
    expect(thresholdVerdict(counts(9, 1), { successRate: 0.9, windowMs: 60_000, minSample: 10 }).suspend).toBe(false); // exactly 90 %
    expect(thresholdVerdict(counts(9, 2), { successRate: 0.9, windowMs: 60_000, minSample: 10 })).toMatchObject({ suspend: true, reason: expect.stringContaining('over the last 1 min') });
  });
});

describe('the rolling window', () => {
  const MIN = 60_000;
  const b = (start: number, successes: number, failures: number, extra: Partial<RateBucket> = {}): RateBucket => ({
    destinationId: 'd',
    start,
    attempts: successes + failures,
    successes,
    failures,
    ...extra,
  });

  it('buckets are aligned minutes (of scaled time)', () => {
    expect(bucketStart(125_000, MIN)).toBe(120_000);
    expect(bucketStart(120_000, MIN)).toBe(120_000);
    expect(bucketStart(1_234, 200)).toBe(1_200);
  });

  it('sums the buckets that began within the window and leaves older ones out', () => {
    const now = 100 * MIN;
    const s = summarize([b(now - 61 * MIN, 0, 100), b(now - 60 * MIN, 10, 0), b(now - MIN, 5, 5), b(now, 1, 0)], now, HOUR);
    expect(s).toMatchObject({ attempts: 21, successes: 16, failures: 5 });
    expect(s.successRate).toBeCloseTo(16 / 21, 10);
  });

  it('has no success rate when nothing was counted', () => {
    expect(summarize([], 0, HOUR)).toEqual({ attempts: 0, successes: 0, failures: 0, recentErrors: [] });
  });

  it('keeps the five most recent errors, newest first, across buckets', () => {
    const err = (i: number) => ({ at: new Date(i * 1000).toISOString(), status: 500, error: `HTTP 500 #${i}` });
    const s = summarize([b(0, 0, 3, { lastErrors: [err(3), err(2), err(1)] }), b(MIN, 0, 3, { lastErrors: [err(63), err(62), err(61)] })], 2 * MIN, HOUR);
    expect(s.recentErrors.map((e) => e.error)).toEqual(['HTTP 500 #63', 'HTTP 500 #62', 'HTTP 500 #61', 'HTTP 500 #3', 'HTTP 500 #2']);
  });
});

describe('failureMode "queue" (seed 003)', () => {
  it('queues what would have been retried', () => {
    const retry = { kind: 'retry', at: new Date(0), delayMs: 300_000, retry: 1, reason: 'HTTP 500: retry 1 of 3 in 5 min' } as const;
    expect(withFailureMode(retry, 'queue')).toEqual({ kind: 'queue', reason: 'HTTP 500; queued (failureMode queue)' });
  });
  it('queues what would have died', () => {
    expect(withFailureMode({ kind: 'dead', cause: 'not-retried', reason: 'HTTP 400 is not retried under adobe-best-effort' }, 'queue')).toMatchObject({ kind: 'queue' });
  });
  it('leaves delivered, throttled and suspending outcomes alone, and everything under "retry"', () => {
    const throttle = { kind: 'throttle', at: new Date(0), delayMs: 10_000, throttle: 1, reason: 'HTTP 429 throttled' } as const;
    const suspend = { kind: 'suspend', cause: 'criteria', reason: 'HTTP 404' } as const;
    expect(withFailureMode({ kind: 'delivered' }, 'queue')).toEqual({ kind: 'delivered' });
    expect(withFailureMode(throttle, 'queue')).toBe(throttle);
    expect(withFailureMode(suspend, 'queue')).toBe(suspend);
    const dead = { kind: 'dead', cause: 'retries-exhausted', reason: 'x' } as const;
    expect(withFailureMode(dead, 'retry')).toBe(dead);
  });
});

describe('thresholds in policies', () => {
  it('are scaled with the rest of the policy by HERALD_TIME_SCALE', () => {
    expect(scalePolicy(EVENT_PLATFORM, 300).threshold).toEqual({ successRate: 0.95, windowMs: 12_000, minSample: 50 });
  });
  it('other presets have none', () => {
    for (const name of ['eventarc', 'adobe-best-effort', 'adobe-configurable', 'cloud-elements'] as const) expect(resolvePolicy(name).threshold).toBeUndefined();
  });
  it('a custom policy may set one, validated field by field', () => {
    const base = { retryOn: { statuses: ['5xx'] }, backoff: { kind: 'fixed', delaysMs: [1000] }, maxAttempts: 3 };
    expect(policySpecSchema.safeParse({ ...base, threshold: { successRate: 0.99, windowMs: 600_000, minSample: 20 } }).success).toBe(true);
    const bad = policySpecSchema.safeParse({ ...base, threshold: { successRate: 1.5, windowMs: 10, minSample: 0, extra: 1 } });
    expect(bad.success).toBe(false);
    const messages = JSON.stringify(bad.error?.issues.map((i) => i.message));
    expect(messages).toContain('threshold has unknown field extra');
  });
});
