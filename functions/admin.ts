import type { Response } from 'express';
import { getDelivery, listDeliveries } from '../shared/app/deliveries-admin';
import { AdminDeps, AdminResult, deleteDestination, getDestination, listDestinations, putDestination } from '../shared/app/destinations-admin';
import { postRotateSecret } from '../shared/app/secret-rotation-admin';
import { parseJsonBytes } from '../shared/domain/json-body';
import { SuspensionDeps } from '../shared/app/suspension';
import { postReactivate, postRedeliver } from '../shared/app/suspension-admin';
import { getReplay, listReplays, postReplay, ReplaysAdminDeps } from '../shared/app/replays-admin';
import { replaysAdminDeps, suspensionDeps } from '../shared/runtime';
import { guarded, HeraldRequest, rawBodyOf, requireBearer, sendJson } from './http';
import { runtime } from './runtime';

type Route = {
  method: string;
  pattern: RegExp;
  /** `body(true)`: the body may be empty (undefined then). `query` is the parsed query string (a repeated parameter is an array). */
  run: (deps: AdminDeps & SuspensionDeps & ReplaysAdminDeps, params: string[], body: (optional?: boolean) => unknown, query: Record<string, unknown>) => Promise<AdminResult<unknown>>;
};

const ROUTES: Route[] = [
  { method: 'GET', pattern: /^\/destinations\/?$/, run: (d) => listDestinations(d) },
  { method: 'PUT', pattern: /^\/destinations\/([^/]+)$/, run: (d, [id], body) => putDestination(d, id!, body()) },
  { method: 'GET', pattern: /^\/destinations\/([^/]+)$/, run: (d, [id]) => getDestination(d, id!) },
  { method: 'DELETE', pattern: /^\/destinations\/([^/]+)$/, run: (d, [id]) => deleteDestination(d, id!) },
  { method: 'POST', pattern: /^\/destinations\/([^/]+)\/reactivate\/?$/, run: (d, [id]) => postReactivate(d, id!) },
  { method: 'POST', pattern: /^\/destinations\/([^/]+)\/redeliver\/?$/, run: (d, [id], body) => postRedeliver(d, id!, body(true)) },
  { method: 'POST', pattern: /^\/destinations\/([^/]+)\/rotate-secret\/?$/, run: (d, [id], body) => postRotateSecret(d, id!, body(true)) },
  { method: 'GET', pattern: /^\/destinations\/([^/]+)\/deliveries\/?$/, run: (d, [id], _body, query) => listDeliveries(d, id!, query) },
  { method: 'GET', pattern: /^\/deliveries\/([^/]+)$/, run: (d, [id]) => getDelivery(d, id!) },
  { method: 'POST', pattern: /^\/replays\/?$/, run: (d, _params, body) => postReplay(d, body()) },
  { method: 'GET', pattern: /^\/replays\/?$/, run: (d, _params, _body, query) => listReplays(d, query) },
  { method: 'GET', pattern: /^\/replays\/([^/]+)$/, run: (d, [id]) => getReplay(d, id!) },
];

class BadJson extends Error {}

function parseJsonBody(req: HeraldRequest, optional = false): unknown {
  const raw = rawBodyOf(req);
  if (raw.length === 0) {
    if (optional) return undefined;
    throw new BadJson('the request needs a JSON body');
  }
  const parsed = parseJsonBytes(raw);
  if (!parsed.ok) throw new BadJson(parsed.message);
  return parsed.value;
}

/** The operators' API: destinations, deliveries, reactivation and replays. */
export const adminHandler = guarded(
  () => runtime().log,
  'admin',
  async (req: HeraldRequest, res: Response) => {
    const rt = runtime();
    if (!requireBearer(req, res, rt.credentials.admin, 'admin')) return;
    const path = req.path;
    const matching = ROUTES.filter((r) => r.pattern.test(path));
    if (matching.length === 0) {
      sendJson(res, 404, { error: `no admin route ${req.method} ${path}; see the README for the admin API` });
      return;
    }
    const route = matching.find((r) => r.method === req.method);
    if (!route) {
      res.set('allow', matching.map((r) => r.method).join(', '));
      sendJson(res, 405, { error: `method ${req.method} not allowed on ${path}; use ${matching.map((r) => r.method).join(' or ')}` });
      return;
    }
    // Express has already refused a path that does not decode (jsonBodyErrors answers 400).
    const params = (route.pattern.exec(path) ?? []).slice(1).map((p) => decodeURIComponent(p));
    const deps = { ...suspensionDeps(rt), ...replaysAdminDeps(rt), lanes: rt.lanes, rateLeases: rt.rateLeases, allowLoopback: rt.config.allowLoopback, resolver: rt.resolver, herald: { projectId: rt.config.projectId, prefix: rt.names.prefix } };
    try {
      const result = await route.run(deps, params, (optional) => parseJsonBody(req, optional), { ...(req.query as Record<string, unknown>) });
      sendJson(res, result.status, 'body' in result ? result.body : undefined);
    } catch (e) {
      if (!(e instanceof BadJson)) throw e;
      sendJson(res, 400, { error: e.message, issues: [{ path: 'body', message: e.message }] });
    }
  },
);
