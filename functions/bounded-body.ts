import type { IncomingMessage } from 'node:http';
import zlib from 'node:zlib';

/**
 * Reads a request body with every bound an unauthenticated or hostile sender could push past:
 * at most `limitBytes` sent, at most `limitBytes` once inflated (gzip, deflate and brotli are
 * inflated as they arrive, never whole), and all of it within `timeoutMs` (a slow sender, or a
 * `content-length` that promises more than comes). Only the inflated bytes are kept, so a
 * request holds at most about `limitBytes` of memory whatever it sends.
 */

export interface BodyBounds {
  limitBytes: number;
  timeoutMs: number;
}

export type BodyRefusal = { status: 400 | 408 | 413 | 415; error: string; issues: { path: string; message: string }[] };
export type BoundedBody = { ok: true; body: Buffer } | ({ ok: false } & BodyRefusal);

const INFLATERS: Record<string, () => zlib.Gzip | zlib.Inflate | zlib.BrotliDecompress> = {
  gzip: () => zlib.createGunzip(),
  'x-gzip': () => zlib.createGunzip(),
  deflate: () => zlib.createInflate(),
  br: () => zlib.createBrotliDecompress(),
};

/** `content-encoding` values a body may come in; anything else is a 415. */
export const BODY_ENCODINGS = ['identity', ...Object.keys(INFLATERS)] as const;

const refusal = (status: BodyRefusal['status'], error: string, message = error): { ok: false } & BodyRefusal => ({ ok: false, status, error, issues: [{ path: 'body', message }] });

export const overLimit = (limitBytes: number, what: string): { ok: false } & BodyRefusal =>
  refusal(413, `request body too large: ${what} over the ${limitBytes}-byte limit`, `over ${limitBytes} bytes ${what === 'sent' ? 'as sent' : 'once inflated'}; send less in one request`);

/** What a request announces before a byte of its body is read: a refusal, or undefined when reading may start. */
export function judgeAnnouncedBody(headers: IncomingMessage['headers'], bounds: BodyBounds): ({ ok: false } & BodyRefusal) | undefined {
  const encoding = (headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (!(BODY_ENCODINGS as readonly string[]).includes(encoding)) {
    return refusal(415, `content-encoding "${encoding}" is not supported`, `send the body as ${BODY_ENCODINGS.join(', ')} (one encoding, not a list)`);
  }
  const announced = Number(headers['content-length'] ?? 0);
  if (Number.isFinite(announced) && announced > bounds.limitBytes) return overLimit(bounds.limitBytes, 'sent');
  return undefined;
}

/** The body, inflated, or why it was refused. Never rejects; on a refusal the request is left unread (answer with `connection: close`). */
export function readBoundedBody(req: IncomingMessage, bounds: BodyBounds): Promise<BoundedBody> {
  const announced = judgeAnnouncedBody(req.headers, bounds);
  if (announced) return Promise.resolve(announced);
  const encoding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  const inflater = INFLATERS[encoding]?.();
  return new Promise<BoundedBody>((resolve) => {
    const kept: Buffer[] = [];
    let sent = 0;
    let inflated = 0;
    let settled = false;
    const finish = (result: BoundedBody) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.off('data', onSent);
      req.off('end', onSentEnd);
      req.off('error', onFailed);
      req.off('aborted', onAborted);
      if (inflater) {
        inflater.off('data', onInflated);
        inflater.destroy();
      }
      if (!result.ok) req.pause();
      resolve(result);
    };
    const timer = setTimeout(
      () => finish(refusal(408, `the request body did not arrive within ${bounds.timeoutMs} ms`, `${sent} bytes came of ${req.headers['content-length'] ?? 'an unannounced length'}; send the whole body at once`)),
      bounds.timeoutMs,
    );
    const onInflated = (chunk: Buffer) => {
      inflated += chunk.length;
      if (inflated > bounds.limitBytes) return finish(overLimit(bounds.limitBytes, 'inflated'));
      kept.push(chunk);
    };
    const onSent = (chunk: Buffer) => {
      sent += chunk.length;
      if (sent > bounds.limitBytes) return finish(overLimit(bounds.limitBytes, 'sent'));
      if (inflater) inflater.write(chunk);
      else onInflated(chunk);
    };
    const onSentEnd = () => {
      if (!inflater) return finish({ ok: true, body: Buffer.concat(kept, inflated) });
      inflater.end();
    };
    const onFailed = (e: Error) => finish(refusal(400, `the request body could not be read: ${e.message}`));
    const onAborted = () => finish(refusal(400, 'the request was aborted before its body was complete'));
    if (inflater) {
      inflater.on('data', onInflated);
      inflater.once('end', () => finish({ ok: true, body: Buffer.concat(kept, inflated) }));
      inflater.once('error', (e: Error) => finish(refusal(400, `the body is not valid ${encoding}: ${e.message}`, `${e.message}; send valid ${encoding} or no content-encoding`)));
    }
    req.on('data', onSent);
    req.once('end', onSentEnd);
    req.once('error', onFailed);
    req.once('aborted', onAborted);
  });
}
