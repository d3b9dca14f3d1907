import { PolicyPresetName } from '../../../shared/domain/retry/policy-preset-names';
import { POLICY_PRESETS } from '../../../shared/domain/retry/policy-presets';
import { parseResponses, simulate, SimulatedResponse, Simulation } from '../../../shared/domain/retry/simulate';

function responses(text: string): SimulatedResponse[] {
  const parsed = parseResponses(text);
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.value;
}
const run = (preset: PolicyPresetName, text: string, options = {}): Simulation => simulate(POLICY_PRESETS[preset], responses(text), options);
const brief = (s: Simulation) => s.rows.map((r) => [r.at, r.status, r.outcome]);

describe('simulate: the SPEC example 500,500,429,200', () => {
  it('event-platform: two retries, a throttle that uses none, delivered', () => {
    const s = run('event-platform', '500,500,429,200');
    expect(s.rows).toEqual([
      { attempt: 1, at: 0, status: 500, outcome: 'retry', next: 300, reason: 'HTTP 500: retry 1 of 3 in 5 min' },
      { attempt: 2, at: 300, status: 500, outcome: 'retry', next: 900, reason: 'HTTP 500: retry 2 of 3 in 10 min' },
      { attempt: 3, at: 900, status: 429, outcome: 'throttle', next: 910, reason: 'HTTP 429 throttled (1), no retry used: again in 10 s' },
      { attempt: 4, at: 910, status: 200, outcome: 'delivered' },
    ]);
    expect(s.end).toEqual({ state: 'DELIVERED', destination: 'active', attempts: 4, throttled: 1, at: 910, reason: 'delivered' });
    expect(s.policy).toBe('event-platform');
  });

  it.each<[PolicyPresetName, (string | number)[][], string]>([
    ['eventarc', [[0, 500, 'retry'], [10, 500, 'retry'], [30, 429, 'retry'], [70, 200, 'delivered']], 'DELIVERED'],
    ['adobe-best-effort', [[0, 500, 'retry'], [15, 500, 'retry'], [45, 429, 'dead']], 'DEAD'],
    ['adobe-configurable', [[0, 500, 'dead']], 'DEAD'],
    ['cloud-elements', [[0, 500, 'retry'], [8, 500, 'retry'], [64, 429, 'retry'], [512, 200, 'delivered']], 'DELIVERED'],
  ])('%s', (preset, rows, state) => {
    const s = run(preset, '500,500,429,200');
    expect(brief(s)).toEqual(rows);
    expect(s.end.state).toBe(state);
  });
});

describe('simulate: the whole schedule of each preset (the last response repeats)', () => {
  it.each<[PolicyPresetName, string, number[], string, string]>([
    ['event-platform', '500', [0, 300, 900, 2100], 'DEAD', 'active'],
    ['event-platform', 'timeout', [0, 300, 900, 2100], 'DEAD', 'active'],
    ['adobe-best-effort', '503', [0, 15, 45], 'DEAD', 'active'],
    ['adobe-configurable', '503', [0, 1800, 3600, 5400], 'DEAD', 'active'],
    ['cloud-elements', 'network', [0, 8, 64, 512, 4096, 32768], 'QUEUED', 'suspended'],
  ])('%s with %s', (preset, text, times, state, destination) => {
    const s = run(preset, text);
    expect(s.rows.map((r) => r.at)).toEqual(times);
    expect(s.end).toMatchObject({ state, destination, attempts: times.length, at: times[times.length - 1] });
  });

  it('eventarc: 149 attempts, the last at 85830 s, dead at the 24 h limit', () => {
    const s = run('eventarc', '500');
    expect(s.rows).toHaveLength(149);
    expect(s.rows[s.rows.length - 1]).toMatchObject({ attempt: 149, at: 85830, outcome: 'dead' });
    expect(s.end).toMatchObject({ state: 'DEAD', attempts: 149 });
    expect(s.end.reason).toMatch(/^max-age: /);
  });

  it('eventarc: an event published 23 h before the first attempt gets one hour of retries', () => {
    const s = run('eventarc', '500', { publishedSecondsBefore: 23 * 3600 });
    expect(s.rows[s.rows.length - 1]!.at).toBeLessThan(3600);
    expect(s.rows[s.rows.length - 1]!.at).toBeGreaterThanOrEqual(3600 - 600);
  });

  it('event-platform: 410 and 404 suspend the destination, the event is queued', () => {
    expect(run('event-platform', '500,404').end).toMatchObject({ state: 'QUEUED', destination: 'suspended', attempts: 2 });
    expect(run('eventarc', '410').end).toMatchObject({ state: 'QUEUED', destination: 'suspended', attempts: 1, reason: 'gone: HTTP 410 Gone: the receiver asked not to be sent more events' });
  });

  it('event-platform: Retry-After in the script moves a retry within 1×–2×', () => {
    expect(brief(run('event-platform', '503:450,503:9999,200'))).toEqual([
      [0, 503, 'retry'],
      [450, 503, 'retry'],
      [1650, 200, 'delivered'],
    ]);
  });
});

describe('simulate options', () => {
  it('HERALD_TIME_SCALE divides the schedule', () => {
    expect(run('event-platform', '500', { timeScale: 60 }).rows.map((r) => r.at)).toEqual([0, 5, 15, 35]);
    expect(run('cloud-elements', '500', { timeScale: 1000 }).rows.map((r) => r.at)).toEqual([0, 0.008, 0.064, 0.512, 4.096, 32.768]);
  });

  it('stops at the attempt limit, still PENDING', () => {
    const s = run('eventarc', '500', { attemptLimit: 5 });
    expect(s.rows).toHaveLength(5);
    expect(s.end).toMatchObject({ state: 'PENDING', attempts: 5, reason: 'simulation stopped after 5 attempts' });
  });

  it('refuses an empty script', () => {
    expect(() => simulate(POLICY_PRESETS.eventarc, [])).toThrow(RangeError);
  });
});

describe('parseResponses', () => {
  it('reads statuses, Retry-After, timeout and network', () => {
    expect(parseResponses(' 500, 429:30 ,timeout,network,200')).toEqual({
      ok: true,
      value: [
        { kind: 'status', status: 500 },
        { kind: 'status', status: 429, retryAfter: '30' },
        { kind: 'timeout' },
        { kind: 'network' },
        { kind: 'status', status: 200 },
      ],
    });
  });

  it.each([
    ['', 'give at least one response, e.g. 500,500,429,200'],
    ['500,,200', 'response 2 "" must be a status 200–599 (optionally :RETRY_AFTER_SECONDS), timeout or network'],
    ['500,abc', 'response 2 "abc" must be a status 200–599 (optionally :RETRY_AFTER_SECONDS), timeout or network'],
    ['100', 'response 1 "100" must be a status 200–599 (optionally :RETRY_AFTER_SECONDS), timeout or network'],
    ['600', 'response 1 "600" must be a status 200–599 (optionally :RETRY_AFTER_SECONDS), timeout or network'],
    ['429:-1', 'response 1 "429:-1" must be a status 200–599 (optionally :RETRY_AFTER_SECONDS), timeout or network'],
  ])('refuses %j', (text, error) => {
    expect(parseResponses(text)).toEqual({ ok: false, error });
  });
});
