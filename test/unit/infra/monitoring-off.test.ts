import { Declared, mockPulumi, settled, stackConfig, programLoadTimeout } from './mocks';

/** `herald:monitoring false`: the program declares nothing of Cloud Monitoring, even with channels configured. */

type Program = typeof import('../../../infra/index');
const declared: Declared[] = [];
let program: Program;

beforeAll(async () => {
  await mockPulumi(stackConfig({ 'herald:monitoring': 'false', 'herald:alertEmails': JSON.stringify(['oncall@example.com']) }), declared);
  program = await import('../../../infra/index');
  await settled(declared);
}, programLoadTimeout());

test('no dashboard, no alert policy, no notification channel; the rest of Herald as ever', () => {
  const monitoring = declared.filter((r) => r.type.startsWith('gcp:monitoring/'));
  expect(monitoring.map((r) => r.type)).toEqual([]);
  expect(declared.filter((r) => r.type === 'herald:monitoring:HeraldMonitoring')).toEqual([]);
  expect(program.monitoringResources).toBeUndefined();
  // The run did declare the stack: the absence above is the switch, not an empty program.
  expect(declared.filter((r) => r.type === 'gcp:cloudfunctionsv2/function:Function').length).toBeGreaterThan(5);
});
