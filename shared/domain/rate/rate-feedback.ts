import { AttemptResult, isSuccess } from '../retry/delivery';
import { MAX_PAUSE_MS } from './rate-doc';
import { parseRetryAfter } from '../retry/retry-decision';

// Apart from rate-doc.ts: destination.ts, which delivery.ts imports, builds its schema
// from rate-doc's bounds at load, so rate-doc must not import delivery.ts.
/**
 * What one attempt tells the controller: accepted (only these raise the rate), a sign of
 * overload (a 429, or a timeout: a receiver too slow to answer in time is past its capacity),
 * or neither (other failures teach the rate nothing); and, for a 429 with Retry-After, when
 * the pause it asks for ends (epoch ms, at most MAX_PAUSE_MS from `now`).
 */
export function attemptFeedback(result: AttemptResult, now: Date): { signal: 'accepted' | 'overload' | 'failed'; timedOut?: true; pauseUntil?: number } {
  if (isSuccess(result)) return { signal: 'accepted' };
  // Counted apart too: a rate cut by timeouts is recovered by slow start (the receiver's capacity was never measured).
  if (result.kind === 'timeout') return { signal: 'overload', timedOut: true };
  if (result.kind !== 'response' || result.status !== 429) return { signal: 'failed' };
  const after = result.retryAfter === undefined ? undefined : parseRetryAfter(result.retryAfter, now);
  return after !== undefined && after > 0 ? { signal: 'overload', pauseUntil: now.getTime() + Math.min(after, MAX_PAUSE_MS) } : { signal: 'overload' };
}
