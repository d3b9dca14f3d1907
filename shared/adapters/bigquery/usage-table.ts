import { BigQuery } from '@google-cloud/bigquery';
import { UsageWarehouse } from '../../app/usage/usage-export';
import { UsageExportRow } from '../../domain/usage/usage-export';

/** `project.dataset.table`, as HERALD_USAGE_EXPORT_TABLE names it. */
export interface UsageTableName {
  project: string;
  dataset: string;
  table: string;
}

/** The partition of one day: BigQuery's decorator `table$YYYYMMDD` (the table is partitioned by `day`). */
export const partitionOf = (table: string, day: string): string => `${table}$${day.replaceAll('-', '')}`;

/** A row as a line of newline-delimited JSON: what a load job reads. */
export const ndjsonOf = (rows: readonly UsageExportRow[]): string => rows.map((r) => `${JSON.stringify(r)}\n`).join('');

/**
 * The usage export's table in BigQuery (the Pulumi program declares it: infra/components/usage-export.ts),
 * day-partitioned by `day`. A day is replaced with a load job into its partition with
 * WRITE_TRUNCATE: BigQuery swaps the partition's contents in one step when the job succeeds, and
 * leaves them as they were when it fails, so an export run again holds each row once. (Streaming
 * inserts would not do: their insertId deduplicates for about a minute, best effort.) Load jobs
 * are free of charge; a day with no rows has its partition deleted instead (a load needs data).
 */
export class BigQueryUsageTable implements UsageWarehouse {
  private readonly bigquery: BigQuery;
  readonly target: string;

  constructor(
    private readonly name: UsageTableName,
    private readonly location: string | undefined,
    bigquery?: BigQuery,
  ) {
    this.bigquery = bigquery ?? new BigQuery({ projectId: name.project });
    this.target = `${name.project}.${name.dataset}.${name.table}`;
  }

  async replaceDay(day: string, rows: readonly UsageExportRow[]): Promise<void> {
    const dataset = this.bigquery.dataset(this.name.dataset, { projectId: this.name.project, ...(this.location !== undefined ? { location: this.location } : {}) });
    const partition = dataset.table(partitionOf(this.name.table, day));
    if (rows.length === 0) {
      await partition.delete().catch((e: unknown) => {
        if ((e as { code?: number }).code !== 404) throw e;
      });
      return;
    }
    await new Promise<void>((resolve, reject) => {
      const stream = partition.createWriteStream({ sourceFormat: 'NEWLINE_DELIMITED_JSON', writeDisposition: 'WRITE_TRUNCATE', createDisposition: 'CREATE_NEVER' });
      stream.on('error', reject);
      // Emitted once the load job has finished without error (a failed job is an 'error').
      stream.on('complete', () => resolve());
      stream.end(ndjsonOf(rows));
    });
  }
}
