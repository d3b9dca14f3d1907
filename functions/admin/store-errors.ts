import type { Response } from 'express';
import { STORE_BUSY_RETRY_AFTER_S, storeBusyMessage } from '../../shared/app/support/store-busy';
import { newErrorId } from '../../shared/app/support/unavailable-causes';
import { HeraldRequest, sendJson } from '../http';
import { runtime } from '../process-runtime';

/**
 * A store that could not take the request now (contention on one record, a lock timeout,
 * Firestore overloaded) is a 503 with Retry-After that says to send it again, never a 500.
 */
export function answeringStoreBusy(handler: (req: HeraldRequest, res: Response) => Promise<void>) {
  return async (req: HeraldRequest, res: Response): Promise<void> => {
    try {
      await handler(req, res);
    } catch (e) {
      const busy = storeBusyMessage(e);
      if (busy === undefined || res.headersSent) throw e;
      // The store's own words (codes, document paths) go to the log only; the answer carries the id that finds them.
      const errorId = newErrorId();
      runtime().log.warn(`admin: ${req.method} ${req.path} answered 503: ${busy}`, { errorId, error: (e as Error).message });
      res.set('retry-after', String(STORE_BUSY_RETRY_AFTER_S));
      sendJson(res, 503, { error: busy, errorId });
    }
  };
}

/**
 * Firestore's INVALID_ARGUMENT: a value Herald passed on (an id it reserves, such as `__x__`, a
 * string it cannot store) that the edge let through. The request's fault, answered at once as
 * a 400 rather than a 500 that says to retry; its detail only without any Firestore path.
 */
export function storeRefusalMessage(e: unknown): string | undefined {
  const { code, details } = (e ?? {}) as { code?: unknown; details?: unknown };
  // An expired transaction is INVALID_ARGUMENT too, and no fault of the request's.
  if (code !== 3 || /transaction has expired/i.test(String(details))) return undefined;
  const detail = typeof details === 'string' && details.length > 0 && details.length <= 200 && !details.includes('projects/') ? `: ${details}` : '';
  return `the request holds a value Herald cannot store (Firestore refused it as INVALID_ARGUMENT${detail}); check the ids and strings it sends`;
}
