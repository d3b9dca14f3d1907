import path from 'node:path';
import { constants } from 'node:os';
import { ConfigError } from '../../shared/config';
import { onStopSignals } from '../../shared/adapters/graceful-stop';
import { EmulatorPrerequisiteError } from '../local/emulator-prerequisites';
import { LOCAL_SECRETS_KEY_FILE } from '../local/secrets-key';
import { servingBanner } from '../local/banner';
import { SecretBoxError } from '../../shared/domain/access/secret-box';
import { parseRehearsalArgs } from './args';
import { runChecks } from './check';
import { startRehearsal } from './rehearsal';

/** The scaled minute `--check` runs with unless HERALD_TIME_SCALE is set: the scheduler calls each second. */
const CHECK_TIME_SCALE = '60';

/** `npm run rehearse`: the built functions as processes of their own on the emulators, wired as `pulumi up` wires them. */
async function main(): Promise<void> {
  const note = (line: string) => process.stderr.write(`[rehearsal] ${line}\n`);
  const args = parseRehearsalArgs(process.argv.slice(2));
  const verbose = process.env.HERALD_LOG_LEVEL === 'DEBUG';
  const held: string[] = [];
  const progress = (line: string) => (!verbose && /^\[(pubsub|firestore)\] /.test(line) ? held.push(line) : note(line));
  // --check runs on its own port and scaled minutes unless told otherwise: it must not meet an `npm start` on 8080.
  const env = args.check ? { ...process.env, HERALD_TIME_SCALE: process.env.HERALD_TIME_SCALE ?? CHECK_TIME_SCALE, PORT: process.env.PORT ?? '0' } : process.env;
  const root = path.resolve(__dirname, '../..');
  let rehearsal: Awaited<ReturnType<typeof startRehearsal>>;
  try {
    rehearsal = await startRehearsal({
      root,
      env,
      processes: args.processes,
      build: args.build,
      secretsKeyFile: path.join(root, LOCAL_SECRETS_KEY_FILE),
      onProgress: progress,
      onOutput: (name, line) => process.stderr.write(`[${name}] ${line}\n`),
    });
  } catch (e) {
    for (const line of held.slice(-40)) note(line);
    throw e;
  }
  const { url } = rehearsal;
  process.stderr.write(
    [
      ...servingBanner({
        url,
        adminToken: rehearsal.adminToken,
        ingestToken: rehearsal.ingestToken,
        projectId: rehearsal.projectId,
        emulators: rehearsal.emulators,
        title: '  — the rehearsal: each function its own process',
        more: [`  processes ${rehearsal.processes.map((p) => `${p.fn}#${p.index}:${p.port}`).join(' ')}  (GET ${url}/rehearsal/processes with the admin token)`],
      }),
      'Ctrl-C stops every function process with SIGTERM (and the emulators it started) within 10 s; Ctrl-C again exits at once.',
      '',
    ].join('\n'),
  );
  if (args.check) {
    const propagationMs = rehearsal.destinationCacheMs + 1_000;
    const failure = await runChecks({ url, adminToken: rehearsal.adminToken, ingestToken: rehearsal.ingestToken, log: note, propagationMs }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    await rehearsal.stop();
    if (failure) {
      note(`check failed: ${failure.message}`);
      process.exit(1);
    }
    note('every check passed against separate function processes');
    process.exit(0);
  }
  onStopSignals(
    process,
    async (signal) => {
      note(`${signal}: stopping every function process (SIGTERM; Ctrl-C again to exit at once)`);
      await rehearsal.stop();
      note('stopped');
      process.exit(0);
    },
    (signal) => {
      note(`${signal} again: exiting now`);
      process.exit(128 + constants.signals[signal]);
    },
  );
}

main().catch((e: unknown) => {
  if (e instanceof EmulatorPrerequisiteError || e instanceof ConfigError || e instanceof SecretBoxError) process.stderr.write(`herald rehearsal: ${e.message}\n`);
  else process.stderr.write(`herald rehearsal: could not start: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
