import type http from 'node:http';
import type { Response } from 'express';
import { STORE_BUSY_RETRY_AFTER_S, storeBusyMessage } from '../shared/app/support/store-busy';
import { Runtime } from '../shared/runtime/runtime';
import { BodyBounds, BodyRefusal, readBoundedBody } from './bounded-body';
import { HeraldRequest, pathOf } from './http';
import { errorMessage } from '../shared/domain/error-message';

/**
 * Every Herald function's first step, before the functions framework's body parser (which
 * would read and inflate up to 1 GiB of anything): who is calling is judged from the headers
 * alone, and only an admitted request's body is read, within bounds (bounded-body.ts). A
 * refused caller costs a header parse and an answer; its body is never read, and the
 * connection is closed after the answer so nothing more of it is taken in.
 *
 * The framework's parser then finds the request already read and leaves `rawBody` (the
 * inflated bytes) as the gate set it: every handler reads its body from there.
 */

/** What a door does with one request: admit it (the refusal already answered when it does not), and how large a body it may bring. */
export interface Door {
  admit(req: HeraldRequest, res: Response, rt: Runtime): Promise<boolean>;
  /** The body limit for a request this door admitted. */
  limitBytes(req: HeraldRequest, rt: Runtime): number;
}

/** A public request's body (the portal link exchange: a token): never more than this. */
export const PUBLIC_BODY_LIMIT = 16 * 1024;
/**
 * A Pub/Sub push: a message of up to 10 MB, base64 in a JSON envelope (4/3 of it), with its
 * attributes. Pushes are authenticated before this is read.
 */
export const PUSH_BODY_LIMIT = 14 * 1024 * 1024;

/** How long a refused request's connection stays open after the answer, taking (and dropping) what is still sent. */
export const LINGER_MS = 2_000;

/**
 * A refused request's connection closes after its answer, but not at once: closing a socket
 * with unread bytes makes the kernel reset it, and a client still sending may then lose the
 * answer. So the rest of the body is read and dropped (never kept) until the client hangs up
 * or LINGER_MS pass, as web servers' lingering close does.
 */
function lingerBeforeClose(req: http.IncomingMessage): void {
  req.resume();
  req.socket.destroySoon = function (this: typeof req.socket) {
    if (this.writable) this.end();
    const timer = setTimeout(() => this.destroy(), LINGER_MS);
    timer.unref();
    this.once('close', () => clearTimeout(timer));
  };
}

/** A body refused: answered, and the connection closed so the rest of it is never kept. */
function refuse(res: http.ServerResponse, refusal: BodyRefusal): void {
  lingerBeforeClose(res.req);
  res.statusCode = refusal.status;
  res.setHeader('connection', 'close');
  res.setHeader('content-type', 'application/json; charset=utf-8');
  res.end(JSON.stringify({ error: refusal.error, issues: refusal.issues }));
}

/**
 * Wraps a function's request listener (the framework's app) with its door: authenticate on the
 * headers, then read the body within bounds, then hand the request on.
 */
export function gated(door: Door, app: http.RequestListener, runtime: () => Runtime): http.RequestListener {
  return (req, res) => {
    const request = req as HeraldRequest;
    const run = async () => {
      const rt = runtime();
      // Whatever the door answers a refused caller closes the connection: its body stays unread.
      res.setHeader('connection', 'close');
      if (!(await door.admit(request, res as Response, rt))) {
        lingerBeforeClose(req);
        return;
      }
      if (res.headersSent) return;
      res.removeHeader('connection');
      const bounds: BodyBounds = { limitBytes: door.limitBytes(request, rt), timeoutMs: rt.config.bodyTimeoutMs };
      const read = await readBoundedBody(req, bounds);
      if (!read.ok) {
        // A sender that hung up is not answered; its request is only noted.
        const gone = res.socket === null || res.socket.destroyed;
        rt.log.warn(gone ? 'request abandoned by its sender' : 'request body refused', { status: read.status, error: read.error, path: pathOf(req) });
        if (!gone && !res.headersSent) refuse(res, read);
        return;
      }
      request.rawBody = read.body;
      request.body = read.body;
      app(req, res);
    };
    run().catch((e: unknown) => {
      // Checking a key reads Firestore: a store that cannot answer now is a 503 to retry, as in the handlers.
      const busy = storeBusyMessage(e);
      const path = pathOf(req);
      if (busy !== undefined) runtime().log.warn(`${path} answered 503: ${busy}`, { error: errorMessage(e), path });
      else runtime().log.error('admitting a request failed', { error: errorMessage(e), stack: e instanceof Error ? e.stack : undefined, path });
      if (res.headersSent) return;
      res.statusCode = busy !== undefined ? 503 : 500;
      if (busy !== undefined) res.setHeader('retry-after', String(STORE_BUSY_RETRY_AFTER_S));
      res.setHeader('connection', 'close');
      res.setHeader('content-type', 'application/json; charset=utf-8');
      res.end(JSON.stringify({ error: busy ?? 'internal error while admitting the request; it has been logged, retry later' }));
    });
  };
}
