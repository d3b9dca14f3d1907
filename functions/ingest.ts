import type { Response } from 'express';
import { ingest } from '../shared/app/ingest';
import { guarded, HeraldRequest, rawBodyOf, requireBearer, requireMethod, sendJson } from './http';
import { runtime } from './runtime';

/** POST /ingest: CloudEvents in binary, structured or batch mode → the lanes of the destinations they go to. */
export const ingestHandler = guarded(
  () => runtime().log,
  'ingest',
  async (req: HeraldRequest, res: Response) => {
    const rt = runtime();
    if (!requireMethod(req, res, ['POST'])) return;
    if (!requireBearer(req, res, rt.credentials.ingest, 'ingest')) return;
    const result = await ingest(
      {
        bus: rt.bus,
        lanes: rt.lanes,
        names: rt.names,
        directory: rt.directory,
        journal: rt.journal,
        clock: rt.clock,
        log: rt.log,
        maxBodyBytes: rt.config.maxBodyBytes,
        maxEventBytes: rt.config.maxEventBytes,
      },
      req.headers,
      rawBodyOf(req),
    );
    sendJson(res, result.status, result.body);
  },
);
