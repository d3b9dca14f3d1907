// Prerequisite and failure-path checks of the emulator harness, against a fake SDK in a
// temp dir: nothing real is uninstalled or started.
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, startEmulators } from '../../apps/local/emulators';
import { checkPrerequisites, type EmulatorKind, EmulatorPrerequisiteError, parseJavaMajor } from '../../apps/local/emulator-prerequisites';
import { groupAlive } from '../../apps/local/emulator-processes';

const ALL_COMPONENTS = ['beta', 'pubsub-emulator', 'cloud-firestore-emulator'];
const JAVA_17 = 'openjdk version "17.0.15" 2025-04-15\nOpenJDK Runtime Environment (build 17.0.15+6)';

let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'herald-fake-sdk-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

interface Fake {
  gcloud?: string; // shell body of bin/gcloud; undefined = no gcloud
  components?: string[];
  java?: string; // what `java -version` prints; undefined = no java
  systemPath?: boolean; // append /usr/bin:/bin (for `sleep`); only when java is faked too
}

let counter = 0;
function fakeEnv(fake: Fake): NodeJS.ProcessEnv {
  const dir = join(root, String(counter++));
  const bins: string[] = [join(dir, 'empty')];
  mkdirSync(bins[0] as string, { recursive: true });
  if (fake.gcloud !== undefined) {
    const sdkBin = join(dir, 'sdk', 'bin');
    mkdirSync(sdkBin, { recursive: true });
    mkdirSync(join(dir, 'sdk', '.install'));
    for (const id of fake.components ?? ALL_COMPONENTS) writeFileSync(join(dir, 'sdk', '.install', `${id}.manifest`), '');
    writeFileSync(join(sdkBin, 'gcloud'), `#!/bin/sh\n${fake.gcloud}\n`);
    chmodSync(join(sdkBin, 'gcloud'), 0o755);
    bins.push(sdkBin);
  }
  if (fake.java !== undefined) {
    const javaBin = join(dir, 'java-bin');
    mkdirSync(javaBin);
    writeFileSync(join(javaBin, 'java'), `#!/bin/sh\n/bin/cat >&2 <<'EOF'\n${fake.java}\nEOF\n`);
    chmodSync(join(javaBin, 'java'), 0o755);
    bins.push(javaBin);
  }
  if (fake.systemPath) bins.push('/usr/bin', '/bin');
  return { PATH: bins.join(':'), HOME: root };
}

async function prerequisiteError(env: NodeJS.ProcessEnv, emulators?: EmulatorKind[]): Promise<string> {
  const error: unknown = await checkPrerequisites({ env, emulators }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(EmulatorPrerequisiteError);
  return (error as Error).message;
}

describe('checkPrerequisites', () => {
  it.each<[string, Fake, RegExp[]]>([
    ['no gcloud on PATH', { java: JAVA_17 }, [/`gcloud` is not on PATH/, /apt-get install google-cloud-cli`/, /cloud\.google\.com\/sdk\/docs\/install/]],
    ['no java on PATH', { gcloud: 'exit 0' }, [/`java` is not on PATH/, /Java 11\+/, /apt-get install openjdk-17-jre-headless/]],
    ['Java 8', { gcloud: 'exit 0', java: 'java version "1.8.0_292"' }, [/is Java 8; the emulators need Java 11\+/, /openjdk-17-jre-headless/]],
    ['Java 9', { gcloud: 'exit 0', java: 'java version "9.0.4"' }, [/is Java 9;/]],
    ['unreadable java version', { gcloud: 'exit 0', java: 'Error: broken JVM' }, [/Could not read the version/, /broken JVM/]],
    [
      'no pubsub-emulator component',
      { gcloud: 'exit 0', java: JAVA_17, components: ['beta', 'cloud-firestore-emulator'] },
      [/`pubsub-emulator` \(needed by the Pub\/Sub emulator\)/, /gcloud components install pubsub-emulator`/, /apt-get install google-cloud-cli-pubsub-emulator`/],
    ],
    [
      'no firestore component',
      { gcloud: 'exit 0', java: JAVA_17, components: ['beta', 'pubsub-emulator'] },
      [/`cloud-firestore-emulator`/, /gcloud components install cloud-firestore-emulator`/, /apt-get install google-cloud-cli-firestore-emulator`/],
    ],
    ['no beta component', { gcloud: 'exit 0', java: JAVA_17, components: ['pubsub-emulator', 'cloud-firestore-emulator'] }, [/gcloud components install beta`/]],
    ['no java and no components: both listed', { gcloud: 'exit 0', components: [] }, [/`java` is not on PATH/, /pubsub-emulator/, /cloud-firestore-emulator/]],
  ])('%s', async (_name, fake, patterns) => {
    const message = await prerequisiteError(fakeEnv(fake));
    for (const pattern of patterns) expect(message).toMatch(pattern);
  });

  it('checks only the components of the emulators asked for', async () => {
    const env = fakeEnv({ gcloud: 'exit 0', java: JAVA_17, components: ['cloud-firestore-emulator'] });
    await expect(checkPrerequisites({ env, emulators: ['firestore'] })).resolves.toMatch(/sdk\/bin\/gcloud$/);
    expect(await prerequisiteError(env, ['pubsub'])).toMatch(/pubsub-emulator/);
  });

  it('passes with gcloud, Java 17 and every component', async () => {
    await expect(checkPrerequisites({ env: fakeEnv({ gcloud: 'exit 0', java: JAVA_17 }) })).resolves.toMatch(/gcloud$/);
  });

  // Starting gcloud takes ~0.5 s (seconds on a busy machine): the SDK root is found from where gcloud lives instead.
  it('finds the SDK root beside gcloud without running it', async () => {
    const ran = join(root, `ran-${counter}`);
    await expect(checkPrerequisites({ env: fakeEnv({ gcloud: `echo ran > ${ran}`, java: JAVA_17 }) })).resolves.toMatch(/gcloud$/);
    expect(existsSync(ran)).toBe(false);
  });

  it.each<[string, number | undefined]>([
    [JAVA_17, 17],
    ['openjdk version "21" 2023-09-19', 21],
    ['openjdk version "11.0.2" 2019-01-15', 11],
    ['java version "1.8.0_292"', 8],
    ['Picked up JAVA_TOOL_OPTIONS: -Xmx1g\nopenjdk version "25" 2025-09-16', 25],
    ['no version here', undefined],
  ])('parseJavaMajor(%j) = %p', (output, major) => {
    expect(parseJavaMajor(output)).toBe(major);
  });
});

describe('startEmulators failure paths (fake gcloud)', () => {
  it('checks prerequisites before spawning anything', async () => {
    await expect(startEmulators({ env: fakeEnv({ java: JAVA_17 }) })).rejects.toBeInstanceOf(EmulatorPrerequisiteError);
  });

  it('reuse of a host that does not answer names the variable and the host, without needing gcloud', async () => {
    const deadHost = `127.0.0.1:${await freePort()}`;
    const env = { ...fakeEnv({}), PUBSUB_EMULATOR_HOST: deadHost, FIRESTORE_EMULATOR_HOST: deadHost };
    const error: unknown = await startEmulators({ env, reusePatienceMs: 500 }).catch((e: unknown) => e);
    expect(error).not.toBeInstanceOf(EmulatorPrerequisiteError);
    const message = (error as Error).message;
    expect(message).toContain(`no Pub/Sub emulator answered at http://${deadHost}/ within 0.5 s`);
    expect(message).toContain(`PUBSUB_EMULATOR_HOST=${deadHost}`);
    expect(message).toContain(`FIRESTORE_EMULATOR_HOST=${deadHost}`);
    expect(message).toMatch(/Unset PUBSUB_EMULATOR_HOST .* or start the emulator/);
  });

  it('an early exit reports the last lines of output', async () => {
    const env = fakeEnv({ gcloud: 'echo "ERROR: (gcloud) something precise went wrong" >&2\nexit 3', java: JAVA_17 });
    const error = (await startEmulators({ env }).catch((e: unknown) => e)) as Error;
    expect(error.message).toMatch(/Pub\/Sub emulator .* exited early \(code 3\)/);
    expect(error.message).toMatch(/Firestore emulator .* exited early \(code 3\)/);
    expect(error.message).toContain('something precise went wrong');
  });

  it('a port reported taken is retried on other ports, then reported', async () => {
    const env = fakeEnv({ gcloud: 'echo "java.net.BindException: Address already in use" >&2\nexec sleep 30', java: JAVA_17, systemPath: true });
    const lines: string[] = [];
    const error = (await startEmulators({ env, log: (line) => lines.push(line) }).catch((e: unknown) => e)) as Error;
    expect(error.message).toMatch(/could not bind 127\.0\.0\.1:\d+/);
    expect(error.message).toContain('BindException');
    expect(lines.filter((line) => /was taken; retrying the Pub\/Sub emulator/.test(line))).toHaveLength(2);
  });

  it('a child that never answers is killed at the timeout', async () => {
    // Each fake emulator leads a process group of its own (detached) and notes its id; `exec` keeps it.
    const groups = join(root, `groups-${counter}`);
    const env = fakeEnv({ gcloud: `echo $$ >> ${groups}\necho "starting forever"\nexec sleep 30`, java: JAVA_17, systemPath: true });
    const error = (await startEmulators({ env, timeoutMs: 1500 }).catch((e: unknown) => e)) as Error;
    expect(error.message).toMatch(/did not answer at http:\/\/127\.0\.0\.1:\d+\/ within 1500 ms/);
    expect(error.message).toContain('starting forever');
    // Killed before the error came, not left to its 30 s sleep.
    const pgids = readFileSync(groups, 'utf8').trim().split('\n').map(Number);
    expect(pgids).toHaveLength(2);
    for (const pgid of pgids) expect(groupAlive(pgid)).toBe(false);
  });
});
