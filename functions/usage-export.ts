import type { Response } from 'express';
import { exportUsageDay } from '../shared/app/usage/usage-export';
import { Runtime } from '../shared/runtime/runtime';
import { usageExportDeps } from '../shared/runtime/usage-export-deps';
import { HeraldRequest, sendJson, sendOutcome } from './http';

/**
 * The daily usage export (docs/usage.md#exporting-to-bigquery), a task of the suspension-check
 * function: Cloud Scheduler calls `suspension-check?task=usage-export` once a day (the Pulumi
 * program declares the job with `herald:usageExport`), `&day=YYYY-MM-DD` exports another day
 * again. The caller is already checked (the function's door). It answers the day, the rows written and where.
 */
export async function usageExportTask(req: HeraldRequest, res: Response, rt: Runtime): Promise<void> {
  const deps = await usageExportDeps(rt);
  if (deps === undefined) {
    sendJson(res, 409, { error: 'the usage export is not configured here: HERALD_USAGE_EXPORT_TABLE is unset (the Pulumi program sets it with herald:usageExport true)' });
    return;
  }
  sendOutcome(res, await exportUsageDay(deps, req.query));
}
