import { AttemptResult } from '../../../shared/domain/retry/delivery';
import { MAX_PAUSE_MS } from '../../../shared/domain/rate/rate-doc';
import { attemptFeedback } from '../../../shared/domain/rate/rate-feedback';

const now = new Date('2026-11-23T12:00:00Z');
const response = (status: number, retryAfter?: string): AttemptResult => ({ kind: 'response', status, durationMs: 5, bodyExcerpt: '', ...(retryAfter ? { retryAfter } : {}) });

describe('what an attempt tells the rate controller', () => {
  it('2xx and a topic that took the message are accepted', () => {
    expect(attemptFeedback(response(204), now)).toEqual({ signal: 'accepted' });
    expect(attemptFeedback({ kind: 'published', durationMs: 3, messageId: 'm' }, now)).toEqual({ signal: 'accepted' });
  });

  it('a 429 and a timeout are overload (a timeout marked as one); other failures are neither', () => {
    expect(attemptFeedback(response(429), now)).toEqual({ signal: 'overload' });
    expect(attemptFeedback({ kind: 'timeout', durationMs: 5000, timeoutMs: 5000 }, now)).toEqual({ signal: 'overload', timedOut: true });
    expect(attemptFeedback(response(500), now)).toEqual({ signal: 'failed' });
    expect(attemptFeedback(response(503, '30'), now)).toEqual({ signal: 'failed' });
    expect(attemptFeedback({ kind: 'network', durationMs: 1, error: 'ECONNREFUSED' }, now)).toEqual({ signal: 'failed' });
  });

  it("a 429's Retry-After pauses until then, at most a minute", () => {
    expect(attemptFeedback(response(429, '7'), now).pauseUntil).toBe(now.getTime() + 7000);
    expect(attemptFeedback(response(429, '3600'), now).pauseUntil).toBe(now.getTime() + MAX_PAUSE_MS);
    expect(attemptFeedback(response(429, 'soon'), now).pauseUntil).toBeUndefined();
  });
});
