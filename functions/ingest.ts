import type http from 'node:http';
import type { Response } from 'express';
import { authenticate, Bearer } from '../shared/app/access/authenticate';
import { countIngest, ingest } from '../shared/app/intake/ingest';
import { ingestDeps } from '../shared/runtime/intake-deps';
import { Runtime } from '../shared/runtime/runtime';
import { admitted, BareRequest, checkedOnce, guarded, HeraldRequest, rawBodyOf, requireMethod, sendJson, sendOutcome } from './http';
import { runtime } from './process-runtime';

/** What a refused publisher is told to send. */
const INGEST_CREDENTIALS = 'ingest token or an account key with the publish scope';

/**
 * Who publishes: the ingest token (any account, named by each event's `heraldaccount`), or an
 * account key with the `publish` scope (its own account); undefined once a refusal is
 * answered. Judged on the headers alone, before the body is read (request-gate.ts).
 */
export async function publisher(req: BareRequest, res: http.ServerResponse, rt: Runtime): Promise<Exclude<Bearer, { kind: 'portal' }> | undefined> {
  const bearer = admitted(res, await checkedOnce(req, () => authenticate(rt, { token: rt.credentials.ingest, expects: INGEST_CREDENTIALS }, req.headers.authorization)));
  if (!bearer) return refusedUnauthorized(rt);
  if (bearer.kind === 'key' && !bearer.key.scopes.includes('publish')) {
    refusedUnauthorized(rt);
    sendJson(res, 403, { error: `this key lacks the "publish" scope; create a key with it (POST /admin/accounts/${bearer.key.account}/keys)` });
    return undefined;
  }
  return bearer;
}

/** POST /ingest: CloudEvents in binary, structured or batch mode → the lanes of the destinations they go to. */
export const ingestHandler = guarded(
  () => runtime().log,
  'ingest',
  async (req: HeraldRequest, res: Response) => {
    const rt = runtime();
    if (!requireMethod(req, res, ['POST'])) return;
    const bearer = await publisher(req, res, rt);
    if (!bearer) return;
    const result = await ingest(ingestDeps(rt, bearer.kind === 'key' ? { account: bearer.key.account } : {}), req.headers, rawBodyOf(req));
    countIngest(rt.telemetry.metrics, result);
    sendOutcome(res, result);
  },
);

/** A publisher refused on its credentials, at the door (request-gate.ts), counted once: the handler never sees it. */
function refusedUnauthorized(rt: Runtime): undefined {
  rt.telemetry.metrics.add('eventsRefused', 1, { reason: 'unauthorized' });
  return undefined;
}
