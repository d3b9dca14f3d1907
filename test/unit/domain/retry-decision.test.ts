import { AttemptResult } from '../../../shared/domain/retry/delivery';
import { POLICY_PRESET_NAMES } from '../../../shared/domain/retry/policy-preset-names';
import { DeliveryPolicy, HOUR, MINUTE, SECOND } from '../../../shared/domain/retry/delivery-policy';
import { ADOBE_BEST_EFFORT, ADOBE_CONFIGURABLE, CLOUD_ELEMENTS, EVENT_PLATFORM, EVENTARC, POLICY_PRESETS } from '../../../shared/domain/retry/policy-presets';
import { afterAttempt, AttemptHistory, decide, Decision, duration, NO_HISTORY, parseRetryAfter } from '../../../shared/domain/retry/retry-decision';

const T0 = new Date('2025-03-01T12:00:00.000Z');
const at = (ms: number) => new Date(T0.getTime() + ms);

const http = (status: number, retryAfter?: string): AttemptResult =>
  retryAfter === undefined
    ? { kind: 'response', status, durationMs: 10, bodyExcerpt: '' }
    : { kind: 'response', status, durationMs: 10, bodyExcerpt: '', retryAfter };
const TIMEOUT: AttemptResult = { kind: 'timeout', durationMs: 5000, timeoutMs: 5000 };
const NETWORK: AttemptResult = { kind: 'network', durationMs: 3, error: 'ECONNREFUSED' };

/** The first attempt at T0 of an event published at T0. */
const first = (policy: DeliveryPolicy, result: AttemptResult): Decision => decide(policy, NO_HISTORY, result, T0, T0);

/**
 * Plays `results` one attempt after another, each made when the previous decision said;
 * returns each decision with its attempt time (ms from T0).
 */
function play(policy: DeliveryPolicy, results: AttemptResult[], publishedAt = T0): { t: number; d: Decision }[] {
  const out: { t: number; d: Decision }[] = [];
  let history: AttemptHistory = NO_HISTORY;
  let now = T0;
  for (const result of results) {
    const d = decide(policy, history, result, now, publishedAt);
    out.push({ t: now.getTime() - T0.getTime(), d });
    if (d.kind !== 'retry' && d.kind !== 'throttle') break;
    history = afterAttempt(history, d, now);
    now = d.at;
  }
  return out;
}
const repeat = (result: AttemptResult, n: number) => Array.from({ length: n }, () => result);

describe('which failures each preset retries (first attempt)', () => {
  type Row = [number | 'timeout' | 'network', Decision['kind']];
  const table: Record<keyof typeof POLICY_PRESETS, Row[]> = {
    // Seed 000: 5xx, timeouts, network errors, 408; 429 throttles; 404 and 3xx suspend; other 4xx die.
    'event-platform': [
      [500, 'retry'], [501, 'retry'], [502, 'retry'], [503, 'retry'], [504, 'retry'], [599, 'retry'], [408, 'retry'],
      ['timeout', 'retry'], ['network', 'retry'],
      [429, 'throttle'],
      [404, 'suspend'], [300, 'suspend'], [301, 'suspend'], [302, 'suspend'], [304, 'suspend'], [307, 'suspend'], [308, 'suspend'], [410, 'suspend'],
      [400, 'dead'], [401, 'dead'], [403, 'dead'], [405, 'dead'], [409, 'dead'], [413, 'dead'], [422, 'dead'],
    ],
    // Seed 001: every failure.
    eventarc: [
      [500, 'retry'], [503, 'retry'], [400, 'retry'], [401, 'retry'], [403, 'retry'], [404, 'retry'], [408, 'retry'], [409, 'retry'],
      [422, 'retry'], [429, 'retry'], [301, 'retry'], ['timeout', 'retry'], ['network', 'retry'],
      [410, 'suspend'],
    ],
    // Seed 002 best effort: 403, 408, 409, 429, 500, 502, 503, 504 and nothing else (400 named).
    'adobe-best-effort': [
      [403, 'retry'], [408, 'retry'], [409, 'retry'], [429, 'retry'], [500, 'retry'], [502, 'retry'], [503, 'retry'], [504, 'retry'],
      ['timeout', 'retry'], ['network', 'retry'],
      [400, 'dead'], [401, 'dead'], [404, 'dead'], [420, 'dead'], [501, 'dead'], [505, 'dead'], [301, 'dead'],
      [410, 'suspend'],
    ],
    // Seed 002 configurable: 420, 429 and codes greater than 500; all the others not.
    'adobe-configurable': [
      [420, 'retry'], [429, 'retry'], [501, 'retry'], [502, 'retry'], [503, 'retry'], [504, 'retry'], [505, 'retry'], [599, 'retry'],
      ['timeout', 'retry'], ['network', 'retry'],
      [500, 'dead'], [400, 'dead'], [403, 'dead'], [404, 'dead'], [408, 'dead'], [409, 'dead'], [301, 'dead'],
      [410, 'suspend'],
    ],
    // Seed 003: every failure.
    'cloud-elements': [
      [500, 'retry'], [400, 'retry'], [404, 'retry'], [429, 'retry'], [302, 'retry'], ['timeout', 'retry'], ['network', 'retry'],
      [410, 'suspend'],
    ],
  };
  for (const name of POLICY_PRESET_NAMES) {
    it.each(table[name])(`${name}: %s → %s`, (status, kind) => {
      const result = status === 'timeout' ? TIMEOUT : status === 'network' ? NETWORK : http(status);
      expect(first(POLICY_PRESETS[name], result).kind).toBe(kind);
    });
  }

  it.each(POLICY_PRESET_NAMES)('%s: every 2xx is delivered', (name) => {
    for (const status of [200, 201, 202, 204, 299]) expect(first(POLICY_PRESETS[name], http(status))).toEqual({ kind: 'delivered' });
  });

  it.each(POLICY_PRESET_NAMES)('%s: 410 Gone suspends the destination', (name) => {
    expect(first(POLICY_PRESETS[name], http(410))).toMatchObject({ kind: 'suspend', cause: 'gone' });
  });

  it('event-platform: 404 and 3xx are criteria suspensions', () => {
    expect(first(EVENT_PLATFORM, http(404))).toMatchObject({ kind: 'suspend', cause: 'criteria' });
    expect(first(EVENT_PLATFORM, http(301))).toMatchObject({ kind: 'suspend', cause: 'criteria' });
  });

  it('event-platform: a Pub/Sub topic that refuses Herald or is missing suspends at once (criteria)', () => {
    const denied: AttemptResult = { kind: 'topic', durationMs: 3, problem: 'permission-denied', error: '7 PERMISSION_DENIED: User not authorized' };
    const missing: AttemptResult = { kind: 'topic', durationMs: 3, problem: 'not-found', error: '5 NOT_FOUND: Resource not found' };
    expect(first(EVENT_PLATFORM, denied)).toEqual({
      kind: 'suspend',
      cause: 'criteria',
      reason: 'Pub/Sub permission-denied: Herald is not allowed to publish to the topic; this suspends the destination at once under event-platform',
    });
    expect(first(EVENT_PLATFORM, missing)).toMatchObject({ kind: 'suspend', cause: 'criteria', reason: expect.stringContaining('the topic does not exist') });
    // Elsewhere it is a failure like a network error, retried where those are.
    expect(first(EVENTARC, denied)).toMatchObject({ kind: 'retry' });
  });

  it('a failure not retried dies at once, saying why', () => {
    expect(first(ADOBE_CONFIGURABLE, http(500))).toEqual({ kind: 'dead', cause: 'not-retried', reason: 'HTTP 500 is not retried under adobe-configurable' });
  });
});

describe('schedules (seconds of each attempt from the first, against a receiver that keeps failing)', () => {
  it.each<[string, DeliveryPolicy, number[], Partial<Decision>]>([
    ['event-platform: 5, 10, 20 min after the previous attempt, 3 retries, dead', EVENT_PLATFORM, [0, 300, 900, 2100], { kind: 'dead', cause: 'retries-exhausted' }],
    ['adobe-best-effort: 15 s, then 30 s, dead', ADOBE_BEST_EFFORT, [0, 15, 45], { kind: 'dead', cause: 'retries-exhausted' }],
    ['adobe-configurable: every 30 min, capped at 3 retries, dead', ADOBE_CONFIGURABLE, [0, 1800, 3600, 5400], { kind: 'dead', cause: 'retries-exhausted' }],
    [
      'cloud-elements: 2^(3x) s after the original failure, 5 retries, then deactivate and queue',
      CLOUD_ELEMENTS,
      [0, 8, 64, 512, 4096, 32768],
      { kind: 'suspend', cause: 'retries-exhausted' },
    ],
  ])('%s', (_name, policy, seconds, end) => {
    const failure = policy === ADOBE_CONFIGURABLE ? http(503) : http(500);
    const played = play(policy, repeat(failure, 20));
    expect(played.map((p) => p.t / SECOND)).toEqual(seconds);
    expect(played.slice(0, -1).every((p) => p.d.kind === 'retry')).toBe(true);
    expect(played[played.length - 1]!.d).toMatchObject(end);
  });

  it('event-platform: the retries are numbered and say when', () => {
    const played = play(EVENT_PLATFORM, repeat(http(500), 4));
    expect(played.map((p) => p.d)).toEqual([
      { kind: 'retry', at: at(5 * MINUTE), delayMs: 5 * MINUTE, retry: 1, reason: 'HTTP 500: retry 1 of 3 in 5 min' },
      { kind: 'retry', at: at(15 * MINUTE), delayMs: 10 * MINUTE, retry: 2, reason: 'HTTP 500: retry 2 of 3 in 10 min' },
      { kind: 'retry', at: at(35 * MINUTE), delayMs: 20 * MINUTE, retry: 3, reason: 'HTTP 500: retry 3 of 3 in 20 min' },
      { kind: 'dead', cause: 'retries-exhausted', reason: 'HTTP 500 on attempt 4: event-platform allows 3 retries' },
    ]);
  });

  it('eventarc: 10 s doubling to 600 s, then every 600 s, until 24 h after publication', () => {
    const played = play(EVENTARC, repeat(http(503), 1000));
    const times = played.map((p) => p.t / SECOND);
    expect(times.slice(0, 10)).toEqual([0, 10, 30, 70, 150, 310, 630, 1230, 1830, 2430]);
    // 630 + 600·k < 86400 up to k = 142: the last attempt is at 85830 s; the next (86430 s) would be past 24 h.
    expect(times[times.length - 1]).toBe(85830);
    expect(played).toHaveLength(149);
    expect(played[played.length - 1]!.d).toMatchObject({ kind: 'dead', cause: 'max-age' });
  });

  it('eventarc: the 24 h limit counts from publication, not from the first attempt', () => {
    const published = at(-(24 * HOUR - 10 * SECOND)); // published 23:59:50 before the first attempt
    expect(decide(EVENTARC, NO_HISTORY, http(500), T0, published)).toMatchObject({ kind: 'dead', cause: 'max-age' });
    const justInTime = at(-(24 * HOUR - 11 * SECOND));
    expect(decide(EVENTARC, NO_HISTORY, http(500), T0, justInTime)).toMatchObject({ kind: 'retry', at: at(10 * SECOND) });
  });

  it('eventarc: a late attempt still gets its retry while before the limit, never after', () => {
    const history: AttemptHistory = { attempts: 100, throttled: 0, firstAttemptAt: T0 };
    expect(decide(EVENTARC, history, http(500), at(24 * HOUR - 601 * SECOND), T0)).toMatchObject({ kind: 'retry', delayMs: 600 * SECOND });
    expect(decide(EVENTARC, history, http(500), at(24 * HOUR - 600 * SECOND), T0)).toMatchObject({ kind: 'dead', cause: 'max-age' });
    expect(decide(EVENTARC, history, http(500), at(25 * HOUR), T0)).toMatchObject({ kind: 'dead', cause: 'max-age' });
  });

  it('cloud-elements counts from the original failure even when an attempt runs late', () => {
    // Retry 1 was due at 8 s but ran at 20 s: retry 2 is still at 64 s from the first attempt.
    const history: AttemptHistory = { attempts: 1, throttled: 0, firstAttemptAt: T0 };
    expect(decide(CLOUD_ELEMENTS, history, http(500), at(20 * SECOND), T0)).toMatchObject({ kind: 'retry', retry: 2, at: at(64 * SECOND), delayMs: 44 * SECOND });
    // An attempt later than its successor's slot retries at once rather than in the past.
    expect(decide(CLOUD_ELEMENTS, history, http(500), at(100 * SECOND), T0)).toMatchObject({ kind: 'retry', at: at(100 * SECOND), delayMs: 0 });
  });

  it('a 2xx on the last allowed attempt is delivered', () => {
    const history: AttemptHistory = { attempts: 3, throttled: 0, firstAttemptAt: T0 };
    expect(decide(EVENT_PLATFORM, history, http(200), at(35 * MINUTE), T0)).toEqual({ kind: 'delivered' });
  });

  it('deactivate-and-queue also applies when a policy runs out of age', () => {
    const policy: DeliveryPolicy = { ...CLOUD_ELEMENTS, maxAttempts: undefined, maxAgeMs: 30 * SECOND };
    const played = play(policy, repeat(http(500), 10));
    expect(played.map((p) => p.t / SECOND)).toEqual([0, 8]);
    expect(played[1]!.d).toMatchObject({ kind: 'suspend', cause: 'max-age' });
  });
});

describe('event-platform throttling (429)', () => {
  it('does not consume a retry: four real failures are still allowed after throttles', () => {
    const played = play(EVENT_PLATFORM, [http(429), http(429), http(500), http(500), http(500), http(500)]);
    expect(played.map((p) => [p.t / SECOND, p.d.kind])).toEqual([
      [0, 'throttle'],
      [10, 'throttle'],
      [30, 'retry'],
      [330, 'retry'],
      [930, 'retry'],
      [2130, 'dead'],
    ]);
    expect(played[2]!.d).toMatchObject({ retry: 1, delayMs: 5 * MINUTE });
  });

  it('throttles between retries without using them', () => {
    const history: AttemptHistory = { attempts: 6, throttled: 4, firstAttemptAt: T0 }; // 2 failures counted
    expect(decide(EVENT_PLATFORM, history, http(500), at(20 * MINUTE), T0)).toMatchObject({ kind: 'retry', retry: 3, delayMs: 20 * MINUTE });
    expect(decide(EVENT_PLATFORM, history, http(429), at(20 * MINUTE), T0)).toMatchObject({ kind: 'throttle', throttle: 5, delayMs: 160 * SECOND });
  });

  it('waits 10 s doubling to 5 min for an hour, then counts 429 as a failure on the retry schedule', () => {
    const played = play(EVENT_PLATFORM, repeat(http(429), 100));
    const throttles = played.filter((p) => p.d.kind === 'throttle').map((p) => p.t / SECOND);
    expect(throttles).toEqual([0, 10, 30, 70, 150, 310, 610, 910, 1210, 1510, 1810, 2110, 2410, 2710, 3010, 3310]);
    expect(played.slice(throttles.length).map((p) => [p.t / SECOND, p.d.kind])).toEqual([
      [3610, 'retry'],
      [3910, 'retry'],
      [4510, 'retry'],
      [5710, 'dead'],
    ]);
  });

  it('the window is one hour since the first attempt: at exactly 1 h still throttled, after it not', () => {
    const history: AttemptHistory = { attempts: 1, throttled: 1, firstAttemptAt: T0 };
    expect(decide(EVENT_PLATFORM, history, http(429), at(HOUR), T0).kind).toBe('throttle');
    expect(decide(EVENT_PLATFORM, history, http(429), at(HOUR + 1), T0)).toMatchObject({ kind: 'retry', retry: 1 });
  });

  it('other presets count 429 as an ordinary retried failure', () => {
    expect(play(ADOBE_BEST_EFFORT, repeat(http(429), 5)).map((p) => [p.t / SECOND, p.d.kind])).toEqual([
      [0, 'retry'],
      [15, 'retry'],
      [45, 'dead'],
    ]);
  });
});

describe('Retry-After on 429 and 503, clamped to 1×–2× the scheduled delay', () => {
  it.each<[string, DeliveryPolicy, AttemptResult, number]>([
    ['shorter than scheduled → the schedule', EVENT_PLATFORM, http(503, '60'), 5 * MINUTE],
    ['within 1×–2× → as asked', EVENT_PLATFORM, http(503, '450'), 450 * SECOND],
    ['exactly 2× → as asked', EVENT_PLATFORM, http(503, '600'), 10 * MINUTE],
    ['longer than 2× → 2×', EVENT_PLATFORM, http(503, '3600'), 10 * MINUTE],
    ['an HTTP date', EVENT_PLATFORM, http(503, at(400 * SECOND).toUTCString()), 400 * SECOND],
    ['an HTTP date in the past → the schedule', EVENT_PLATFORM, http(503, at(-HOUR).toUTCString()), 5 * MINUTE],
    ['unreadable → ignored', EVENT_PLATFORM, http(503, 'soon'), 5 * MINUTE],
    ['on a 500 → ignored', EVENT_PLATFORM, http(500, '450'), 5 * MINUTE],
    ['on a retried 429 (adobe-best-effort: 15 s)', ADOBE_BEST_EFFORT, http(429, '20'), 20 * SECOND],
    ['on a retried 429, clamped (adobe-best-effort: 2×15 s)', ADOBE_BEST_EFFORT, http(429, '120'), 30 * SECOND],
    ['on a throttled 429 (first throttle: 10 s, so at most 20 s)', EVENT_PLATFORM, http(429, '120'), 20 * SECOND],
    ['on a throttled 429 within range', EVENT_PLATFORM, http(429, '15'), 15 * SECOND],
    ['eventarc 503 (10 s)', EVENTARC, http(503, '5'), 10 * SECOND],
    ['ignored when the policy does not honour it', { ...EVENT_PLATFORM, honourRetryAfter: false }, http(503, '450'), 5 * MINUTE],
  ])('%s', (_name, policy, result, delayMs) => {
    const d = first(policy, result);
    expect(d).toMatchObject({ delayMs, at: at(delayMs) });
  });

  it('the reason says when it was clamped', () => {
    expect(first(EVENT_PLATFORM, http(503, '3600'))).toMatchObject({
      reason: 'HTTP 503: retry 1 of 3 in 10 min (Retry-After 1 h clamped to 1×–2× the scheduled 5 min)',
    });
  });

  it('cannot push a retry past max age', () => {
    const published = at(-(24 * HOUR - 15 * SECOND));
    expect(decide(EVENTARC, NO_HISTORY, http(503, '20'), T0, published)).toMatchObject({ kind: 'dead', cause: 'max-age' });
    expect(decide(EVENTARC, NO_HISTORY, http(503, '12'), T0, published)).toMatchObject({ kind: 'retry', delayMs: 12 * SECOND });
  });
});

describe('custom policies', () => {
  const base: DeliveryPolicy = {
    name: 'custom',
    retryOn: { statuses: ['5xx'], timeouts: false, networkErrors: true },
    on429: 'retry',
    suspendOn: [403],
    backoff: { kind: 'linear', initialMs: 1000, incrementMs: 1000 },
    measureFrom: 'previous',
    maxAttempts: 4,
    attemptTimeoutMs: 5000,
    afterLastRetry: 'dead',
    honourRetryAfter: true,
  };

  it('follow their own retried set and suspension statuses', () => {
    expect(first(base, TIMEOUT)).toMatchObject({ kind: 'dead', cause: 'not-retried' });
    expect(first(base, NETWORK).kind).toBe('retry');
    expect(first(base, http(403))).toMatchObject({ kind: 'suspend', cause: 'criteria' });
    expect(first(base, http(410))).toMatchObject({ kind: 'suspend', cause: 'gone' });
  });

  it('play a linear schedule', () => {
    expect(play(base, repeat(http(500), 9)).map((p) => p.t)).toEqual([0, 1000, 3000, 6000]);
  });

  it('retry immediately under an immediate backoff', () => {
    expect(play({ ...base, backoff: { kind: 'immediate' }, maxAttempts: 3 }, repeat(http(502), 9)).map((p) => [p.t, p.d.kind])).toEqual([
      [0, 'retry'],
      [0, 'retry'],
      [0, 'dead'],
    ]);
  });

  it('a single attempt policy never retries', () => {
    expect(first({ ...base, maxAttempts: 1 }, http(500))).toMatchObject({ kind: 'dead', cause: 'retries-exhausted' });
  });
});

describe('helpers', () => {
  it('afterAttempt counts attempts and throttles and keeps the first attempt time', () => {
    const h1 = afterAttempt(NO_HISTORY, { kind: 'throttle', at: at(10), delayMs: 10, throttle: 1, reason: '' }, T0);
    expect(h1).toEqual({ attempts: 1, throttled: 1, firstAttemptAt: T0 });
    expect(afterAttempt(h1, { kind: 'retry', at: at(20), delayMs: 10, retry: 1, reason: '' }, at(10))).toEqual({ attempts: 2, throttled: 1, firstAttemptAt: T0 });
  });

  it.each<[string, number | undefined]>([
    ['120', 120000],
    [' 0 ', 0],
    ['Sat, 01 Mar 2025 12:01:00 GMT', 60000],
    ['Sat, 01 Mar 2025 11:00:00 GMT', 0],
    ['-5', undefined],
    ['1.5', undefined],
    ['tomorrow-ish', undefined],
    ['', undefined],
  ])('parseRetryAfter(%j) = %s', (value, ms) => {
    expect(parseRetryAfter(value, T0)).toBe(ms);
  });

  it.each<[number, string]>([
    [500, '500 ms'],
    [15000, '15 s'],
    [300000, '5 min'],
    [32768000, '9 h 6 min 8 s'],
    [86400000, '1 d'],
  ])('duration(%i) = %s', (ms, text) => {
    expect(duration(ms)).toBe(text);
  });
});
