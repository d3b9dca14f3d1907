// The module object itself: the functions framework calls `domain.create` on it (below).
// eslint-disable-next-line @typescript-eslint/no-require-imports
import domain = require('node:domain');
import type { Request, Response, NextFunction } from 'express';
import { Authentication, Bearer } from '../shared/app/authenticate';
import { LimiterClosedError } from '../shared/app/delivery-limiter';
import { FunctionName } from '../shared/topology';
import { Logger } from '../shared/ports';
import { Runtime } from '../shared/runtime';

/** What every Herald HTTP function shares: JSON answers, bearer auth, raw bodies, faults. */

export type HeraldRequest = Request & { rawBody?: Buffer };

export function sendJson(res: Response, status: number, body?: unknown): void {
  if (body === undefined) {
    res.status(status).end();
    return;
  }
  res.status(status).set('content-type', 'application/json; charset=utf-8').send(JSON.stringify(body));
}

export function rawBodyOf(req: HeraldRequest): Buffer {
  if (req.rawBody) return req.rawBody;
  return Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
}

/**
 * The bearer of a request to a public door (admin API, ingest) as authenticate() judged it
 * (shared/app/authenticate.ts), or undefined once a refusal has been answered: 401 with
 * WWW-Authenticate and what to send instead.
 */
export function admitted<B extends Bearer>(res: Response, authentication: Authentication<B>): B | undefined {
  if (authentication.ok) return authentication.bearer;
  res.set('www-authenticate', 'Bearer');
  sendJson(res, 401, authentication.body);
  return undefined;
}

/** 400 unless the body is empty: a function that takes none says so rather than ignore one. */
export function requireNoBody(res: Response, body: Buffer, message: string): boolean {
  if (body.length === 0) return true;
  sendJson(res, 400, { error: message, issues: [{ path: 'body', message: `expected no body, got ${body.length} bytes` }] });
  return false;
}

/**
 * Internal endpoints (Pub/Sub pushes, Cloud Scheduler): the push token locally, a Google OIDC
 * token of the right service account on GCP (shared/app/push-auth.ts). Checked before the
 * body is read: an unauthenticated caller learns nothing about what it sent.
 */
export async function requireInternalCaller(req: HeraldRequest, res: Response, rt: Runtime, fn: FunctionName): Promise<boolean> {
  const verdict = await rt.pushAuth.check(fn, {
    ...(req.get('authorization') !== undefined ? { authorization: req.get('authorization') } : {}),
    ...(typeof req.query.token === 'string' ? { queryToken: req.query.token } : {}),
  });
  if (verdict.ok) return true;
  if (verdict.status === 401 && rt.pushAuth.mode !== 'token') res.set('www-authenticate', 'Bearer');
  rt.log.warn(`${fn}: unauthenticated request refused`, { reason: verdict.message, path: req.path });
  sendJson(res, verdict.status, { error: verdict.message });
  return false;
}

export function requireMethod(req: Request, res: Response, allowed: readonly string[]): boolean {
  if (allowed.includes(req.method)) return true;
  res.set('allow', allowed.join(', '));
  sendJson(res, 405, { error: `method ${req.method} not allowed here; use ${allowed.join(' or ')}` });
  return false;
}

/**
 * The functions framework runs every request inside a `node:domain` of its own, to turn a
 * stray exception into a 500. Creating the first domain turns on Node's domain async hook for
 * good, with a destroy hook on every promise the process makes afterwards, inside a domain or
 * not: measured, 2 million awaits took 81 ms before the first `domain.create()` and 1,088 ms
 * after it (the profile's `registerDestroyHook` / `emitHook`, ~8 % of a delivery's CPU even with
 * each handler leaving its domain at once). Herald's handlers catch their own faults
 * (`guarded`) and make no callbacks a domain would catch, so the framework is given a stand-in
 * that runs the request as it is: no domain is ever created. The framework looks
 * `domain.create` up per request, so replacing it on the module here is enough.
 */
const standInDomain = {
  on: () => standInDomain,
  run: <T>(fn: () => T): T => fn(),
};
(domain as { create: () => unknown }).create = () => standInDomain;

/** Wraps a handler so a Herald fault is a logged 500, never a crash or a hung request. */
export function guarded(log: () => Logger, name: string, handler: (req: HeraldRequest, res: Response) => Promise<void>) {
  return async (req: HeraldRequest, res: Response): Promise<void> => {
    try {
      await handler(req, res);
    } catch (e) {
      // Stopping, not a fault: a delivery still waiting for its rate turn gives up, and its push comes again.
      if (e instanceof LimiterClosedError) {
        log().info(`${name}: ${e.message}`, { path: req.path });
        if (!res.headersSent) sendJson(res.set('retry-after', '1'), 503, { error: e.message });
        return;
      }
      log().error(`${name} failed`, { error: e instanceof Error ? e.message : String(e), stack: e instanceof Error ? e.stack : undefined, path: req.path });
      if (!res.headersSent) sendJson(res, 500, { error: `internal error in ${name}; it has been logged, retry later` });
    }
  };
}

/**
 * The functions framework parses JSON bodies before a function runs and answers a parse
 * failure with an HTML page; its parser is also stricter than JSON itself (it refuses a
 * bare `"text"` or `42`). A function that reads the raw body itself (`rawBodyHandler`)
 * still gets the request and judges the bytes; the others answer in Herald's JSON shape.
 */
export function jsonBodyErrors(rawBodyHandler?: (req: HeraldRequest, res: Response) => unknown) {
  return (err: unknown, req: HeraldRequest, res: Response, next: NextFunction): void => {
    const e = err as { type?: string; status?: number; message?: string };
    if (res.headersSent) return next(err);
    if (e.type === 'entity.parse.failed') {
      if (rawBodyHandler && req.rawBody) {
        req.body = req.rawBody;
        void rawBodyHandler(req, res);
        return;
      }
      sendJson(res, 400, {
        error: 'body is not valid JSON',
        issues: [{ path: 'body', message: e.message ?? 'unparseable' }],
      });
      return;
    }
    if (e.type === 'entity.too.large') {
      sendJson(res, 413, { error: 'request body too large', issues: [{ path: 'body', message: e.message ?? 'too large' }] });
      return;
    }
    if (typeof e.status === 'number' && e.status >= 400 && e.status < 500) {
      // Express refuses a path with a stray `%` before any handler runs.
      const message = /^Failed to decode param/.test(e.message ?? '') ? `${e.message}: the path is not valid percent-encoding; encode "%" as %25` : (e.message ?? 'bad request');
      sendJson(res, e.status, { error: message, issues: [{ path: 'path', message }] });
      return;
    }
    next(err);
  };
}
