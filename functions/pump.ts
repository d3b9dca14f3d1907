import type { Response } from 'express';
import { z } from 'zod';
import { pumpRun } from '../shared/app/retry/pump-run';
import { issuesFromZod } from '../shared/domain/events/event';
import { finishAccountPurges } from '../shared/app/access/account-purge';
import { accountPurgeDeps } from '../shared/runtime/admin-deps';
import { batcherDeps } from '../shared/runtime/delivery-deps';
import { reconcileDeps } from '../shared/runtime/intake-deps';
import { pumpDeps } from '../shared/runtime/runtime';
import { PUMP_RUN_SECONDS } from '../shared/topology';
import { Parsed } from '../shared/domain/events/event';
import { parsePushEnvelope, PushDelivery } from '../shared/domain/events/cloudevents-pubsub';
import { parseJsonBytes } from '../shared/domain/events/json-body';
import { guarded, HeraldRequest, rawBodyOf, requireInternalCaller, requireMethod, sendJson } from './http';
import { runtime } from './process-runtime';

const querySchema = z.object({
  runSeconds: z.coerce.number({ error: 'runSeconds must be a number' }).min(0, 'runSeconds must be 0–540').max(540, 'runSeconds must be 0–540').default(PUMP_RUN_SECONDS),
  hold: z.enum(['true', 'false'], { error: 'hold must be true or false' }).default('false').transform((v) => v === 'true'),
});

/** A request body as the wake-up push it must be. */
function wakePush(body: Buffer): Parsed<PushDelivery> {
  const json = parseJsonBytes(body);
  if (!json.ok) return { ok: false, issues: [{ path: 'body', message: `${json.message}; expected a Pub/Sub push {"message": {...}, "subscription": "..."}` }] };
  return parsePushEnvelope(json.value);
}

/** The least time a run gives the purge of deleted accounts (app/access/account-purge.ts), however short the run. */
const PURGE_MIN_MS = 2_000;

/**
 * The retry pump as a function, with the reconciler beside it and the purge of deleted accounts before it (shared/app/retry/pump-run.ts, account-purge.ts):
 * Cloud Scheduler calls it each minute (and Pub/Sub pushes a batcher's wake-up to it between
 * runs: app/lanes/batcher-wake.ts) and it keeps
 * claiming due deliveries for up to `runSeconds` (0: one round) — ending early when nothing
 * falls due before then, unless `hold=true` — then answers with what it did. Local mode
 * runs the same loop in-process instead.
 */
export const pumpHandler = guarded(
  () => runtime().log,
  'pump',
  async (req: HeraldRequest, res: Response) => {
    const rt = runtime();
    if (!requireMethod(req, res, ['POST'])) return;
    if (!(await requireInternalCaller(req, res, rt, 'pump'))) return;
    const body = rawBodyOf(req);
    // Cloud Scheduler sends nothing; a batcher's wake-up (topology.ts batchWakeNames) is a Pub/Sub push, and starts the same run.
    const woken = body.length > 0 ? wakePush(body) : undefined;
    if (woken !== undefined && !woken.ok) {
      sendJson(res, 400, { error: 'pump takes no request body but a Pub/Sub push of a batcher wake-up; its options are the query parameters runSeconds and hold', issues: woken.issues });
      return;
    }
    const query = querySchema.safeParse(req.query);
    if (!query.success) {
      sendJson(res, 400, { error: 'invalid pump query', issues: issuesFromZod(query.error) });
      return;
    }
    const runMs = query.data.runSeconds * 1000;
    const report = await pumpRun(
      { pump: pumpDeps(rt), reconcile: reconcileDeps(rt), batcher: batcherDeps(rt), log: rt.log },
      {
        runMs,
        intervalMs: rt.config.pumpIntervalMs,
        hold: query.data.hold,
        // Deleted accounts' data that DELETE /admin/accounts/{id} left (one read when there is none).
        before: async () => {
          const purges = await finishAccountPurges(accountPurgeDeps(rt), Date.now() + Math.max(PURGE_MIN_MS, runMs / 6)).catch((e: unknown) => {
            rt.log.error('the purge of deleted accounts failed; the next run tries again', { error: (e as Error).message });
            return undefined;
          });
          if (purges && (purges.deleted > 0 || purges.purged.length > 0)) rt.log.info('deleted accounts purged', { ...purges });
        },
      },
    );
    rt.log.info('retry pump run finished', { ...report, runSeconds: query.data.runSeconds, hold: query.data.hold, ...(woken?.ok ? { wokenBy: woken.value.messageId } : {}) });
    sendJson(res, 200, report);
  },
);
