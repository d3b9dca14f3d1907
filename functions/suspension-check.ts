import type { Response } from 'express';
import { checkThresholds } from '../shared/app/suspend-and-reactivate';
import { suspensionDeps } from '../shared/runtime';
import { guarded, HeraldRequest, rawBodyOf, requireInternalCaller, requireMethod, requireNoBody, sendJson } from './http';
import { runtime } from './process-runtime';

/**
 * Threshold suspension (seed 000): Cloud Scheduler calls this each minute; every active
 * destination whose policy has a threshold is judged on its rolling hour. Local mode runs
 * the same check in-process.
 */
export const suspensionCheckHandler = guarded(
  () => runtime().log,
  'suspension-check',
  async (req: HeraldRequest, res: Response) => {
    const rt = runtime();
    if (!requireMethod(req, res, ['POST'])) return;
    if (!(await requireInternalCaller(req, res, rt, 'suspension-check'))) return;
    if (!requireNoBody(res, rawBodyOf(req), 'suspension-check takes no request body')) return;
    const report = await checkThresholds(suspensionDeps(rt));
    rt.log.info('suspension check finished', { checked: report.checked, suspended: report.suspended });
    sendJson(res, 200, report);
  },
);
