import type { Response } from 'express';
import { ingest } from '../shared/app/ingest';
import { bearerOf, matchesDigest } from '../shared/app/push-auth';
import { Runtime } from '../shared/runtime';
import { guarded, HeraldRequest, rawBodyOf, requireMethod, sendJson } from './http';
import { runtime } from './runtime';

/**
 * Who publishes: the ingest token (any account, named by each event's `heraldaccount`), or an
 * account key with the `publish` scope (its own account). `null`: refused, answered here.
 */
async function publisherOf(req: HeraldRequest, res: Response, rt: Runtime): Promise<{ account?: string } | null> {
  const token = bearerOf(req.get('authorization'));
  if (matchesDigest(token, rt.credentials.ingest)) return {};
  const verdict = token !== undefined ? await rt.keys.verify(token) : undefined;
  if (verdict?.ok) {
    if (verdict.key.scopes.includes('publish')) return { account: verdict.key.account };
    sendJson(res, 403, { error: `this key lacks the "publish" scope; create a key with it (POST /admin/accounts/${verdict.key.account}/keys)` });
    return null;
  }
  res.set('www-authenticate', 'Bearer');
  const why = verdict && verdict.reason !== 'unknown' ? `the account key is ${verdict.reason}; ask for a new one` : 'send Authorization: Bearer <ingest token or an account key with the publish scope>';
  sendJson(res, 401, { error: `missing or invalid bearer token: ${why}` });
  return null;
}

/** POST /ingest: CloudEvents in binary, structured or batch mode → the lanes of the destinations they go to. */
export const ingestHandler = guarded(
  () => runtime().log,
  'ingest',
  async (req: HeraldRequest, res: Response) => {
    const rt = runtime();
    if (!requireMethod(req, res, ['POST'])) return;
    const publisher = await publisherOf(req, res, rt);
    if (!publisher) return;
    const result = await ingest(
      {
        bus: rt.bus,
        lanes: rt.lanes,
        names: rt.names,
        directory: rt.directory,
        journal: rt.journal,
        clock: rt.clock,
        log: rt.log,
        ...publisher,
        quotas: rt.publishQuotas,
        maxBodyBytes: rt.config.maxBodyBytes,
        maxEventBytes: rt.config.maxEventBytes,
      },
      req.headers,
      rawBodyOf(req),
    );
    if (result.status === 429) res.set('retry-after', String(result.retryAfterSeconds));
    sendJson(res, result.status, result.body);
  },
);
