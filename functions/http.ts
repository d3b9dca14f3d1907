import { createHash, timingSafeEqual } from 'node:crypto';
import type { Request, Response, NextFunction } from 'express';
import { Logger } from '../shared/ports';

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

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/** Constant-time comparison: hashing first makes the lengths equal too. */
export function tokenMatches(presented: string | undefined, expected: string): boolean {
  return presented !== undefined && timingSafeEqual(digest(presented), digest(expected));
}

export function bearerToken(req: Request): string | undefined {
  const header = req.get('authorization');
  const match = header?.match(/^Bearer\s+(\S+)\s*$/i);
  return match?.[1];
}

export function requireBearer(req: Request, res: Response, expected: string, what: string): boolean {
  if (tokenMatches(bearerToken(req), expected)) return true;
  res.set('www-authenticate', 'Bearer');
  sendJson(res, 401, { error: `missing or invalid bearer token: send Authorization: Bearer <${what} token>` });
  return false;
}

export function requireMethod(req: Request, res: Response, allowed: readonly string[]): boolean {
  if (allowed.includes(req.method)) return true;
  res.set('allow', allowed.join(', '));
  sendJson(res, 405, { error: `method ${req.method} not allowed here; use ${allowed.join(' or ')}` });
  return false;
}

/** Wraps a handler so a Herald fault is a logged 500, never a crash or a hung request. */
export function guarded(log: () => Logger, name: string, handler: (req: HeraldRequest, res: Response) => Promise<void>) {
  return async (req: HeraldRequest, res: Response): Promise<void> => {
    try {
      await handler(req, res);
    } catch (e) {
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
