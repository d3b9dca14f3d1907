import { MemoryUsageTable } from '../../shared/adapters/bigquery/memory-usage-table';
import { exportUsageDay, UsageExportDeps } from '../../shared/app/usage/usage-export';
import { UsageDay } from '../../shared/domain/usage/usage';
import { ATTEMPT_COLUMNS, UsageExportRow } from '../../shared/domain/usage/usage-export';
import { eventually } from '../support/eventually';
import { Receiver } from '../support/receiver';
import { startTestStack, TestStack } from '../support/stack';

/**
 * Issue 57, the usage export: usage counted for real (POST /ingest, deliveries to a loopback
 * receiver, the counters flushed to the Firestore emulator) is exported with the export's use
 * case into the warehouse port, held in memory (BigQuery has no emulator: the adapter's load job
 * is not run here), and each row equals GET /admin/accounts/{id}/usage's row of that day. A day
 * exported again replaces its rows, never doubles them. The stack runs with a non-default
 * HERALD_OPERATIONAL_EVENT_PREFIX: usage counts the operational events under that prefix only.
 */
const PROJECT = `usage-export-${Date.now().toString(36)}`;
const PREFIX = 'acme.ops.';
const SOURCE = '/usage-export-test';
const ACCOUNTS = ['export-a', 'export-b'] as const;
const receiver = new Receiver(() => ({ status: 204 }));
let stack: TestStack;

beforeAll(async () => {
  await receiver.start();
  // Accepted events are counted when the reconciler removes their journal batches: a short grace, so a row is whole in seconds (a handful of events: no first attempt is that slow).
  stack = await startTestStack(PROJECT, { HERALD_OPERATIONAL_EVENT_PREFIX: PREFIX, HERALD_ACCOUNT_PUBLISH_QUOTA: '100000', HERALD_RECONCILE_AFTER_MS: '3000', HERALD_RECONCILE_INTERVAL_MS: '500' });
  for (const account of ACCOUNTS) {
    expect((await stack.admin('POST', '/accounts', { id: account, name: account })).status).toBe(201);
    const put = await stack.admin('PUT', `/accounts/${account}/destinations/all`, { url: `${receiver.url}/${account}`, eventTypes: ['com.example.export.*', 'acme.ops.*', 'herald.*'] });
    expect(put.status).toBe(201);
  }
}, 60_000);

afterAll(async () => {
  await stack?.stop({ purge: true });
  await receiver.stop();
});

const today = () => new Date().toISOString().slice(0, 10);
/** The export run as the next day's scheduled job would: its clock a day on, so "yesterday" is today's counts. */
const dayAfter = { now: () => new Date(Date.now() + 86_400_000) };
const exportDeps = (warehouse: MemoryUsageTable): UsageExportDeps => ({ counters: stack.runtime.counters, warehouse, clock: dayAfter, log: stack.runtime.log });

/** Sends `types` as events of `account` in one batch; every one accepted. */
async function publish(account: string, types: string[], tag: string): Promise<void> {
  const events = types.map((type, i) => ({ specversion: '1.0', id: `${account}-${tag}-${i}`, source: SOURCE, type, heraldaccount: account, datacontenttype: 'application/json', data: { i } }));
  const res = await stack.ingest({ 'content-type': 'application/cloudevents-batch+json' }, JSON.stringify(events));
  expect(res.status).toBe(202);
  expect((res.body as { accepted: string[] }).accepted).toHaveLength(types.length);
}

/** The admin API's row of `day`, once every event sent is counted delivered (the counters flush within a second). */
async function settledRow(account: string, day: string, delivered: number): Promise<UsageDay> {
  return eventually(
    `${account}: ${delivered} delivered in its usage`,
    async () => {
      const res = await stack.admin('GET', `/accounts/${account}/usage?from=${day}&to=${day}`);
      expect(res.status).toBe(200);
      const [row] = (res.body as { days: UsageDay[] }).days;
      return row && row.delivered === delivered && row.eventsAccepted === delivered ? row : undefined;
    },
    60_000,
    250,
  );
}

/** The admin API's row as the table holds it: `attempts` a column per outcome. */
function asExported(account: string, row: UsageDay): UsageExportRow {
  const { date, attempts, ...counts } = row;
  return { account, day: date, ...counts, ...Object.fromEntries(Object.entries(ATTEMPT_COLUMNS).map(([outcome, column]) => [column, attempts[outcome] ?? 0])) } as UsageExportRow;
}

const SENT = {
  'export-a': ['com.example.export.created', 'acme.ops.destination.failing', 'herald.destination.failing', 'com.example.export.created', 'acme.ops.delivery.dead'],
  'export-b': ['com.example.export.updated', 'com.example.export.updated', 'acme.ops.account.quota-exceeded'],
} as const;

test("the exported rows are each account's usage of the day as the admin API answers it; operational events counted under the configured prefix", async () => {
  for (const account of ACCOUNTS) await publish(account, [...SENT[account]], 'first');
  const day = today();
  const rows = new Map<string, UsageDay>();
  for (const account of ACCOUNTS) rows.set(account, await settledRow(account, day, SENT[account].length));
  // Only acme.ops.* are Herald's operational events here: herald.destination.failing is an ordinary type under this prefix.
  expect(rows.get('export-a')!.operationalEvents).toBe(2);
  expect(rows.get('export-b')!.operationalEvents).toBe(1);

  const table = new MemoryUsageTable();
  const outcome = await exportUsageDay(exportDeps(table), { task: 'usage-export' });
  expect(outcome).toEqual({ kind: 'ok', body: { day, rows: 2, target: 'memory' } });
  expect(table.rows()).toEqual(ACCOUNTS.map((account) => asExported(account, rows.get(account)!)));
  expect(table.rows().every((r) => r.attemptsSuccess === r.delivered && r.modeledCostUsd > 0)).toBe(true);
}, 120_000);

test('a day exported again replaces its rows: never doubled, later counts in, a failed export changing nothing', async () => {
  const day = today();
  const table = new MemoryUsageTable();
  await exportUsageDay(exportDeps(table), { task: 'usage-export', day });
  const first = table.rows();
  await exportUsageDay(exportDeps(table), { task: 'usage-export', day });
  expect(table.rows()).toEqual(first);
  expect(table.replaces).toBe(2);

  // More of export-a's usage the same day: the next export holds it, in place of the row before.
  await publish('export-a', ['com.example.export.created', 'acme.ops.destination.reactivated'], 'second');
  const later = await settledRow('export-a', day, SENT['export-a'].length + 2);
  table.failNext = new Error('the load job failed');
  await expect(exportUsageDay(exportDeps(table), { task: 'usage-export', day })).rejects.toThrow('the load job failed');
  expect(table.rows()).toEqual(first);
  await exportUsageDay(exportDeps(table), { task: 'usage-export', day });
  expect(table.rows()).toEqual([asExported('export-a', later), first[1]]);
  expect(later.operationalEvents).toBe(3);
}, 120_000);

test('a day without usage exports no row; today is refused, being incomplete; a bad day is named', async () => {
  const table = new MemoryUsageTable();
  expect(await exportUsageDay(exportDeps(table), { task: 'usage-export', day: '2020-02-29' })).toEqual({ kind: 'ok', body: { day: '2020-02-29', rows: 0, target: 'memory' } });
  expect(table.rows()).toEqual([]);
  const now = { ...exportDeps(table), clock: { now: () => new Date() } };
  const refused = await exportUsageDay(now, { task: 'usage-export', day: today() });
  expect(refused).toMatchObject({ kind: 'invalid', body: { issues: [{ path: 'day', message: expect.stringContaining('is not over yet') as unknown }] } });
  expect(await exportUsageDay(now, { task: 'usage-export', day: '2026-02-30' })).toMatchObject({ kind: 'invalid', body: { issues: [{ path: 'day' }] } });
  expect(table.replaces).toBe(1);
});

test("suspension-check's usage-export task: refused with what to do where no table is configured; the check itself as ever", async () => {
  const call = async (query: string) => {
    const res = await fetch(`${stack.url}/suspension-check?token=${encodeURIComponent(stack.config.pushToken!)}&${query}`, { method: 'POST' });
    return { status: res.status, body: (await res.json()) as { error: string } };
  };
  const unconfigured = await call('task=usage-export');
  expect(unconfigured.status).toBe(409);
  expect(unconfigured.body.error).toContain('HERALD_USAGE_EXPORT_TABLE');
  // The suspension check itself is unchanged without a task.
  const res = await fetch(`${stack.url}/suspension-check?token=${encodeURIComponent(stack.config.pushToken!)}`, { method: 'POST' });
  expect(res.status).toBe(200);
});
