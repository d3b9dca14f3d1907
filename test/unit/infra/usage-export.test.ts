import { ENV_NAMES } from '../../../shared/config-schema';
import { USAGE_EXPORT_COLUMNS } from '../../../shared/domain/usage/usage-export';
import { heraldTopology } from '../../../shared/topology';
import { Declared, functionUrl, mockPulumi, PROJECT, REGION, settled, stackConfig, valueOf, programLoadTimeout } from './mocks';

/**
 * `herald:usageExport` on (issue 57): the program declares the BigQuery dataset and table of
 * usage rows, the runtime identity's right to write them, and the daily job that exports the
 * previous UTC day through suspension-check. Off (the default) is asserted in program.test.ts.
 */
type Program = typeof import('../../../infra/index');
const declared: Declared[] = [];
let program: Program;
const RUNTIME = `serviceAccount:herald-runtime@${PROJECT}.iam.gserviceaccount.com`;
const SCHEDULER_SA = `herald-scheduler@${PROJECT}.iam.gserviceaccount.com`;

beforeAll(async () => {
  await mockPulumi(stackConfig({ 'herald:usageExport': JSON.stringify({ location: 'EU' }) }), declared);
  program = await import('../../../infra/index');
  await settled(declared);
}, programLoadTimeout());

const ofType = (type: string) => declared.filter((r) => r.type === type);
const one = (type: string) => {
  const found = ofType(type);
  expect(found).toHaveLength(1);
  return found[0]!;
};

test('a dataset (in the location asked) and a table of usage rows, partitioned by day, its schema the export row', () => {
  const dataset = one('gcp:bigquery/dataset:Dataset');
  expect(dataset.inputs).toMatchObject({ project: PROJECT, datasetId: 'herald_usage', location: 'EU', deleteContentsOnDestroy: false });
  const table = one('gcp:bigquery/table:Table');
  expect(table.inputs).toMatchObject({ project: PROJECT, datasetId: 'herald_usage', tableId: 'usage', timePartitioning: { type: 'DAY', field: 'day' }, clusterings: ['account'], deletionProtection: true });
  const schema = JSON.parse(String(table.inputs.schema)) as { name: string; type: string; mode: string }[];
  expect(schema.map((c) => [c.name, c.type, c.mode])).toEqual([
    ['account', 'STRING', 'REQUIRED'],
    ['day', 'DATE', 'REQUIRED'],
    ...['eventsAccepted', 'eventsRefused', 'operationalEvents', 'deliveries', 'attemptsSuccess', 'attemptsHttpError', 'attemptsTimeout', 'attemptsNetwork', 'attemptsRefused', 'delivered', 'bytesSent'].map((c) => [c, 'INT64', 'REQUIRED']),
    ['modeledCostUsd', 'FLOAT64', 'REQUIRED'],
  ]);
  expect(schema).toHaveLength(USAGE_EXPORT_COLUMNS.length);
});

test("the functions' identity may write the dataset and run load jobs, no more; the BigQuery API is enabled", () => {
  const writes = one('gcp:bigquery/datasetIamMember:DatasetIamMember');
  expect(writes.inputs).toMatchObject({ project: PROJECT, datasetId: 'herald_usage', role: 'roles/bigquery.dataEditor', member: RUNTIME });
  const bigqueryRoles = ofType('gcp:projects/iAMMember:IAMMember').filter((r) => String(r.inputs.role).startsWith('roles/bigquery'));
  expect(bigqueryRoles.map((r) => [r.inputs.role, r.inputs.member])).toEqual([['roles/bigquery.jobUser', RUNTIME]]);
  expect(ofType('gcp:projects/service:Service').filter((s) => s.inputs.service === 'bigquery.googleapis.com').map((s) => s.inputs.disableOnDestroy)).toEqual([false]);
});

test("a daily job calls suspension-check's usage-export task with the scheduler identity, beside the topology's jobs", () => {
  const jobs = ofType('gcp:cloudscheduler/job:Job');
  expect(jobs.map((j) => j.inputs.name).sort()).toEqual([...heraldTopology().schedules.map((s) => s.name), 'herald-usage-export'].sort());
  const job = jobs.find((j) => j.inputs.name === 'herald-usage-export')!;
  expect(job.inputs).toMatchObject({ schedule: '15 1 * * *', timeZone: 'Etc/UTC', region: REGION });
  const target = job.inputs.httpTarget as { uri: string; httpMethod: string; oidcToken: { serviceAccountEmail: string; audience: string } };
  expect(target.uri).toBe(`${functionUrl('suspension-check')}?task=usage-export`);
  expect(target.httpMethod).toBe('POST');
  expect(target.oidcToken).toEqual({ serviceAccountEmail: SCHEDULER_SA, audience: functionUrl('suspension-check') });
});

test('the functions are told the table and its location; the stack outputs the table', async () => {
  for (const fn of ofType('gcp:cloudfunctionsv2/function:Function')) {
    expect((fn.inputs.serviceConfig as { environmentVariables: Record<string, string> }).environmentVariables).toMatchObject({
      [ENV_NAMES.usageExportTable]: `${PROJECT}.herald_usage.usage`,
      [ENV_NAMES.usageExportLocation]: 'EU',
    });
  }
  expect(await valueOf(program.usageExportTable!)).toBe(`${PROJECT}.herald_usage.usage`);
});
