// What starting the emulators needs: the gcloud components of each, and a Java runtime.
import { execFile } from 'node:child_process';
import { accessSync, constants as fsConstants, existsSync, realpathSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';

export class EmulatorPrerequisiteError extends Error {
  override name = 'EmulatorPrerequisiteError';
}

export type EmulatorKind = 'pubsub' | 'firestore';

export interface PrerequisiteOptions {
  env?: NodeJS.ProcessEnv;
  /** only these are checked; default both */
  emulators?: EmulatorKind[];
}

interface EmulatorSpec {
  envVar: string;
  title: string;
  /** gcloud component ids the start command needs, with the apt package that provides each */
  components: { id: string; apt: string }[];
  args: (hostPort: string, dataDir: string) => string[];
}

export const SPECS: Record<EmulatorKind, EmulatorSpec> = {
  pubsub: {
    envVar: 'PUBSUB_EMULATOR_HOST',
    title: 'Pub/Sub emulator',
    // The Pub/Sub emulator command exists only in the beta track.
    components: [
      { id: 'beta', apt: 'google-cloud-cli' },
      { id: 'pubsub-emulator', apt: 'google-cloud-cli-pubsub-emulator' },
    ],
    // A private data dir: gcloud writes env.yaml there, and the shared default would be
    // overwritten by concurrent runs.
    args: (hostPort, dataDir) => ['beta', 'emulators', 'pubsub', 'start', `--host-port=${hostPort}`, `--data-dir=${dataDir}`, '--quiet'],
  },
  firestore: {
    envVar: 'FIRESTORE_EMULATOR_HOST',
    title: 'Firestore emulator',
    components: [{ id: 'cloud-firestore-emulator', apt: 'google-cloud-cli-firestore-emulator' }],
    args: (hostPort) => ['emulators', 'firestore', 'start', `--host-port=${hostPort}`, '--quiet'],
  },
};

export const KINDS: EmulatorKind[] = ['pubsub', 'firestore'];
const MIN_JAVA = 11;

function findOnPath(name: string, env: NodeJS.ProcessEnv): string | undefined {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, fsConstants.X_OK);
      return candidate;
    } catch {
      // not here; keep looking
    }
  }
  return undefined;
}

function run(file: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ ok: boolean; output: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { env, timeout: 10_000, encoding: 'utf8' }, (error, stdout, stderr) => {
      resolve({ ok: !error, output: `${stdout}${stderr}` });
    });
  });
}

/** Same parsing as gcloud's own check (command_lib/util/java.py): "1.8.0" is 8, "17.0.1" is 17. */
export function parseJavaMajor(versionOutput: string): number | undefined {
  const legacy = /version "1\.(\d+)\./.exec(versionOutput);
  if (legacy?.[1]) return Number(legacy[1]);
  const modern = /version "([1-9]\d*)/.exec(versionOutput);
  return modern?.[1] ? Number(modern[1]) : undefined;
}

const JAVA_INSTALL = 'Java 17+ recommended: `apt-get install openjdk-17-jre-headless`';

async function javaProblem(env: NodeJS.ProcessEnv): Promise<string | undefined> {
  const java = findOnPath('java', env);
  if (!java) return `\`java\` is not on PATH; the emulators need a Java ${MIN_JAVA}+ JRE (${JAVA_INSTALL}).`;
  const { output } = await run(java, ['-version'], env);
  const major = parseJavaMajor(output);
  if (major === undefined) return `Could not read the version of ${java} (\`java -version\` said: ${output.trim().slice(0, 200)}); the emulators need Java ${MIN_JAVA}+ (${JAVA_INSTALL}).`;
  if (major < MIN_JAVA) return `${java} is Java ${major}; the emulators need Java ${MIN_JAVA}+ (${JAVA_INSTALL}).`;
  return undefined;
}

/**
 * The SDK root holds `.install/<component>.manifest` for every installed component: that is
 * what gcloud itself consults before starting an emulator. Resolving the gcloud symlink finds
 * the root without starting gcloud (~0.5 s); `gcloud info` is the fallback for odd layouts.
 */
async function findSdkRoot(gcloud: string, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  const guess = dirname(dirname(realpathSync(gcloud)));
  if (existsSync(join(guess, '.install'))) return guess;
  const { ok, output } = await run(gcloud, ['info', '--format=value(installation.sdk_root)'], env);
  const root = output.trim().split('\n')[0]?.trim();
  return ok && root && existsSync(join(root, '.install')) ? root : undefined;
}

/** Throws an EmulatorPrerequisiteError listing everything missing; resolves to the gcloud path. */
export async function checkPrerequisites(options: PrerequisiteOptions = {}): Promise<string> {
  const env = options.env ?? process.env;
  const kinds = options.emulators ?? KINDS;
  const gcloud = findOnPath('gcloud', env);
  if (!gcloud) {
    throw new EmulatorPrerequisiteError(
      '`gcloud` is not on PATH: install the Google Cloud CLI, e.g. `apt-get install google-cloud-cli` ' +
        '(from Google\'s apt repository) or see https://cloud.google.com/sdk/docs/install',
    );
  }
  const [java, sdkRoot] = await Promise.all([javaProblem(env), findSdkRoot(gcloud, env)]);
  const problems = java ? [java] : [];
  if (sdkRoot) {
    const seen = new Set<string>();
    for (const kind of kinds) {
      for (const { id, apt } of SPECS[kind].components) {
        if (seen.has(id) || existsSync(join(sdkRoot, '.install', `${id}.manifest`))) continue;
        seen.add(id);
        problems.push(
          `The gcloud component \`${id}\` (needed by the ${SPECS[kind].title}) is not installed in ${sdkRoot}: ` +
            `run \`gcloud components install ${id}\`, or for an apt-installed CLI \`apt-get install ${apt}\`.`,
        );
      }
    }
  }
  if (problems.length > 0) throw new EmulatorPrerequisiteError(problems.join('\n'));
  return gcloud;
}
