import { z } from 'zod';
import { ConfigError } from '../../shared/config';

const PROCESSES = '--processes must be a whole number from 1 to 8';

const argsSchema = z.strictObject({
  check: z.boolean().default(false),
  build: z.boolean().default(true),
  processes: z.coerce.number({ error: PROCESSES }).int(PROCESSES).min(1, PROCESSES).max(8, PROCESSES).default(2),
});

export type RehearsalArgs = z.infer<typeof argsSchema>;

const USAGE = 'npm run rehearse takes --check, --no-build and --processes N (ingest and deliver processes each, default 2)';

/** `npm run rehearse -- --check --processes 3`: the rehearsal's arguments, or a ConfigError naming the wrong one. */
export function parseRehearsalArgs(argv: readonly string[]): RehearsalArgs {
  const given: Record<string, unknown> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const [flag, inline] = arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    if (flag === '--check' && inline === undefined) given.check = true;
    else if (flag === '--no-build' && inline === undefined) given.build = false;
    else if (flag === '--processes') {
      const value = inline ?? argv[++i];
      if (value === undefined || value.startsWith('--')) throw new ConfigError(`${PROCESSES}; none was given`);
      given.processes = value;
    } else throw new ConfigError(`unknown argument '${arg}': ${USAGE}`);
  }
  const parsed = argsSchema.safeParse(given);
  if (!parsed.success) throw new ConfigError(`${parsed.error.issues[0]!.message}, not '${String(given.processes)}'`);
  return parsed.data;
}
