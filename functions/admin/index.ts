import type { Response } from 'express';
import { findAccount, noAccount } from '../../shared/app/admin/accounts-admin';
import { DEFAULT_ACCOUNT } from '../../shared/domain/access/account';
import { ExchangeLimiter } from '../../shared/domain/access/portal-exchange-limit';
import { adminApiDeps } from '../../shared/runtime/admin-deps';
import { Runtime } from '../../shared/runtime/runtime';
import { guarded, HeraldRequest, sendJson, sendOutcome, statusOf } from '../http';
import { runtime } from '../process-runtime';
import { audit } from './audit';
import { callerOf, NOBODY, portalKeyFor, scopeRefusal } from './auth';
import { consoleUrlOf, serveConsole } from './console-files';
import { BadJson, parseJsonBody } from './request-body';
import { Ctx, narrowed } from './route';
import { openApiJson, ROUTES } from './routes';
import { answeringStoreBusy, storeRefusalMessage } from './store-errors';

/** Each runtime's buckets for the public portal link exchange: per instance by design (domain/access/portal-exchange-limit.ts). */
const exchangeLimiters = new WeakMap<Runtime, ExchangeLimiter>();
function portalExchangesFor(rt: Runtime): ExchangeLimiter {
  let limiter = exchangeLimiters.get(rt);
  if (!limiter) {
    limiter = new ExchangeLimiter();
    exchangeLimiters.set(rt, limiter);
  }
  return limiter;
}

/**
 * What of the admin function anyone may call without a bearer token: the API's description
 * (it holds no data: a code generator, a browser), the console's files, and the public routes
 * (the portal link exchange: the link is the credential). Undefined: a bearer token is needed.
 */
export function publicRequest(method: string | undefined, path: string): 'openapi' | 'console' | 'route' | undefined {
  if (method === 'GET' && path === '/openapi.json') return 'openapi';
  if (path === '/console' || path.startsWith('/console/')) return 'console';
  return ROUTES.some((r) => r.public && r.method === method && r.pattern.test(path)) ? 'route' : undefined;
}

/** The operators' and accounts' API: accounts, keys, destinations, deliveries, reactivation and replays. */
export const adminHandler = guarded(
  () => runtime().log,
  'admin',
  answeringStoreBusy(async (req: HeraldRequest, res: Response) => {
    const rt = runtime();
    const path = req.path;
    const open = publicRequest(req.method, path);
    if (open === 'openapi') {
      res.status(200).set('content-type', 'application/json; charset=utf-8').send(openApiJson());
      return;
    }
    if (open === 'console') {
      serveConsole(req, res, rt);
      return;
    }
    const caller = open === 'route' ? NOBODY : await callerOf(req, res, rt);
    if (!caller) return;
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
    const deps = adminApiDeps(rt);
    // Another account's anything does not exist for a key: 404 before scopes, so a key learns nothing of it.
    if (route.accountParam && !(await findAccount(deps, caller, params[0]!))) {
      sendOutcome(res, noAccount(params[0]!));
      return;
    }
    const refusal = route.public ? undefined : scopeRefusal(caller, req.method);
    if (refusal !== undefined) {
      sendJson(res, 403, { error: refusal });
      return;
    }
    const account = route.accountParam ? params[0]! : caller.kind !== 'operator' ? caller.account : DEFAULT_ACCOUNT;
    try {
      let fields: string[] = [];
      const body = (optional?: boolean) => {
        const parsed = parseJsonBody(req, optional);
        fields = parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? Object.keys(parsed) : [];
        return parsed;
      };
      const replayScope = route.accountParam || caller.kind !== 'operator' ? account : undefined;
      const ctx: Ctx = {
        ...deps,
        caller,
        account,
        replayScope,
        portalKey: portalKeyFor(rt),
        portalExchanges: portalExchangesFor(rt),
        consoleUrl: consoleUrlOf(rt.config),
      };
      const result = await route.run(narrowed(ctx), params, body, { ...(req.query as Record<string, unknown>) });
      audit(rt.log, { route, caller, account, ids: params, fields, status: statusOf(result.kind) });
      if (route.csv && result.kind === 'ok' && /\btext\/csv\b/i.test(req.get('accept') ?? '')) {
        res.status(200).set('content-type', 'text/csv; charset=utf-8').send(route.csv(result.body));
        return;
      }
      sendOutcome(res, result);
    } catch (e) {
      if (e instanceof BadJson) {
        sendJson(res, 400, { error: e.message, issues: e.issues });
        return;
      }
      const refused = storeRefusalMessage(e);
      if (refused === undefined) throw e;
      rt.log.warn(`admin: ${req.method} ${req.path} answered 400: Firestore refused a value of the request`, { error: (e as Error).message });
      sendJson(res, 400, { error: refused });
    }
  }),
);
