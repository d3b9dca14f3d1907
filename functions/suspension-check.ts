import type { Response } from 'express';
import { checkThresholds } from '../shared/app/delivery/suspend-and-reactivate';
import { suspensionDeps } from '../shared/runtime/delivery-deps';
import { guarded, HeraldRequest, rawBodyOf, requireInternalCaller, requireMethod, requireNoBody, sendJson } from './http';
import { runtime } from './process-runtime';
import { usageExportTask } from './usage-export';

/**
 * Threshold suspension (docs/suspension.md): Cloud Scheduler calls this each minute; every active
 * destination whose policy has a threshold is judged on its rolling hour. Local mode runs
 * the same check in-process. With `?task=usage-export` it exports a day's usage instead (usage-export.ts).
 */
export const suspensionCheckHandler = guarded(
  () => runtime().log,
  'suspension-check',
  async (req: HeraldRequest, res: Response) => {
    const rt = runtime();
    if (!requireMethod(req, res, ['POST'])) return;
    if (!(await requireInternalCaller(req, res, rt, 'suspension-check'))) return;
    if (!requireNoBody(res, rawBodyOf(req), 'suspension-check takes no request body')) return;
    // Its one other task, once a day: the export of yesterday's usage (docs/usage.md#exporting-to-bigquery).
    if (req.query.task !== undefined) return usageExportTask(req, res, rt);
    // Cloud Scheduler calls at the minute: a few seconds on, the minute just ended is complete and folded this run.
    const wait = rt.counters.foldWaitMs(rt.clock.now().getTime());
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const report = await checkThresholds(suspensionDeps(rt));
    rt.log.info('suspension check finished', { checked: report.checked, suspended: report.suspended, active: report.active, folded: report.folded });
    sendJson(res, 200, report);
  },
);
