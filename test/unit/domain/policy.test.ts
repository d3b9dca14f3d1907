import { destinationSpecSchema } from '../../../shared/domain/destinations/destination';
import { POLICY_PRESET_NAMES } from '../../../shared/domain/retry/policy-preset-names';
import { policySpecSchema, resolvePolicy } from '../../../shared/domain/retry/policy';
import { Backoff, DEFAULT_THROTTLE, DeliveryPolicy, HOUR, MINUTE, scalePolicy, SECOND, StatusRule, throttleOf } from '../../../shared/domain/retry/delivery-policy';
import { backoffDelay, matchesStatus } from '../../../shared/domain/retry/retry-decision';
import { ADOBE_BEST_EFFORT, ADOBE_CONFIGURABLE, CLOUD_ELEMENTS, EVENT_PLATFORM, EVENTARC, POLICY_PRESETS } from '../../../shared/domain/retry/policy-presets';

describe('presets', () => {
  it('are the five named in the SPEC, the same list destination specs accept', () => {
    expect(POLICY_PRESET_NAMES).toEqual(['event-platform', 'eventarc', 'adobe-best-effort', 'adobe-configurable', 'cloud-elements']);
    for (const name of POLICY_PRESET_NAMES) expect(destinationSpecSchema.parse({ url: 'https://x.example', policy: name }).policy).toBe(name);
    expect(destinationSpecSchema.safeParse({ url: 'https://x.example', policy: 'nope' }).success).toBe(false);
    for (const name of POLICY_PRESET_NAMES) expect(POLICY_PRESETS[name].name).toBe(name);
  });

  // Each schedule in seconds, retry 1 first: the seeds' numbers.
  it.each<[string, DeliveryPolicy, number[]]>([
    ['event-platform (000): 5, 10, 20 min', EVENT_PLATFORM, [300, 600, 1200]],
    ['adobe-best-effort (002): 15 s then 30 s', ADOBE_BEST_EFFORT, [15, 30]],
    ['adobe-configurable (002): 30 min', ADOBE_CONFIGURABLE, [1800, 1800, 1800]],
    ['cloud-elements (003): 2^(3x) s', CLOUD_ELEMENTS, [8, 64, 512, 4096, 32768]],
    ['eventarc (001): 10 s doubling, capped at 600 s', EVENTARC, [10, 20, 40, 80, 160, 320, 600, 600, 600]],
  ])('%s', (_name, policy, seconds) => {
    expect(seconds.map((_, i) => backoffDelay(policy.backoff, i + 1) / SECOND)).toEqual(seconds);
  });

  it.each<[DeliveryPolicy, number | undefined, number | undefined, 'previous' | 'origin', string]>([
    [EVENT_PLATFORM, 4, undefined, 'previous', 'dead'],
    [EVENTARC, undefined, 24 * HOUR, 'previous', 'dead'],
    [ADOBE_BEST_EFFORT, 3, undefined, 'previous', 'dead'],
    [ADOBE_CONFIGURABLE, 4, undefined, 'previous', 'dead'],
    [CLOUD_ELEMENTS, 6, undefined, 'origin', 'deactivate-and-queue'],
  ])('%#: maxAttempts, maxAge, measureFrom, afterLastRetry', (policy, maxAttempts, maxAgeMs, from, after) => {
    expect(policy.maxAttempts).toBe(maxAttempts);
    expect(policy.maxAgeMs).toBe(maxAgeMs);
    expect(policy.measureFrom).toBe(from);
    expect(policy.afterLastRetry).toBe(after);
    expect(policy.attemptTimeoutMs).toBe(5 * SECOND);
    expect(policy.honourRetryAfter).toBe(true);
  });

  it('cloud-elements retry 5 comes ≈ 9.1 h after the original failure (seed: a little under 9.5 h)', () => {
    const hours = backoffDelay(CLOUD_ELEMENTS.backoff, 5) / HOUR;
    expect(hours).toBeGreaterThan(9);
    expect(hours).toBeLessThan(9.5);
  });

  it('only event-platform throttles 429 (10 s doubling to 5 min, for one hour)', () => {
    expect(POLICY_PRESET_NAMES.filter((n) => POLICY_PRESETS[n].on429 === 'throttle')).toEqual(['event-platform']);
    expect(throttleOf(EVENT_PLATFORM)).toEqual(DEFAULT_THROTTLE);
    expect(DEFAULT_THROTTLE.windowMs).toBe(HOUR);
    expect([1, 2, 3, 4, 5, 6, 7].map((n) => backoffDelay(DEFAULT_THROTTLE.backoff, n) / SECOND)).toEqual([10, 20, 40, 80, 160, 300, 300]);
    expect(throttleOf(EVENTARC)).toBeUndefined();
  });
});

describe('backoffDelay', () => {
  it.each<[string, Backoff, number[]]>([
    ['immediate', { kind: 'immediate' }, [0, 0, 0]],
    ['fixed repeats its last delay', { kind: 'fixed', delaysMs: [1, 5] }, [1, 5, 5, 5]],
    ['linear', { kind: 'linear', initialMs: 100, incrementMs: 50 }, [100, 150, 200, 250]],
    ['linear capped', { kind: 'linear', initialMs: 100, incrementMs: 50, capMs: 180 }, [100, 150, 180, 180]],
    ['exponential', { kind: 'exponential', initialMs: 100, factor: 3 }, [100, 300, 900, 2700]],
    ['exponential capped', { kind: 'exponential', initialMs: 100, factor: 3, capMs: 1000 }, [100, 300, 900, 1000]],
  ])('%s', (_name, backoff, delays) => {
    expect(delays.map((_, i) => backoffDelay(backoff, i + 1))).toEqual(delays);
  });
});

describe('matchesStatus', () => {
  it.each<[readonly StatusRule[] | 'any', number, boolean]>([
    ['any', 404, true],
    [[408], 408, true],
    [[408], 409, false],
    [['5xx'], 500, true],
    [['5xx'], 599, true],
    [['5xx'], 499, false],
    [['3xx'], 301, true],
    [[{ gt: 500 }], 500, false],
    [[{ gt: 500 }], 501, true],
    [[{ gte: 400, lt: 500 }], 499, true],
    [[{ gte: 400, lt: 500 }], 500, false],
    [[{ lte: 302 }], 302, true],
    [[], 500, false],
  ])('%j matches %i: %s', (rules, status, expected) => {
    expect(matchesStatus(rules, status)).toBe(expected);
  });
});

describe('policySpecSchema', () => {
  it.each(POLICY_PRESET_NAMES)('accepts the preset %s and resolves it to its value', (name) => {
    const parsed = policySpecSchema.parse(name);
    expect(parsed).toBe(name);
    expect(resolvePolicy(parsed)).toBe(POLICY_PRESETS[name]);
  });

  it('accepts a custom policy and fills in the defaults', () => {
    const parsed = policySpecSchema.parse({
      retryOn: { statuses: ['5xx', 429, { gt: 400, lt: 404 }] },
      backoff: { kind: 'exponential', initialMs: 1000, factor: 2, capMs: 60000 },
      maxAttempts: 5,
    });
    expect(resolvePolicy(parsed)).toEqual({
      name: 'custom',
      retryOn: { statuses: ['5xx', 429, { gt: 400, lt: 404 }], timeouts: true, networkErrors: true },
      on429: 'retry',
      suspendOn: [],
      suspendOnTopicRefusal: false,
      backoff: { kind: 'exponential', initialMs: 1000, factor: 2, capMs: 60000 },
      measureFrom: 'previous',
      maxAttempts: 5,
      attemptTimeoutMs: 5000,
      afterLastRetry: 'dead',
      honourRetryAfter: true,
    });
  });

  it('accepts every option spelled out', () => {
    const spec = {
      name: 'custom',
      retryOn: { statuses: 'any', timeouts: false, networkErrors: false },
      on429: 'throttle',
      throttle: { backoff: { kind: 'linear', initialMs: 1000, incrementMs: 1000, capMs: 10000 }, windowMs: 600000 },
      suspendOn: [404],
      suspendOnTopicRefusal: true,
      backoff: { kind: 'fixed', delaysMs: [1000, 2000] },
      measureFrom: 'origin',
      maxAttempts: 3,
      maxAgeMs: 3600000,
      attemptTimeoutMs: 10000,
      afterLastRetry: 'deactivate-and-queue',
      honourRetryAfter: false,
      threshold: { successRate: 0.99, windowMs: 600000, minSample: 20 },
    };
    expect(policySpecSchema.parse(spec)).toEqual(spec);
  });

  it.each<[string, unknown, string, (string | number)[]]>([
    ['an unknown preset', 'fast', 'policy must be one of event-platform, eventarc, adobe-best-effort, adobe-configurable, cloud-elements or a custom policy object', []],
    ['a number', 5, 'policy must be a preset name (event-platform, eventarc, adobe-best-effort, adobe-configurable, cloud-elements) or a custom policy object', []],
    ['an array', [], 'policy must be a preset name (event-platform, eventarc, adobe-best-effort, adobe-configurable, cloud-elements) or a custom policy object', []],
    ['an unknown field', { retryOn: { statuses: 'any' }, backoff: { kind: 'immediate' }, maxAttempts: 2, jitter: true }, 'a custom policy has unknown field jitter', []],
    ['an unknown retryOn field', { retryOn: { statuses: 'any', http: true }, backoff: { kind: 'immediate' }, maxAttempts: 2 }, 'retryOn has unknown field http', ['retryOn']],
    ['no retryOn', { backoff: { kind: 'immediate' }, maxAttempts: 2 }, 'retryOn must be an object {statuses, timeouts?, networkErrors?}', ['retryOn']],
    ['no statuses', { retryOn: {}, backoff: { kind: 'immediate' }, maxAttempts: 2 }, 'retryOn.statuses is required: "any" or an array of status rules', ['retryOn', 'statuses']],
    ['a bad status rule', { retryOn: { statuses: ['6xx'] }, backoff: { kind: 'immediate' }, maxAttempts: 2 }, 'a status rule is a code (408), a class ("5xx") or a range ({"gt": 500})', ['retryOn', 'statuses', 0]],
    ['an unknown backoff kind', { retryOn: { statuses: 'any' }, backoff: { kind: 'random' }, maxAttempts: 2 }, 'backoff.kind must be one of immediate, fixed, linear, exponential', ['backoff', 'kind']],
    ['a fixed backoff without delays', { retryOn: { statuses: 'any' }, backoff: { kind: 'fixed' }, maxAttempts: 2 }, 'backoff.delaysMs is required: an array of delays in ms', ['backoff', 'delaysMs']],
    ['an empty delay list', { retryOn: { statuses: 'any' }, backoff: { kind: 'fixed', delaysMs: [] }, maxAttempts: 2 }, 'backoff.delaysMs needs at least one delay', ['backoff', 'delaysMs']],
    ['a negative delay', { retryOn: { statuses: 'any' }, backoff: { kind: 'fixed', delaysMs: [-1] }, maxAttempts: 2 }, 'backoff.delaysMs[] must be at least 0 ms', ['backoff', 'delaysMs', 0]],
    ['a factor below 1', { retryOn: { statuses: 'any' }, backoff: { kind: 'exponential', initialMs: 10, factor: 0.5 }, maxAttempts: 2 }, 'backoff.factor must be at least 1', ['backoff', 'factor']],
    ['no end', { retryOn: { statuses: 'any' }, backoff: { kind: 'fixed', delaysMs: [10] } }, 'give maxAttempts or maxAgeMs (or both): a policy must end', ['maxAttempts']],
    ['immediate bounded by age only', { retryOn: { statuses: 'any' }, backoff: { kind: 'immediate' }, maxAgeMs: 1000 }, 'an immediate backoff needs maxAttempts, or it would retry in a tight loop', ['maxAttempts']],
    ['maxAttempts 0', { retryOn: { statuses: 'any' }, backoff: { kind: 'immediate' }, maxAttempts: 0 }, 'maxAttempts must be at least 1', ['maxAttempts']],
    ['a bad on429', { retryOn: { statuses: 'any' }, backoff: { kind: 'immediate' }, maxAttempts: 2, on429: 'wait' }, 'on429 must be "retry" or "throttle"', ['on429']],
    ['throttle without on429 throttle', { retryOn: { statuses: 'any' }, backoff: { kind: 'immediate' }, maxAttempts: 2, throttle: { backoff: { kind: 'immediate' }, windowMs: 10 } }, 'throttle applies only with on429: "throttle"', ['throttle']],
    ['a bad afterLastRetry', { retryOn: { statuses: 'any' }, backoff: { kind: 'immediate' }, maxAttempts: 2, afterLastRetry: 'queue' }, 'afterLastRetry must be "dead" or "deactivate-and-queue"', ['afterLastRetry']],
    ['a timeout too long', { retryOn: { statuses: 'any' }, backoff: { kind: 'immediate' }, maxAttempts: 2, attemptTimeoutMs: 50000 }, "attemptTimeoutMs must be at most 45000 ms: an attempt must end inside the lane's 60 s push deadline, with room for Herald's own work", ['attemptTimeoutMs']],
  ])('rejects %s with a precise message', (_name, input, message, path) => {
    const result = policySpecSchema.safeParse(input);
    expect(result.success).toBe(false);
    expect(result.error?.issues).toContainEqual(expect.objectContaining({ message, path }));
  });
});

describe('scalePolicy', () => {
  it('divides delays, windows and max age by the time scale, not the attempt timeout', () => {
    const fast = scalePolicy(EVENT_PLATFORM, 60);
    expect([1, 2, 3].map((n) => backoffDelay(fast.backoff, n))).toEqual([5 * SECOND, 10 * SECOND, 20 * SECOND]);
    expect(fast.throttle?.windowMs).toBe(MINUTE);
    expect(fast.attemptTimeoutMs).toBe(5 * SECOND);
    const arc = scalePolicy(EVENTARC, 3600);
    expect(arc.maxAgeMs).toBe(24 * SECOND);
    expect(backoffDelay(arc.backoff, 20)).toBe(600 * SECOND / 3600);
  });

  it('scales the default throttle of a policy that throttles without naming one', () => {
    const { throttle: _t, ...noThrottle } = EVENT_PLATFORM;
    expect(scalePolicy(noThrottle, 10).throttle?.windowMs).toBe(6 * MINUTE);
  });

  it('leaves the policy alone at scale 1 and refuses a non-positive scale', () => {
    expect(scalePolicy(CLOUD_ELEMENTS, 1)).toBe(CLOUD_ELEMENTS);
    expect(() => scalePolicy(CLOUD_ELEMENTS, 0)).toThrow(RangeError);
    expect(() => scalePolicy(CLOUD_ELEMENTS, Number.NaN)).toThrow(RangeError);
  });
});
