import { constants } from 'node:os';
import { ConfigError } from '../../shared/config';
import { onStopSignals } from '../../shared/adapters/graceful-stop';
import { EmulatorPrerequisiteError } from './emulator-prerequisites';
import { startLocalStack } from './stack';
import { parseLocalArgs } from './args';
import { servingBanner } from './banner';
import { LOCAL_SECRETS_KEY_FILE } from './secrets-key';
import { SecretBoxError } from '../../shared/domain/access/secret-box';

/** `npm start`: the whole pipeline on this machine, until Ctrl-C. */
async function main(): Promise<void> {
  const note = (line: string) => process.stderr.write(`[herald] ${line}\n`);
  // The emulators' own chatter is kept back and shown only if start-up fails, or with DEBUG logs.
  const verbose = process.env.HERALD_LOG_LEVEL === 'DEBUG';
  const emulatorLines: string[] = [];
  const progress = (line: string) => {
    if (!verbose && /^\[(pubsub|firestore)\] /.test(line)) emulatorLines.push(line);
    else note(line);
  };
  const { instances } = parseLocalArgs(process.argv.slice(2));
  let stack: Awaited<ReturnType<typeof startLocalStack>>;
  try {
    stack = await startLocalStack({ onProgress: progress, secretsKeyFile: LOCAL_SECRETS_KEY_FILE, instances });
  } catch (e) {
    for (const line of emulatorLines.slice(-40)) note(line);
    throw e;
  }
  const { config, url, emulators } = stack;
  process.stderr.write(
    [
      ...servingBanner({
        url,
        adminToken: config.adminToken,
        ingestToken: config.ingestToken,
        projectId: config.projectId,
        emulators,
        more: instances > 1 ? [`  instances ${instances}, each with its own caches, limiter and counters; each function's requests go to them in turn`] : [],
      }),
      'Try:  npx herald destinations add my-hook --url http://127.0.0.1:9000/hook',
      '      npx herald publish --type com.example.hello --source /demo --data \'{"hi":1}\'',
      'Ctrl-C stops Herald (and the emulators it started) within 10 s; Ctrl-C again exits at once.',
      '',
    ].join('\n'),
  );
  onStopSignals(
    process,
    async (signal) => {
      note(`${signal}: stopping — requests under way finish first (Ctrl-C again to exit at once)`);
      await stack.stop();
      note('stopped');
      process.exit(0);
    },
    // Nothing accepted is lost this way either: pushes not yet answered come again and an
    // expired claim is taken again; the 'exit' hook in emulator-processes.ts kills the emulators Herald started.
    (signal) => {
      note(`${signal} again: exiting now, without waiting for requests under way`);
      process.exit(128 + constants.signals[signal]);
    },
  );
}

main().catch((e: unknown) => {
  if (e instanceof EmulatorPrerequisiteError || e instanceof ConfigError || e instanceof SecretBoxError) {
    process.stderr.write(`herald: ${e.message}\n`);
  } else {
    process.stderr.write(`herald: could not start: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  }
  process.exit(1);
});
