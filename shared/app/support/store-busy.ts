import { GRPC, grpcCode } from '../../domain/retry/grpc-status';
import { isHeraldOverload } from '../../domain/retry/herald-overload';
import { WriteContentionError } from '../../ports/deliveries';
import { STORAGE_BUSY } from './unavailable-causes';

/**
 * What an API caller is told when Herald's own store could not take a request now: the
 * sentence of an unavailable answer with Retry-After, or undefined for any other fault (a
 * bug: an internal error). Every admin write may be sent twice to the same effect, so the
 * answer is: send it again. The sentence names no record, code or path of the store's
 * (unavailable-causes.ts).
 */
export function storeBusyMessage(e: unknown): string | undefined {
  if (e instanceof WriteContentionError) {
    return `${STORAGE_BUSY}: other requests kept changing the same record at the same moment and this one gave way (its change was not written): send it again`;
  }
  // ABORTED: a Firestore transaction that lost its lock (the emulator's "Transaction lock timeout").
  if (grpcCode(e) === GRPC.ABORTED) return `${STORAGE_BUSY}: the request collided with another one on the same record: send it again`;
  if (isHeraldOverload(e)) return `${STORAGE_BUSY}: it is overloaded or out of reach right now: send the request again in a moment`;
  return undefined;
}

/** Seconds a caller waits before sending a request refused with storeBusyMessage again. */
export const STORE_BUSY_RETRY_AFTER_S = 1;
