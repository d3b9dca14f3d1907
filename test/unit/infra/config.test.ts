import * as pulumi from '@pulumi/pulumi';
import { InfraConfig, readInfraConfig } from '../../../infra/config';
import { planFunctions } from '../../../infra/function-plan';
import { ENV_NAMES } from '../../../shared/config-schema';
import { heraldTopology } from '../../../shared/topology';
import { PROJECT, REGION, stackConfig, valueOf } from './mocks';

/** The stack config as Pulumi would hand it to the program, then read by it. */
function read(overrides: Record<string, string | undefined>): InfraConfig {
  pulumi.runtime.setAllConfig(stackConfig(overrides), ['herald:adminToken', 'herald:ingestToken']);
  return readInfraConfig();
}

/** Reads the config and plans the functions, as the program does first; the error it stops with. */
function failure(overrides: Record<string, string | undefined>): string {
  try {
    const config = read(overrides);
    const names = { prefix: config.topicPrefix };
    planFunctions({ topology: heraldTopology(names), names, functions: config.functions, deliveryTimeoutMs: config.herald.deliveryTimeoutMs, billing: config.billing });
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error('the config was accepted');
}

test('a minimal stack: project and tokens; everything else has a default', () => {
  const config = read({ 'herald:region': undefined });
  expect(config).toMatchObject({
    project: PROJECT,
    region: 'us-central1',
    firestoreLocation: 'us-central1',
    topicPrefix: 'herald',
    publicEndpoints: true,
    createFirestoreDatabase: true,
    firestoreDeletionPolicy: 'ABANDON',
    pumpHold: false,
    functions: {},
    destinations: {},
  });
  expect(config.herald.deliveryTimeoutMs).toBe(5_000);
});

test('herald:project wins over gcp:project; structured keys are JSON', () => {
  const config = read({
    'herald:project': 'other-project',
    'herald:functions': JSON.stringify({ deliver: { maxInstances: 300, concurrency: 200 } }),
    'herald:settings': JSON.stringify({ deliveryTimeoutMs: 8000, logLevel: 'DEBUG' }),
    'herald:invokers': JSON.stringify(['user:ops@example.com']),
    'herald:publicEndpoints': 'false',
  });
  expect(config.project).toBe('other-project');
  expect(config.region).toBe(REGION);
  expect(config.functions.deliver).toEqual({ maxInstances: 300, concurrency: 200 });
  expect(config.settingsEnv).toEqual({ [ENV_NAMES.deliveryTimeoutMs]: '8000', [ENV_NAMES.logLevel]: 'DEBUG' });
  expect(config.herald.deliveryTimeoutMs).toBe(8000);
  expect(config.publicEndpoints).toBe(false);
  expect(config.invokers).toEqual(['user:ops@example.com']);
});

test.each([
  ['no project at all', { 'gcp:project': undefined }, 'herald:project: required'],
  ['a project id GCP refuses', { 'gcp:project': 'My_Project' }, 'herald:project: must be a GCP project id'],
  ['a region that is not one', { 'herald:region': 'europe' }, 'herald:region: must be a GCP region'],
  ['a topic prefix with capitals', { 'herald:topicPrefix': 'Herald' }, 'herald:topicPrefix: topicPrefix must start with a letter'],
  ['a missing admin token', { 'herald:adminToken': undefined }, 'herald:adminToken: required: pulumi config set --secret herald:adminToken'],
  ['a short ingest token', { 'herald:ingestToken': 'short' }, 'herald:ingestToken: must be at least 16 characters'],
  ['a boolean that is not', { 'herald:publicEndpoints': 'yes please' }, 'herald:publicEndpoints: publicEndpoints must be true or false'],
  ['JSON that is not', { 'herald:functions': '{deliver:' }, 'herald:functions: not valid JSON'],
  ['an unknown function', { 'herald:functions': JSON.stringify({ mailer: { memory: '1Gi' } }) }, 'herald:functions.mailer'],
  ['zero concurrency', { 'herald:functions': JSON.stringify({ deliver: { concurrency: 0 } }) }, 'herald:functions.deliver.concurrency: concurrency must be 1–1000'],
  ['an unknown size field', { 'herald:functions': JSON.stringify({ deliver: { memroy: '1Gi' } }) }, 'herald:functions.deliver'],
  ['memory without a unit', { 'herald:functions': JSON.stringify({ admin: { memory: '512' } }) }, 'herald:functions.admin.memory: memory must be a size'],
  ['a setting the program manages', { 'herald:settings': JSON.stringify({ allowLoopback: true }) }, 'herald:settings.allowLoopback'],
  // A plain setting would be a plain environment variable: the key only ever travels through Secret Manager.
  ['the secrets key as a plain setting', { 'herald:settings': JSON.stringify({ secretsKey: Buffer.alloc(32).toString('base64') }) }, 'herald:settings.secretsKey: secretsKey is set by the Pulumi program itself'],
  ['a secrets key of the wrong length', { 'herald:secretsKey': Buffer.alloc(16, 1).toString('base64') }, 'herald:secretsKey: the key decodes to 16 bytes, not 32'],
  ['a secrets key that is not base64', { 'herald:secretsKey': 'not a key!' }, 'herald:secretsKey: the key is not base64'],
  ['a setting Herald refuses', { 'herald:settings': JSON.stringify({ deliveryTimeoutMs: 'soon' }) }, 'herald:settings.deliveryTimeoutMs: HERALD_DELIVERY_TIMEOUT_MS="soon": must be a number'],
  ['settings Herald refuses together', { 'herald:settings': JSON.stringify({ claimTtlMs: 4000 }) }, 'herald:settings'],
  ['an invoker that is everyone', { 'herald:invokers': JSON.stringify(['allUsers']) }, 'herald:invokers[0]: each invoker must be an IAM member'],
  ['a destination on plain http', { 'herald:destinations': JSON.stringify({ orders: { url: 'http://hooks.example.com/x' } }) }, 'herald:destinations.orders.url: url must use https'],
  ['a destination at a loopback address', { 'herald:destinations': JSON.stringify({ orders: { url: 'https://127.0.0.1/x' } }) }, 'herald:destinations.orders.url: url points at a loopback address'],
  ['a destination with a bad spec', { 'herald:destinations': JSON.stringify({ orders: { url: 'https://a.example.com', failureMode: 'later' } }) }, 'herald:destinations.orders.failureMode'],
  ['a destination with a bad id', { 'herald:destinations': JSON.stringify({ Orders: { url: 'https://a.example.com' } }) }, 'herald:destinations.Orders'],
  ['destinations with private endpoints', { 'herald:publicEndpoints': 'false', 'herald:destinations': JSON.stringify({ orders: { url: 'https://a.example.com' } }) }, 'herald:destinations: declared destinations are registered through the admin API'],
  ['a pump that stops before its run ends', { 'herald:functions': JSON.stringify({ pump: { timeoutSeconds: 50 } }) }, 'herald:functions.pump.timeoutSeconds: 50 s must be longer than the 55 s a scheduled run lasts'],
  ['a deliver timeout past its ack deadline', { 'herald:functions': JSON.stringify({ deliver: { timeoutSeconds: 120 } }) }, 'herald:functions.deliver.timeoutSeconds: 120 s exceeds the 60 s push ack deadline'],
  ['timeouts no longer than the delivery timeout', { 'herald:settings': JSON.stringify({ deliveryTimeoutMs: 60_000 }) }, 'herald:functions.deliver.timeoutSeconds: 60 s must be longer than the delivery timeout'],
  ['concurrency on a fraction of a CPU', { 'herald:functions': JSON.stringify({ route: { cpu: '0.5', concurrency: 10 } }) }, 'herald:functions.route.concurrency: more than one request at a time needs cpu of at least 1'],
  ['more minimum than maximum instances', { 'herald:functions': JSON.stringify({ admin: { minInstances: 3, maxInstances: 2 } }) }, 'herald:functions.admin.minInstances: must not exceed maxInstances'],
  ['a billing mode that is not one', { 'herald:billing': 'always-on' }, 'herald:billing: billing must be request (CPU only during requests, a fee per request) or instance'],
  ['a function\'s billing mode that is not one', { 'herald:functions': JSON.stringify({ deliver: { billing: 'cpu-always' } }) }, 'herald:functions.deliver.billing: billing must be request'],
  ['instance-based billing on a fraction of a CPU', { 'herald:functions': JSON.stringify({ pump: { billing: 'instance', cpu: '0.5' } }) }, 'herald:functions.pump.billing: instance-based billing (CPU always allocated) needs cpu of at least 1'],
  ['no delivery retention', { 'herald:settings': JSON.stringify({ deliveryRetentionDays: 0 }) }, 'herald:settings.deliveryRetentionDays: HERALD_DELIVERY_RETENTION_DAYS'],
  ['a destination topic given as a prefix', { 'herald:destinationTopics': JSON.stringify(['projects/acme-prod/topics/acme-*']) }, 'herald:destinationTopics[0]: each must be a topic, projects/PROJECT/topics/TOPIC'],
  ["a destination topic named like Herald's own", { 'herald:destinationTopics': JSON.stringify(['projects/acme-prod/topics/herald-events']) }, "herald:destinationTopics[0]: topic projects/acme-prod/topics/herald-events is named like one of Herald's own topics"],
  ["a declared destination at one of Herald's own topics", { 'herald:destinations': JSON.stringify({ loop: { topic: 'projects/other-project/topics/herald-dead-letter' } }) }, "herald:destinations.loop.topic: topic projects/other-project/topics/herald-dead-letter is named like one of Herald's own"],
  ['a declared dedicated destination without its lane', { 'herald:destinations': JSON.stringify({ orders: { url: 'https://a.example.com', lane: 'dedicated' } }) }, 'herald:destinations.orders.lane: a dedicated lane is created by the program: add "orders" to herald:dedicatedLanes'],
  ['a dedicated lane for no destination id', { 'herald:dedicatedLanes': JSON.stringify(['Orders']) }, 'herald:dedicatedLanes[0]: each must be a destination id as Herald names it'],
  ['a dedicated lane listed twice', { 'herald:dedicatedLanes': JSON.stringify(['orders', 'orders']) }, 'herald:dedicatedLanes[1]: orders is listed twice'],
  ['the lanes as a plain setting', { 'herald:settings': JSON.stringify({ laneProvisioning: 'runtime' }) }, 'herald:settings.laneProvisioning: laneProvisioning is set by the Pulumi program itself'],
  ['a default account topic Herald refuses', { 'herald:settings': JSON.stringify({ defaultAccountTopics: 'projects/x/topics/y' }) }, 'herald:settings.defaultAccountTopics: HERALD_DEFAULT_ACCOUNT_TOPICS="projects/x/topics/y": entry 1 (projects/x/topics/y): an allowed topic is'],
  [
    'a delivery retention the reconciler could outwait',
    { 'herald:settings': JSON.stringify({ deliveryRetentionDays: 2, reconcileAfterMs: 86_400_000 }) },
    'herald:settings.deliveryRetentionDays: HERALD_DELIVERY_RETENTION_DAYS must be longer than 4 × HERALD_RECONCILE_AFTER_MS (4 days)',
  ],
])('%s fails with the field named', (_what, overrides, message) => {
  const error = failure(overrides);
  expect(error).toMatch(/^invalid Pulumi config:\n/);
  expect(error).toContain(message);
});

describe('billing mode (herald:billing, herald:functions.<name>.billing)', () => {
  const plan = (overrides: Record<string, string | undefined>) => {
    const config = read(overrides);
    const names = { prefix: config.topicPrefix };
    const plans = planFunctions({ topology: heraldTopology(names), names, functions: config.functions, deliveryTimeoutMs: config.herald.deliveryTimeoutMs, billing: config.billing });
    return Object.fromEntries(plans.map((p) => [p.name, p.billing]));
  };

  test('request-based unless the stack says otherwise', () => {
    expect(new Set(Object.values(plan({})))).toEqual(new Set(['request']));
  });

  test('the stack sets every function\'s; a function may name its own', () => {
    const modes = plan({ 'herald:billing': 'instance', 'herald:functions': JSON.stringify({ admin: { billing: 'request' } }) });
    expect(modes.admin).toBe('request');
    expect(modes.deliver).toBe('instance');
    expect(modes.ingest).toBe('instance');
    expect(plan({ 'herald:functions': JSON.stringify({ deliver: { billing: 'instance' } }) })).toMatchObject({ deliver: 'instance', route: 'request', pump: 'request' });
  });
});

test('HERALD_DELIVERY_RETENTION_DAYS: 30 by default, a stack setting (herald:settings.deliveryRetentionDays) to every function', () => {
  expect(read({}).herald.deliveryRetentionDays).toBe(30);
  const config = read({ 'herald:settings': JSON.stringify({ deliveryRetentionDays: 90 }) });
  expect(config.herald.deliveryRetentionDays).toBe(90);
  expect(config.settingsEnv).toEqual({ HERALD_DELIVERY_RETENTION_DAYS: '90' });
});

test('every problem is listed at once', () => {
  const error = failure({ 'herald:region': 'nowhere', 'herald:adminToken': 'short' });
  expect(error).toContain('herald:region');
  expect(error).toContain('herald:adminToken');
});

test('the program itself stops on a bad config, before declaring anything', async () => {
  pulumi.runtime.setAllConfig(stackConfig({ 'herald:functions': JSON.stringify({ deliver: { concurrency: 0 } }) }), ['herald:adminToken', 'herald:ingestToken']);
  await expect(jest.isolateModulesAsync(async () => void (await import('../../../infra/index')))).rejects.toThrow('herald:functions.deliver.concurrency');
});

describe('herald:secretsKey', () => {
  test('optional: without it the program generates one (infra/index.ts)', () => {
    expect(read({}).secrets.secretsKey).toBeUndefined();
  });

  test("a stack's own keyring is read as a secret, for Secret Manager only (never a plain setting)", async () => {
    const keyring = [Buffer.alloc(32, 1), Buffer.alloc(32, 2)].map((k) => k.toString('base64')).join(',');
    const config = read({ 'herald:secretsKey': keyring });
    expect(await valueOf(config.secrets.secretsKey!)).toBe(keyring);
    expect(await pulumi.isSecret(config.secrets.secretsKey!)).toBe(true);
    expect(JSON.stringify(config.settingsEnv)).not.toContain(keyring);
    expect(config.herald.secretsKey).toBeUndefined();
  });

  test('a bad key is refused without its value in the message', () => {
    const key = 'c2hvcnQta2V5LW9mLTE2Yg==';
    const error = failure({ 'herald:secretsKey': key });
    expect(error).toContain('herald:secretsKey');
    expect(error).not.toContain(key);
  });
});

describe('topic destinations and dedicated lanes (issue 50)', () => {
  test("a declared topic destination's topic joins the default account's allowed topics, after the stack's own", () => {
    const config = read({
      'herald:settings': JSON.stringify({ defaultAccountTopics: 'projects/ops-prod/topics/ops-*' }),
      'herald:destinations': JSON.stringify({ audit: { topic: 'projects/ops-prod/topics/audit' }, orders: { url: 'https://hooks.example.com/orders' } }),
    });
    expect(config.settingsEnv[ENV_NAMES.defaultAccountTopics]).toBe('projects/ops-prod/topics/ops-*,projects/ops-prod/topics/audit');
    expect(config.herald.defaultAccountTopics).toEqual(['projects/ops-prod/topics/ops-*', 'projects/ops-prod/topics/audit']);
    expect(read({}).settingsEnv).not.toHaveProperty(ENV_NAMES.defaultAccountTopics);
  });

  test('the functions learn the program makes the dedicated lanes: declared, with the destinations listed', () => {
    const config = read({ 'herald:dedicatedLanes': JSON.stringify(['orders', 'acme_orders']), 'herald:destinationTopics': JSON.stringify(['projects/acme-prod/topics/orders']) });
    expect(config.herald).toMatchObject({ laneProvisioning: 'declared', dedicatedLanes: ['orders', 'acme_orders'] });
    expect(config.destinationTopics).toEqual(['projects/acme-prod/topics/orders']);
    expect(read({}).herald).toMatchObject({ laneProvisioning: 'declared' });
  });
});

describe('herald:usageExport (issue 57)', () => {
  test('off unless set; true takes the defaults: <prefix>_usage.usage in the stack region, at 01:15 UTC', () => {
    expect(read({}).usageExport).toBeUndefined();
    expect(read({ 'herald:usageExport': 'false' }).usageExport).toBeUndefined();
    expect(read({ 'herald:usageExport': 'true', 'herald:topicPrefix': 'acme-herald' }).usageExport).toEqual({ dataset: 'acme_herald_usage', table: 'usage', location: REGION, schedule: '15 1 * * *' });
    expect(read({ 'herald:usageExport': JSON.stringify({ dataset: 'billing', table: 'herald', schedule: '0 3 * * *' }) }).usageExport).toEqual({ dataset: 'billing', table: 'herald', location: REGION, schedule: '0 3 * * *' });
  });

  test('a bad field is named; the table is the program\'s, not a tunable setting', () => {
    expect(failure({ 'herald:usageExport': JSON.stringify({ dataset: 'has-hyphens' }) })).toContain('herald:usageExport.dataset: dataset must be a BigQuery dataset id');
    expect(failure({ 'herald:usageExport': JSON.stringify({ schedule: 'daily' }) })).toContain('herald:usageExport.schedule: schedule must be a Unix cron');
    expect(failure({ 'herald:usageExport': JSON.stringify({ bucket: 'x' }) })).toContain('unknown field bucket');
    expect(failure({ 'herald:settings': JSON.stringify({ usageExportTable: 'p-roject.d.t' }) })).toContain('usageExportTable is set by the Pulumi program itself');
  });
});
