import { ENV_NAMES } from '../../../shared/config-schema';
import { heraldTopology } from '../../../shared/topology';
import { planFunctions } from '../../../infra/function-plan';
import { processEnvironment, PLATFORM_VARIABLES, REHEARSAL_DEVIATIONS, rehearsalEnvironment, settingsFromEnv } from '../../../apps/rehearsal/env';
import { Declared, mockPulumi, PROJECT, settled, stackConfig, programLoadTimeout } from './mocks';

/**
 * The rehearsal's wiring has one source: every function's environment as the Pulumi program
 * declares it equals the rehearsal's, variable for variable, but for the deviations
 * REHEARSAL_DEVIATIONS names (and what Cloud Run sets itself).
 */
const declared: Declared[] = [];
const SETTINGS = { logLevel: 'DEBUG', deliveryTimeoutMs: 4000 };
const email = (role: string) => `herald-${role}@${PROJECT}.iam.gserviceaccount.com`;

beforeAll(async () => {
  await mockPulumi(stackConfig({ 'herald:settings': JSON.stringify(SETTINGS), 'herald:dedicatedLanes': JSON.stringify(['orders']) }), declared);
  await import('../../../infra/index');
  await settled(declared);
}, programLoadTimeout());

test("the program's function environment and the rehearsal's differ only where the rehearsal says why", () => {
  const functions = declared.filter((r) => r.type === 'gcp:cloudfunctionsv2/function:Function');
  expect(functions).toHaveLength(7);
  // The rehearsal reads the stack's settings from its shell: the same settings, as variables.
  const shell = { HERALD_LOG_LEVEL: 'DEBUG', HERALD_DELIVERY_TIMEOUT_MS: '4000', HERALD_PROJECT_ID: 'not-taken', PATH: '/bin' };
  const settingsEnv = settingsFromEnv(shell);
  expect(settingsEnv).toEqual({ [ENV_NAMES.logLevel]: 'DEBUG', [ENV_NAMES.deliveryTimeoutMs]: '4000' });
  const shared = rehearsalEnvironment({
    settingsEnv,
    project: PROJECT,
    topicPrefix: 'herald',
    dedicatedLanes: ['orders'],
    identities: { push: email('pusher'), scheduler: email('scheduler') },
    proxyUrl: 'http://127.0.0.1:8080',
    secrets: { adminToken: 'a'.repeat(20), ingestToken: 'i'.repeat(20), secretsKey: Buffer.alloc(32).toString('base64') },
    pushToken: 'p'.repeat(20),
    emulators: { pubsubHost: '127.0.0.1:1', firestoreHost: '127.0.0.1:2' },
  });
  const plans = planFunctions({ topology: heraldTopology(), names: { prefix: 'herald' }, functions: {}, deliveryTimeoutMs: 4000 });
  for (const fn of functions) {
    const serviceConfig = fn.inputs.serviceConfig as { environmentVariables: Record<string, string>; secretEnvironmentVariables: { key: string }[] };
    const plan = plans.find((p) => p.name === fn.inputs.name)!;
    const rehearsal = processEnvironment(shared, plan, 9999, 'rehearsal-1');
    const program = serviceConfig.environmentVariables;
    const keys = new Set([...Object.keys(program), ...Object.keys(rehearsal)]);
    const differing = [...keys].filter((k) => program[k] !== rehearsal[k]).sort();
    const explained = new Set([...Object.keys(REHEARSAL_DEVIATIONS), ...PLATFORM_VARIABLES]);
    expect({ fn: plan.name, unexplained: differing.filter((k) => !explained.has(k)) }).toEqual({ fn: plan.name, unexplained: [] });
    // The secrets the program hands over by reference are exactly the rehearsal's plain ones.
    for (const { key } of serviceConfig.secretEnvironmentVariables) expect(REHEARSAL_DEVIATIONS).toHaveProperty([key]);
    expect(rehearsal.NODE_OPTIONS).toBe(program.NODE_OPTIONS);
    expect(rehearsal.FUNCTION_TARGET).toBe(plan.name);
  }
});

test('a deviation not named is refused', () => {
  expect(Object.keys(REHEARSAL_DEVIATIONS)).toEqual(
    expect.arrayContaining([ENV_NAMES.pushAuth, ENV_NAMES.pushToken, ENV_NAMES.pushBaseUrl, ENV_NAMES.allowLoopback, ENV_NAMES.adminToken, ENV_NAMES.ingestToken, ENV_NAMES.secretsKey]),
  );
});
