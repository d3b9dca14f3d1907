import type { Response } from 'express';
import { authenticate } from '../shared/app/authenticate';
import { ingest } from '../shared/app/ingest';
import { ingestDeps } from '../shared/runtime';
import { admitted, guarded, HeraldRequest, rawBodyOf, requireMethod, sendJson } from './http';
import { runtime } from './process-runtime';

/** What a refused publisher is told to send. */
const INGEST_CREDENTIALS = 'ingest token or an account key with the publish scope';

/** POST /ingest: CloudEvents in binary, structured or batch mode → the lanes of the destinations they go to. */
export const ingestHandler = guarded(
  () => runtime().log,
  'ingest',
  async (req: HeraldRequest, res: Response) => {
    const rt = runtime();
    if (!requireMethod(req, res, ['POST'])) return;
    // Who publishes: the ingest token (any account, named by each event's `heraldaccount`), or an account key with the `publish` scope (its own account).
    const bearer = admitted(res, await authenticate(rt, { token: rt.credentials.ingest, expects: INGEST_CREDENTIALS }, req.get('authorization')));
    if (!bearer) return;
    if (bearer.kind === 'key' && !bearer.key.scopes.includes('publish')) {
      sendJson(res, 403, { error: `this key lacks the "publish" scope; create a key with it (POST /admin/accounts/${bearer.key.account}/keys)` });
      return;
    }
    const result = await ingest(ingestDeps(rt, bearer.kind === 'key' ? { account: bearer.key.account } : {}), req.headers, rawBodyOf(req));
    if (result.status === 429) res.set('retry-after', String(result.retryAfterSeconds));
    sendJson(res, result.status, result.body);
  },
);
