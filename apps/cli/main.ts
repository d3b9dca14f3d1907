import { Command, CommanderError } from 'commander';
import { registerAccounts } from './commands/accounts';
import { registerDeliveries } from './commands/deliveries';
import { registerDestinations } from './commands/destinations';
import { registerKeys } from './commands/keys';
import { registerPortal } from './commands/portal';
import { registerPublish } from './commands/publish';
import { registerReplay } from './commands/replay';
import { registerSimulate } from './commands/simulate';
import { registerUsage } from './commands/usage/usage';
import { ACCOUNT_HELP, API_KEY_HELP, CliIo, CommandContext, commandPath, DEFAULT_URL } from './context';
import { CliError, EXIT } from './errors';

export type { CliIo } from './context';
export { EXIT } from './errors';

const HELP_AFTER = `
Connection: --url, --admin-token, --ingest-token, --api-key and --account go before the
command (herald --url http://host:8080 destinations list) or after it where the command
lists them; otherwise HERALD_URL (default ${DEFAULT_URL}), HERALD_ADMIN_TOKEN,
HERALD_INGEST_TOKEN, HERALD_API_KEY and HERALD_ACCOUNT are used. npm start prints the URL
and both tokens. simulate needs none of them.

Credentials: an account key (hk_…, from herald keys create) works wherever a token does and
acts for its own account. A flag beats the environment; --api-key with --admin-token (or
--ingest-token) is a usage error; with both only in the environment, HERALD_API_KEY wins.
--account <id> puts destinations, deliveries and replays under /admin/accounts/<id>/
(the operator: any account; a key: its own) and names the account of published events.

Exit codes:
  0  success
  1  Herald answered with an error (the message and each issue are printed)
  2  usage error: bad arguments or options; nothing was sent
  3  cannot connect to Herald (not running, wrong HERALD_URL, no answer in time)

Examples:
  herald destinations add my-hook --url http://127.0.0.1:9000/hook
  herald publish --type com.example.hello --source /demo --data '{"hi":1}'
  herald destinations list
  herald deliveries list my-hook --status dead
  herald destinations reactivate my-hook
  herald replay --destination my-hook --since 2h --dry-run
  herald simulate --policy event-platform --responses 500,500,429,200
  herald accounts create 'Acme Corp' --id acme --email ops@acme.example
  herald keys create acme --name ci --scopes read,write
  herald portal sessions revoke-all acme
  herald usage acme --from 2026-11-01 --to 2026-11-30
  HERALD_API_KEY=hk_… herald destinations list`;

/** The commander program: one module per command group registers its commands. */
export function buildProgram(ctx: CommandContext): Command {
  const program = new Command('herald')
    .description('Herald: deliver CloudEvents to webhooks and Pub/Sub topics, with retries, suspension and replay')
    .enablePositionalOptions()
    .exitOverride()
    .showSuggestionAfterError()
    .configureOutput({
      writeOut: (s) => ctx.io.stdout.write(s),
      writeErr: (s) => ctx.io.stderr.write(s),
      outputError: (s, write) => write(`herald: ${s.replace(/^error: /, '')}`),
    })
    .option('--url <url>', `Herald's base URL (env HERALD_URL, default ${DEFAULT_URL})`)
    .option('--admin-token <token>', 'admin API token (env HERALD_ADMIN_TOKEN)')
    .option('--ingest-token <token>', 'ingest token (env HERALD_INGEST_TOKEN)')
    .option('--api-key <key>', API_KEY_HELP)
    .option('--account <id>', ACCOUNT_HELP)
    .addHelpText('after', HELP_AFTER);
  // Subcommands inherit the settings above (exit override, output), so they come after.
  registerPublish(program, ctx);
  registerDestinations(program, ctx);
  registerDeliveries(program, ctx);
  registerReplay(program, ctx);
  registerSimulate(program, ctx);
  registerAccounts(program, ctx);
  registerKeys(program, ctx);
  registerPortal(program, ctx);
  registerUsage(program, ctx);
  return program;
}

/** Runs one invocation in-process and resolves to its exit code; never exits the process. */
export async function run(argv: readonly string[], io: CliIo): Promise<number> {
  const program = buildProgram(new CommandContext(io));
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return EXIT.ok;
  } catch (e) {
    return report(e, program, argv, io);
  }
}

function report(e: unknown, program: Command, argv: readonly string[], io: CliIo): number {
  const err = (line: string) => io.stderr.write(`${line}\n`);
  if (e instanceof CommanderError) {
    // --help and --version end a run successfully; commander has printed everything else.
    if (e.exitCode === 0) return EXIT.ok;
    if (e.code !== 'commander.help') err(`hint: run "${commandPath(commandFor(program, argv))} --help" for usage`);
    return EXIT.usage;
  }
  if (e instanceof CliError) {
    err(`herald: ${e.message}`);
    for (const issue of e.issues) err(`  - ${issue.path}: ${issue.message}`);
    if (e.hint) err(`hint: ${e.hint}`);
    return e.exitCode;
  }
  err(`herald: unexpected error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
  return EXIT.api;
}

/** The deepest command argv names, for the usage hint. */
function commandFor(program: Command, argv: readonly string[]): Command {
  let command = program;
  for (const arg of argv) {
    if (arg.startsWith('-')) continue;
    const sub = command.commands.find((c) => c.name() === arg || c.aliases().includes(arg));
    if (sub) command = sub;
    else if (command !== program) break;
  }
  return command;
}

/** The real process: its argv, streams and environment; sets the exit code. */
export function main(): void {
  void run(process.argv.slice(2), {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    // Lazy, so a command that never reads stdin never opens it.
    stdin: { [Symbol.asyncIterator]: () => process.stdin[Symbol.asyncIterator]() },
  }).then((code) => {
    process.exitCode = code;
  });
}

if (require.main === module) main();
