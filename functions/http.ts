// The module object itself: the functions framework calls `domain.create` on it (below).
// eslint-disable-next-line @typescript-eslint/no-require-imports
import domain = require('node:domain');
import type http from 'node:http';
import type { Request, Response, NextFunction } from 'express';
import { Authentication, Bearer } from '../shared/app/access/authenticate';
import { PresentedCredentials } from '../shared/app/access/push-auth';
import { AnyOutcome, OutcomeKind } from '../shared/app/support/outcome';
import { LimiterClosedError } from '../shared/app/rate/limiter-gate';
import { FunctionName } from '../shared/topology';
import { Logger } from '../shared/ports/clock';
import { Runtime } from '../shared/runtime/runtime';
import { errorMessage } from '../shared/domain/error-message';

/** What every Herald HTTP function shares: JSON answers, bearer auth, raw bodies, faults. */

export type HeraldRequest = Request & { rawBody?: Buffer };

/**
 * A request as the request gate (request-gate.ts) sees it, before Express has dressed it:
 * what every check made before the body is read may use of it.
 */
export type BareRequest = http.IncomingMessage & { rawBody?: Buffer; body?: unknown };

/** Node's own response API, so that the gate (before Express) and the handlers answer alike. */
export function sendJson(res: http.ServerResponse, status: number, body?: unknown): void {
  res.statusCode = status;
  if (body === undefined) {
    res.end();
    return;
  }
  res.setHeader('content-type', 'application/json; charset=utf-8');
  res.end(JSON.stringify(body));
}

/** The one place an outcome of the app layer (shared/app/support/outcome.ts) becomes an HTTP status. */
const STATUS: Record<OutcomeKind, number> = {
  ok: 200,
  created: 201,
  accepted: 202,
  done: 204,
  invalid: 400,
  unauthenticated: 401,
  forbidden: 403,
  'not-found': 404,
  conflict: 409,
  'too-large': 413,
  'too-many': 429,
  unavailable: 503,
};

export function statusOf(kind: OutcomeKind): number {
  return STATUS[kind];
}

/** An outcome as its answer: its status, Retry-After when it says when to come back, and its body (none when done). */
export function sendOutcome(res: http.ServerResponse, outcome: AnyOutcome): void {
  if (outcome.retryAfterSeconds !== undefined) res.setHeader('retry-after', String(outcome.retryAfterSeconds));
  sendJson(res, statusOf(outcome.kind), outcome.body);
}

/** The path of a request, without its query: what Express calls `req.path`, known before Express runs. */
export function pathOf(req: http.IncomingMessage): string {
  const url = req.url ?? '/';
  const query = url.indexOf('?');
  return query < 0 ? url : url.slice(0, query);
}

export function rawBodyOf(req: BareRequest): Buffer {
  if (req.rawBody) return req.rawBody;
  return Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
}

const checks = new WeakMap<object, Promise<unknown>>();

/**
 * Who a request comes from, judged once: the request gate (request-gate.ts) judges it on the
 * headers before reading the body, and the handler asking again gets the same verdict.
 */
export function checkedOnce<T>(req: object, check: () => Promise<T>): Promise<T> {
  let verdict = checks.get(req) as Promise<T> | undefined;
  if (verdict === undefined) checks.set(req, (verdict = check()));
  return verdict;
}

/**
 * The bearer of a request to a public door (admin API, ingest) as authenticate() judged it
 * (shared/app/access/authenticate.ts), or undefined once a refusal has been answered: 401 with
 * WWW-Authenticate and what to send instead.
 */
export function admitted<B extends Bearer>(res: http.ServerResponse, authentication: Authentication<B>): B | undefined {
  if (authentication.ok) return authentication.bearer;
  res.setHeader('www-authenticate', 'Bearer');
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
 * token of the right service account on GCP (shared/app/access/push-auth.ts). Checked before the
 * body is read: an unauthenticated caller learns nothing about what it sent.
 */
export async function requireInternalCaller(req: BareRequest, res: http.ServerResponse, rt: Runtime, fn: FunctionName): Promise<boolean> {
  const verdict = await checkedOnce(req, () => rt.pushAuth.check(fn, presentedCredentials(req)));
  if (verdict.ok) return true;
  if (verdict.kind === 'unauthenticated' && rt.pushAuth.mode !== 'token') res.setHeader('www-authenticate', 'Bearer');
  rt.log.warn(`${fn}: unauthenticated request refused`, { reason: verdict.message, path: pathOf(req) });
  sendOutcome(res, { kind: verdict.kind, body: { error: verdict.message } });
  return false;
}

/** What an internal request presents: its Authorization header, or the push token in its URL (read before Express parses the query). */
function presentedCredentials(req: BareRequest): PresentedCredentials {
  const authorization = req.headers.authorization;
  const queryToken = new URL(req.url ?? '/', 'http://request').searchParams.getAll('token');
  return {
    ...(authorization !== undefined ? { authorization } : {}),
    ...(queryToken.length === 1 ? { queryToken: queryToken[0]! } : {}),
  };
}

export function requireMethod(req: http.IncomingMessage, res: http.ServerResponse, allowed: readonly string[]): boolean {
  if (req.method !== undefined && allowed.includes(req.method)) return true;
  res.setHeader('allow', allowed.join(', '));
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
      const closed = causeOf(e, LimiterClosedError);
      if (closed) {
        log().info(`${name}: ${closed.message}`, { path: req.path });
        if (!res.headersSent) sendJson(res.set('retry-after', '1'), 503, { error: closed.message });
        return;
      }
      log().error(`${name} failed`, { error: errorMessage(e), stack: e instanceof Error ? e.stack : undefined, path: req.path });
      if (!res.headersSent) sendJson(res, 500, { error: `internal error in ${name}; it has been logged, retry later` });
    }
  };
}

/** `e`, or the error it wraps (a delivery stage's failure: shared/app/delivery/push-verdict.ts), if it is a `Kind`. */
function causeOf<K extends Error>(e: unknown, Kind: abstract new (...args: never[]) => K): K | undefined {
  for (let c: unknown = e; c instanceof Error; c = c.cause) if (c instanceof Kind) return c;
  return undefined;
}

/**
 * What Express refuses before a function runs (a path that is not valid percent-encoding), in
 * Herald's JSON shape rather than the framework's HTML page. Bodies never reach the
 * framework's parser: the request gate has read them (request-gate.ts).
 */
export function expressErrors() {
  return (err: unknown, _req: HeraldRequest, res: Response, next: NextFunction): void => {
    const e = err as { status?: number; message?: string };
    if (res.headersSent) return next(err);
    if (typeof e.status === 'number' && e.status >= 400 && e.status < 500) {
      // Express refuses a path with a stray `%` before any handler runs.
      const message = /^Failed to decode param/.test(e.message ?? '') ? `${e.message}: the path is not valid percent-encoding; encode "%" as %25` : (e.message ?? 'bad request');
      sendJson(res, e.status, { error: message, issues: [{ path: 'path', message }] });
      return;
    }
    next(err);
  };
}
