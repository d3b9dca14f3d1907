import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import * as pulumi from '@pulumi/pulumi';
import { patient } from '../../support/patience';

/** A resource the program declared, with its inputs as the engine would receive them. */
export interface Declared {
  type: string;
  name: string;
  inputs: Record<string, unknown>;
  state: Record<string, unknown>;
}

/**
 * A bound on loading the program under the mocks in a beforeAll: seconds alone, over 30 s on a
 * loaded machine (ts-jest compiling @pulumi/gcp's types beside other suites), scaled by the load.
 */
export const programLoadTimeout = (): number => patient(90_000);

export const PROJECT = 'herald-test-project';
export const PROJECT_NUMBER = '123456789012';
export const REGION = 'europe-west1';
export const ADMIN_TOKEN = 'admin-token-0123456789';
export const INGEST_TOKEN = 'ingest-token-0123456789';
/** What random.RandomBytes answers for the generated HERALD_SECRETS_KEY (32 bytes, base64). */
export const GENERATED_SECRETS_KEY = Buffer.alloc(32, 7).toString('base64');

/** What Cloud Functions would answer for the URL of a function. */
export const functionUrl = (name: string, region = REGION, project = PROJECT) => `https://${region}-${project}.cloudfunctions.net/${name}`;

/** What Cloud Monitoring would name the email channel of an address. */
export const channelName = (project: string, email: string) => `projects/${project}/notificationChannels/${[...email].reduce((n, c) => (n * 31 + c.charCodeAt(0)) % 1e9, 7)}`;

let packageDir: string | undefined;
afterAll(() => packageDir && rmSync(packageDir, { recursive: true, force: true }));

/** A built package in miniature: package.json, its lock file and the compiled entry point (one per test file). */
export function fakePackage(): string {
  if (packageDir !== undefined) return packageDir;
  const dir = mkdtempSync(path.join(tmpdir(), 'herald-infra-'));
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'herald', main: 'dist/functions/index.js' }));
  writeFileSync(path.join(dir, 'package-lock.json'), '{}');
  mkdirSync(path.join(dir, 'dist', 'functions'), { recursive: true });
  writeFileSync(path.join(dir, 'dist', 'functions', 'index.js'), 'module.exports = {};');
  packageDir = dir;
  return dir;
}

/** The stack config of the tests: every key a string, as Pulumi hands them over. */
export function stackConfig(overrides: Record<string, string | undefined> = {}): Record<string, string> {
  const base: Record<string, string | undefined> = {
    'gcp:project': PROJECT,
    'herald:region': REGION,
    'herald:adminToken': ADMIN_TOKEN,
    'herald:ingestToken': INGEST_TOKEN,
    'herald:packageDir': fakePackage(),
    ...overrides,
  };
  return Object.fromEntries(Object.entries(base).filter((e): e is [string, string] => e[1] !== undefined));
}

/** Computed outputs a real deployment would return, so dependent resources see real-looking values. */
function computed(type: string, name: string, inputs: Record<string, unknown>): Record<string, unknown> {
  switch (type) {
    case 'gcp:serviceaccount/account:Account': {
      const email = `${String(inputs.accountId)}@${String(inputs.project)}.iam.gserviceaccount.com`;
      return { email, member: `serviceAccount:${email}`, name: `projects/${String(inputs.project)}/serviceAccounts/${email}` };
    }
    case 'gcp:cloudfunctionsv2/function:Function':
      return {
        url: functionUrl(String(inputs.name), String(inputs.location), String(inputs.project)),
        serviceConfig: { ...(inputs.serviceConfig as object), uri: `https://${String(inputs.name)}-abc123-ew.a.run.app` },
      };
    case 'gcp:storage/bucket:Bucket':
      return { name: inputs.name ?? `${name}-7f3a9c1` };
    case 'gcp:secretmanager/secretVersion:SecretVersion':
      return { version: '1' };
    case 'random:index/randomBytes:RandomBytes': {
      const bytes = Buffer.from(GENERATED_SECRETS_KEY, 'base64').subarray(0, Number(inputs.length));
      return { base64: bytes.toString('base64'), hex: bytes.toString('hex') };
    }
    case 'gcp:monitoring/notificationChannel:NotificationChannel':
      // Cloud Monitoring names a channel by a number it picks: one per address here, so a test can tell them apart.
      return { name: channelName(String(inputs.project), String((inputs.labels as Record<string, string>).email_address)) };
    case 'pulumi-nodejs:dynamic:Resource':
      return { secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' };
    default:
      return {};
  }
}

/**
 * Installs Pulumi's mocks and the stack config, recording every declaration. Call it before
 * importing the program: Pulumi reads both when the program's module runs.
 */
export async function mockPulumi(config: Record<string, string>, declared: Declared[]): Promise<void> {
  pulumi.runtime.setAllConfig(config, ['herald:adminToken', 'herald:ingestToken']);
  await pulumi.runtime.setMocks(
    {
      newResource: (args) => {
        const inputs = args.inputs as Record<string, unknown>;
        const state = { name: args.name, ...inputs, ...computed(args.type, args.name, inputs) };
        declared.push({ type: args.type, name: args.name, inputs, state });
        return { id: `${args.name}-id`, state };
      },
      call: (args) => {
        if (args.token === 'gcp:organizations/getProject:getProject') return { number: PROJECT_NUMBER, projectId: (args.inputs as { projectId: string }).projectId };
        throw new Error(`unexpected call ${args.token}`);
      },
    },
    'herald',
    'test',
    false,
  );
}

/** Waits until no declaration has arrived for a while: resources that wait on outputs register late. */
export async function settled(declared: Declared[], quietMs = 150): Promise<void> {
  let seen = -1;
  while (seen !== declared.length) {
    seen = declared.length;
    await new Promise((resolve) => setTimeout(resolve, quietMs));
  }
}

/** An Output's value (mocks resolve every output; an Output is not a promise). */
export function valueOf<T>(output: pulumi.Output<T>): Promise<T> {
  return new Promise((resolve) => output.apply((v) => (resolve(v), v)));
}
