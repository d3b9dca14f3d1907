import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { harness } from '../support/cli-harness';

/** `herald simulate`: a policy in virtual time, one JSON line per attempt; no Herald needed. */

async function simulate(argv: string[]) {
  // No tokens, no URL, and a fetch that fails the test if it is ever called.
  const h = harness(() => {
    throw new Error('simulate must not use the network');
  });
  const code = await h.run(['simulate', ...argv], { env: {} });
  return { code, stdout: h.stdout(), stderr: h.stderr(), lines: h.stdout().trimEnd().split('\n'), sent: h.sent };
}

describe('herald simulate: the presets', () => {
  test('cloud-elements, a receiver that stays down: 8 s, 64 s, 512 s, 4096 s, 32768 s after the first failure, then the destination is suspended', async () => {
    const r = await simulate(['--policy', 'cloud-elements', '--responses', '500']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.sent).toHaveLength(0);
    expect(r.lines).toEqual([
      '{"attempt":1,"at":0,"status":500,"outcome":"retry","next":8,"reason":"HTTP 500: retry 1 of 5 in 8 s"}',
      '{"attempt":2,"at":8,"status":500,"outcome":"retry","next":64,"reason":"HTTP 500: retry 2 of 5 in 56 s"}',
      '{"attempt":3,"at":64,"status":500,"outcome":"retry","next":512,"reason":"HTTP 500: retry 3 of 5 in 7 min 28 s"}',
      '{"attempt":4,"at":512,"status":500,"outcome":"retry","next":4096,"reason":"HTTP 500: retry 4 of 5 in 59 min 44 s"}',
      '{"attempt":5,"at":4096,"status":500,"outcome":"retry","next":32768,"reason":"HTTP 500: retry 5 of 5 in 7 h 57 min 52 s"}',
      '{"attempt":6,"at":32768,"status":500,"outcome":"suspend","reason":"HTTP 500 on attempt 6: cloud-elements allows 5 retries; the destination is deactivated and its events queued"}',
      '{"policy":"cloud-elements","state":"QUEUED","destination":"suspended","attempts":6,"throttled":0,"at":32768,"reason":"retries-exhausted: HTTP 500 on attempt 6: cloud-elements allows 5 retries; the destination is deactivated and its events queued"}',
    ]);
  });

  test('adobe-best-effort: a 400 is not retried, dead at once', async () => {
    const r = await simulate(['--policy', 'adobe-best-effort', '--responses', '400']);
    expect(r.code).toBe(0);
    expect(r.lines).toEqual([
      '{"attempt":1,"at":0,"status":400,"outcome":"dead","reason":"HTTP 400 is not retried under adobe-best-effort"}',
      '{"policy":"adobe-best-effort","state":"DEAD","destination":"active","attempts":1,"throttled":0,"at":0,"reason":"not-retried: HTTP 400 is not retried under adobe-best-effort"}',
    ]);
  });

  test('event-platform: 429s throttle without using a retry, then delivered', async () => {
    const r = await simulate(['--policy', 'event-platform', '--responses', '429,429,200']);
    expect(r.code).toBe(0);
    expect(r.lines).toEqual([
      '{"attempt":1,"at":0,"status":429,"outcome":"throttle","next":10,"reason":"HTTP 429 throttled (1), no retry used: again in 10 s"}',
      '{"attempt":2,"at":10,"status":429,"outcome":"throttle","next":30,"reason":"HTTP 429 throttled (2), no retry used: again in 20 s"}',
      '{"attempt":3,"at":30,"status":200,"outcome":"delivered"}',
      '{"policy":"event-platform","state":"DELIVERED","destination":"active","attempts":3,"throttled":2,"at":30,"reason":"delivered"}',
    ]);
  });

  test('the SPEC example under event-platform', async () => {
    const r = await simulate(['--policy', 'event-platform', '--responses', '500,500,429,200']);
    expect(r.lines.map((l) => JSON.parse(l) as Record<string, unknown>).map((o) => [o.at, o.status ?? o.state, o.outcome ?? o.destination])).toEqual([
      [0, 500, 'retry'],
      [300, 500, 'retry'],
      [900, 429, 'throttle'],
      [910, 200, 'delivered'],
      [910, 'DELIVERED', 'active'],
    ]);
  });

  test('--time-scale divides the schedule; --published-before shortens a max-age policy', async () => {
    const scaled = await simulate(['--policy', 'event-platform', '--responses', '500', '--time-scale', '60']);
    expect(scaled.lines.slice(0, -1).map((l) => (JSON.parse(l) as { at: number }).at)).toEqual([0, 5, 15, 35]);
    const full = await simulate(['--policy', 'eventarc', '--responses', '500']);
    const late = await simulate(['--policy', 'eventarc', '--responses', '500', '--published-before', String(23 * 3600)]);
    const lastAt = (lines: string[]) => (JSON.parse(lines[lines.length - 1]!) as { at: number }).at;
    expect(lastAt(full.lines)).toBe(85830);
    expect(lastAt(late.lines)).toBeLessThan(3600);
  });
});

describe('herald simulate: custom policies', () => {
  const CUSTOM = { retryOn: { statuses: ['5xx'] }, backoff: { kind: 'fixed', delaysMs: [1000, 2000] }, maxAttempts: 3 };

  test('inline JSON', async () => {
    const r = await simulate(['--policy', JSON.stringify(CUSTOM), '--responses', '503']);
    expect(r.code).toBe(0);
    expect(r.lines.slice(0, -1).map((l) => (JSON.parse(l) as { at: number }).at)).toEqual([0, 1, 3]);
    expect(JSON.parse(r.lines[r.lines.length - 1]!)).toMatchObject({ policy: 'custom', state: 'DEAD', attempts: 3 });
  });

  test('a JSON file', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'herald-sim-')), 'policy.json');
    writeFileSync(file, JSON.stringify(CUSTOM));
    const r = await simulate(['--policy', file, '--responses', '503,200']);
    expect(r.code).toBe(0);
    expect(r.lines).toHaveLength(3);
    expect(JSON.parse(r.lines[2]!)).toMatchObject({ state: 'DELIVERED', at: 1 });
  });

  test('a bad custom policy: exit 2, each issue at its path', async () => {
    const r = await simulate(['--policy', '{"retryOn":{"statuses":"any"},"backoff":{"kind":"fixed","delaysMs":[-1]},"colour":"red"}', '--responses', '500']);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      [
        'herald: invalid arguments for herald simulate',
        '  - --policy backoff.delaysMs[0]: backoff.delaysMs[] must be at least 0 ms',
        '  - --policy: a custom policy has unknown field colour',
        '  - --policy maxAttempts: give maxAttempts or maxAgeMs (or both): a policy must end',
        'hint: run "herald simulate --help" for usage',
        '',
      ].join('\n'),
    );
  });

  test('not JSON, not a preset, not a file', async () => {
    const bad = await simulate(['--policy', '{retryOn', '--responses', '500']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/\n {2}- --policy: inline JSON is not valid JSON: /);
    const missing = await simulate(['--policy', 'standard', '--responses', '500']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(
      '  - --policy: "standard" is not a preset (event-platform, eventarc, adobe-best-effort, adobe-configurable, cloud-elements), inline JSON or a readable JSON file (no such file)\n',
    );
    const json = await simulate(['--policy', '"standard"', '--responses', '500']);
    expect(json.stderr).toContain('  - --policy: must be one of event-platform, eventarc, adobe-best-effort, adobe-configurable, cloud-elements or a custom policy object\n');
  });
});

describe('herald simulate: usage errors (exit 2)', () => {
  test('bad --responses: the message from parseResponses', async () => {
    const r = await simulate(['--policy', 'eventarc', '--responses', '500,abc']);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      [
        'herald: invalid arguments for herald simulate',
        '  - --responses: response 2 "abc" must be a status 200–599 (optionally :RETRY_AFTER_SECONDS), timeout or network',
        'hint: run "herald simulate --help" for usage',
        '',
      ].join('\n'),
    );
  });

  test('every problem at once', async () => {
    const r = await simulate(['--policy', 'nope', '--responses', '', '--time-scale', '0', '--published-before', '-5']);
    expect(r.code).toBe(2);
    expect(r.stderr.split('\n')).toEqual([
      'herald: invalid arguments for herald simulate',
      '  - --time-scale: must be a positive number, e.g. 60 (delays divided by it, as HERALD_TIME_SCALE)',
      '  - --published-before: must be a number of seconds, 0 or more',
      '  - --responses: give at least one response, e.g. 500,500,429,200',
      expect.stringMatching(/^ {2}- --policy: "nope" is not a preset/),
      'hint: run "herald simulate --help" for usage',
      '',
    ]);
  });

  test('--policy and --responses are required', async () => {
    const r = await simulate([]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('  - --policy: is required: a preset (event-platform, eventarc, adobe-best-effort, adobe-configurable, cloud-elements), a JSON file or inline JSON\n');
    expect(r.stderr).toContain('  - --responses: is required: what the receiver answers, in order, e.g. --responses 500,500,429,200\n');
  });

  test('--help explains the lines', async () => {
    const r = await simulate(['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/--policy <policy>[\s\S]*--responses <list>[\s\S]*--time-scale <n>[\s\S]*--published-before <seconds>/);
    expect(r.stdout).toMatch(/The last line is the end state/);
  });
});
