import { Writable } from 'node:stream';
import type { BigQuery } from '@google-cloud/bigquery';
import { BigQueryUsageTable } from '../../shared/adapters/bigquery/usage-table';
import { emptyUsage, UsageCounts } from '../../shared/domain/usage/usage';
import { previousUsageDay, USAGE_EXPORT_COLUMNS, usageExportRows } from '../../shared/domain/usage/usage-export';
import { usageCostUsd } from '../../shared/domain/usage/usage-cost';

/** The usage export's pure part (issue 57) and what its BigQuery adapter asks BigQuery for. */

const counts = (over: Partial<UsageCounts>): UsageCounts => ({ ...emptyUsage(), ...over });

test("a row per account that counted something that day, by account, each the admin API's row flattened", () => {
  const acme = counts({ eventsAccepted: 120, eventsRefused: 3, operationalEvents: 2, deliveries: 240, delivered: 236, attempts: { success: 236, 'http-error': 9, timeout: 1 }, bytesSent: 51_234 });
  const stored = new Map([
    ['zeta', new Map([['2026-11-02', counts({ eventsRefused: 1 })]])],
    ['acme', new Map([['2026-11-01', counts({ eventsAccepted: 9 })], ['2026-11-02', acme]])],
    ['idle', new Map([['2026-11-01', counts({ eventsAccepted: 1 })]])],
  ]);
  const rows = usageExportRows('2026-11-02', stored);
  expect(rows.map((r) => r.account)).toEqual(['acme', 'zeta']);
  expect(rows[0]).toEqual({
    account: 'acme',
    day: '2026-11-02',
    eventsAccepted: 120,
    eventsRefused: 3,
    operationalEvents: 2,
    deliveries: 240,
    attemptsSuccess: 236,
    attemptsHttpError: 9,
    attemptsTimeout: 1,
    attemptsNetwork: 0,
    attemptsRefused: 0,
    delivered: 236,
    bytesSent: 51_234,
    modeledCostUsd: usageCostUsd(acme),
  });
  // Every column of the table's schema is in every row, and nothing else.
  for (const row of rows) expect(Object.keys(row).sort()).toEqual(USAGE_EXPORT_COLUMNS.map((c) => c.name).sort());
});

test("the day exported by default is the one before now's, in UTC", () => {
  expect(previousUsageDay(Date.parse('2026-12-01T01:15:00Z'))).toBe('2026-11-30');
  expect(previousUsageDay(Date.parse('2026-03-01T00:00:00Z'))).toBe('2026-02-28');
  expect(previousUsageDay(Date.parse('2027-01-01T23:59:59Z'))).toBe('2026-12-31');
});

/** A BigQuery client that records what is asked of it: a load job's metadata and data, a deletion. */
function fakeBigQuery(opts: { fail?: Error; deleteCode?: number } = {}) {
  const asked: { dataset?: unknown; table?: string; load?: Record<string, unknown>; data?: string; deleted?: string } = {};
  const client = {
    dataset: (id: string, options: unknown) => {
      asked.dataset = { id, options };
      return {
        table: (name: string) => ({
          createWriteStream: (metadata: Record<string, unknown>) => {
            asked.table = name;
            asked.load = metadata;
            let data = '';
            const stream = new Writable({
              write(chunk: Buffer, _enc, done) {
                data += chunk.toString();
                done();
              },
            });
            stream.on('finish', () => {
              asked.data = data;
              // As the library does: 'complete' once the job succeeded, an error when it failed.
              setImmediate(() => (opts.fail ? stream.emit('error', opts.fail) : stream.emit('complete', {})));
            });
            return stream;
          },
          delete: async () => {
            asked.deleted = name;
            if (opts.deleteCode !== undefined) throw Object.assign(new Error('gone'), { code: opts.deleteCode });
          },
        }),
      };
    },
  };
  return { asked, client: client as unknown as BigQuery };
}

const NAME = { project: 'acme-prod', dataset: 'herald_usage', table: 'usage' };

test("a day is loaded into its own partition, replacing it (WRITE_TRUNCATE), as newline-delimited JSON rows", async () => {
  const { asked, client } = fakeBigQuery();
  const rows = usageExportRows('2026-11-02', new Map([['acme', new Map([['2026-11-02', counts({ eventsAccepted: 5 })]])], ['beta', new Map([['2026-11-02', counts({ deliveries: 1 })]])]]));
  const table = new BigQueryUsageTable(NAME, 'EU', client);
  expect(table.target).toBe('acme-prod.herald_usage.usage');
  await table.replaceDay('2026-11-02', rows);
  expect(asked.dataset).toEqual({ id: 'herald_usage', options: { projectId: 'acme-prod', location: 'EU' } });
  expect(asked.table).toBe('usage$20261102');
  expect(asked.load).toEqual({ sourceFormat: 'NEWLINE_DELIMITED_JSON', writeDisposition: 'WRITE_TRUNCATE', createDisposition: 'CREATE_NEVER' });
  expect(asked.data!.trimEnd().split('\n').map((l) => JSON.parse(l) as unknown)).toEqual(rows);
});

test('a failed load job fails the export (the schedule retries it); a day with no rows deletes its partition, gone already or not', async () => {
  const failing = fakeBigQuery({ fail: new Error('Provided Schema does not match Table') });
  await expect(new BigQueryUsageTable(NAME, undefined, failing.client).replaceDay('2026-11-02', usageExportRows('2026-11-02', new Map([['a', new Map([['2026-11-02', counts({ eventsAccepted: 1 })]])]])))).rejects.toThrow('Provided Schema');
  const empty = fakeBigQuery({ deleteCode: 404 });
  await new BigQueryUsageTable(NAME, undefined, empty.client).replaceDay('2026-11-03', []);
  expect(empty.asked).toMatchObject({ deleted: 'usage$20261103' });
  expect(empty.asked.load).toBeUndefined();
  const denied = fakeBigQuery({ deleteCode: 403 });
  await expect(new BigQueryUsageTable(NAME, undefined, denied.client).replaceDay('2026-11-03', [])).rejects.toThrow('gone');
});
