import { readFile } from 'node:fs/promises';
import { Command } from 'commander';
import { z } from 'zod';
import { issuesFromZod } from '../../../shared/domain/events/event';
import { POLICY_PRESET_NAMES } from '../../../shared/domain/retry/policy-preset-names';
import { policySpecSchema, resolvePolicy } from '../../../shared/domain/retry/policy';
import { DeliveryPolicy } from '../../../shared/domain/retry/delivery-policy';
import { isPolicyPresetName, POLICY_PRESETS } from '../../../shared/domain/retry/policy-presets';
import { parseResponses, simulate, SimulatedResponse, Simulation } from '../../../shared/domain/retry/simulate';
import { CommandContext, issuesOf, usageError } from '../context';
import { Issue } from '../errors';

/**
 * `herald simulate`: plays a delivery policy against scripted responses in virtual time
 * (shared/domain/retry/simulate.ts) and prints one JSON line per attempt, then the end state.
 * Pure: no Herald, no URL, no token.
 */

const numberOption = (message: string, ok: (n: number) => boolean) =>
  z
    .string()
    .trim()
    .refine((s) => s !== '' && Number.isFinite(Number(s)) && ok(Number(s)), message)
    .transform(Number);

export const simulateOptionsSchema = z.object({
  policy: z.string({ error: `is required: a preset (${POLICY_PRESET_NAMES.join(', ')}), a JSON file or inline JSON` }).min(1, 'must not be empty'),
  responses: z.string({ error: 'is required: what the receiver answers, in order, e.g. --responses 500,500,429,200' }),
  timeScale: numberOption('must be a positive number, e.g. 60 (delays divided by it, as HERALD_TIME_SCALE)', (n) => n > 0).optional(),
  publishedBefore: numberOption('must be a number of seconds, 0 or more', (n) => n >= 0).optional(),
});

const FLAGS = { policy: '--policy', responses: '--responses', timeScale: '--time-scale', publishedBefore: '--published-before' };

/**
 * `--policy`: a preset name, inline JSON (`{…}` or `"eventarc"`), or a path to a JSON file
 * holding either; checked by the same schema a destination spec's policy is.
 */
export async function policyFromOption(value: string, readText: (path: string) => Promise<string> = (p) => readFile(p, 'utf8')): Promise<{ ok: true; policy: DeliveryPolicy } | { ok: false; issues: Issue[] }> {
  const fail = (message: string) => ({ ok: false as const, issues: [{ path: '--policy', message }] });
  if (isPolicyPresetName(value)) return { ok: true, policy: POLICY_PRESETS[value] };
  let text: string;
  let origin: string;
  if (/^\s*[{["]/.test(value)) {
    text = value;
    origin = 'inline JSON';
  } else {
    try {
      text = await readText(value);
      origin = value;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : (code ?? (e as Error).message);
      return fail(`${JSON.stringify(value)} is not a preset (${POLICY_PRESET_NAMES.join(', ')}), inline JSON or a readable JSON file (${why})`);
    }
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    return fail(`${origin} is not valid JSON: ${(e as Error).message}`);
  }
  const parsed = policySpecSchema.safeParse(json);
  if (parsed.success) return { ok: true, policy: resolvePolicy(parsed.data) };
  // Each issue at its place in the policy: `--policy backoff.delaysMs[0]: …`.
  return {
    ok: false,
    issues: issuesFromZod(parsed.error).map((i) => ({
      path: i.path === '' ? '--policy' : `--policy ${i.path}`,
      message: i.message.replace(/^policy /, ''),
    })),
  };
}

/** The lines `herald simulate` prints: one per attempt, then `{policy, state, destination, …}`. */
export function simulationLines(s: Simulation): string[] {
  return [...s.rows.map((row) => JSON.stringify(row)), JSON.stringify({ policy: s.policy, ...s.end })];
}

export function registerSimulate(program: Command, ctx: CommandContext): void {
  const command = program
    .command('simulate')
    .description('play a delivery policy against scripted responses in virtual time; one JSON line per attempt, then the end state (needs no Herald)')
    .option('--policy <policy>', `a preset (${POLICY_PRESET_NAMES.join(', ')}), a JSON file or inline JSON holding a custom policy`)
    .option('--responses <list>', 'what the receiver answers, in order: 200-599, STATUS:RETRY_AFTER_SECONDS, timeout or network; the last repeats')
    .option('--time-scale <n>', 'divide the policy delays and windows by n, as HERALD_TIME_SCALE does (default 1)')
    .option('--published-before <seconds>', 'the event was published this long before the first attempt (max-age counts from publication; default 0)');
  command.addHelpText(
    'after',
    `
Each attempt line has attempt, at (seconds from the first attempt), status, outcome
(delivered, retry, throttle, dead, suspend) and, when there is one, next (when the next
attempt is due) and reason. The last line is the end state: state (DELIVERED, DEAD,
QUEUED), destination (active or suspended), attempts, throttled, at, reason.

Examples:
  herald simulate --policy event-platform --responses 500,500,429,200
  herald simulate --policy cloud-elements --responses 500
  herald simulate --policy eventarc --responses 503:120,200 --time-scale 60
  herald simulate --policy '{"retryOn":{"statuses":["5xx"]},"backoff":{"kind":"fixed","delaysMs":[1000]},"maxAttempts":3}' --responses 500`,
  );
  command.action(async () => {
    // Every problem at once: the flags, the script, the policy.
    const raw = command.opts<Record<string, unknown>>();
    const options = issuesOf(simulateOptionsSchema, raw, FLAGS);
    const issues: Issue[] = options.ok ? [] : [...options.issues];
    let responses: SimulatedResponse[] | undefined;
    if (typeof raw.responses === 'string') {
      const script = parseResponses(raw.responses);
      if (script.ok) responses = script.value;
      else issues.push({ path: '--responses', message: script.error });
    }
    let policy: DeliveryPolicy | undefined;
    if (typeof raw.policy === 'string' && raw.policy !== '') {
      const resolved = await policyFromOption(raw.policy);
      if (resolved.ok) policy = resolved.policy;
      else issues.push(...resolved.issues);
    }
    if (!options.ok || issues.length > 0 || responses === undefined || policy === undefined) throw usageError(command, issues);
    const simulation = simulate(policy, responses, {
      ...(options.data.timeScale !== undefined ? { timeScale: options.data.timeScale } : {}),
      ...(options.data.publishedBefore !== undefined ? { publishedSecondsBefore: options.data.publishedBefore } : {}),
    });
    for (const line of simulationLines(simulation)) ctx.out(line);
  });
}
