import { z } from 'zod';
import { ConfigError } from '../../shared/config';

/** Each instance holds its own clients and loops: more than this only loads the machine. */
export const MAX_INSTANCES = 16;

const INSTANCES = `--instances must be a whole number from 1 to ${MAX_INSTANCES}`;

export const instancesSchema = z.coerce.number({ error: INSTANCES }).int(INSTANCES).min(1, INSTANCES).max(MAX_INSTANCES, INSTANCES);

const localArgsSchema = z.strictObject({ instances: instancesSchema.default(1) });

export type LocalArgs = z.infer<typeof localArgsSchema>;

const USAGE = 'npm start takes --instances N (default 1)';

/** `npm start -- --instances 3` (or `--instances=3`): the arguments of local mode, or a ConfigError saying which one is wrong. */
export function parseLocalArgs(argv: readonly string[]): LocalArgs {
  const given: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const [flag, inline] = arg.startsWith('--') && arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    if (flag !== '--instances') throw new ConfigError(`unknown argument '${arg}': ${USAGE}`);
    const value = inline ?? argv[++i];
    if (value === undefined || (inline === undefined && value.startsWith('--'))) throw new ConfigError(`${INSTANCES}; none was given`);
    if (given.instances !== undefined) throw new ConfigError('--instances is given twice');
    given.instances = value;
  }
  const parsed = localArgsSchema.safeParse(given);
  if (!parsed.success) throw new ConfigError(`${parsed.error.issues[0]!.message}, not '${given.instances ?? ''}'`);
  return parsed.data;
}

/** A stack's instance count as given in code (tests): checked as the flag is. */
export function instanceCount(value: number | undefined): number {
  const parsed = instancesSchema.default(1).safeParse(value);
  if (!parsed.success) throw new ConfigError(`${parsed.error.issues[0]!.message}, not ${String(value)}`);
  return parsed.data;
}
