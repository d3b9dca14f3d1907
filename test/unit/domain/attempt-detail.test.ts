import { ATTEMPTS_KEPT, attemptDetail, keptResponseHeaders, MASK, maskHeaders, REQUEST_EXCERPT_BYTES, withAttempt } from '../../../shared/domain/retry/attempt-detail';
import { DeliveryState, transition } from '../../../shared/domain/retry/delivery-state';
import { AttemptResult } from '../../../shared/domain/retry/delivery';
import { Decision } from '../../../shared/domain/retry/retry-decision';

const AT = new Date('2026-11-26T10:00:00.000Z');
const sent = { target: 'https://hooks.example/in', headers: { 'content-type': 'application/json', 'webhook-id': 'msg_1', 'webhook-signature': 'v1,abc= v1a,def=' }, body: Buffer.from('{"order":42}') };
const ok: AttemptResult = { kind: 'response', status: 200, durationMs: 31, bodyExcerpt: 'thanks', headers: { 'content-type': 'text/plain' } };
const retry: Decision = { kind: 'retry', at: new Date('2026-11-26T10:00:05.000Z'), delayMs: 5000, retry: 1, reason: 'HTTP 503: retry 1 in 5 s' };

describe('attempt detail', () => {
  test('signatures keep their scheme, credentials are masked, everything else is as sent', () => {
    expect(maskHeaders({ 'Webhook-Signature': 'v1,abc= v1a,def=', Authorization: 'Bearer s3cret', 'X-Api-Key': 'k', Cookie: 'a=b', 'ce-id': 'e1' })).toEqual({
      'webhook-signature': `v1,${MASK} v1a,${MASK}`,
      authorization: MASK,
      'x-api-key': MASK,
      cookie: MASK,
      'ce-id': 'e1',
    });
    expect(keptResponseHeaders({ 'Set-Cookie': ['a=1', 'b=2'], 'X-Trace': 'abc', 'x-long': 'y'.repeat(600), gone: undefined })).toEqual({ 'set-cookie': MASK, 'x-trace': 'abc', 'x-long': `${'y'.repeat(512)}…` });
  });

  test('what was sent, what came back, how long, and the decision with its time', () => {
    const failed: AttemptResult = { kind: 'response', status: 503, durationMs: 12, bodyExcerpt: 'busy', headers: { 'retry-after': '5' } };
    expect(attemptDetail(sent, failed, retry, 'HTTP 503', AT)).toEqual({
      at: AT.toISOString(),
      durationMs: 12,
      target: 'https://hooks.example/in',
      request: { headers: { 'content-type': 'application/json', 'webhook-id': 'msg_1', 'webhook-signature': `v1,${MASK} v1a,${MASK}` }, bodyBytes: 12, body: { encoding: 'utf8', excerpt: '{"order":42}', truncated: false } },
      response: { status: 503, headers: { 'retry-after': '5' }, bodyExcerpt: 'busy' },
      error: 'HTTP 503',
      decision: { kind: 'retry', at: '2026-11-26T10:00:05.000Z', reason: 'HTTP 503: retry 1 in 5 s' },
    });
    const timeout = attemptDetail(sent, { kind: 'timeout', durationMs: 10_000, timeoutMs: 10_000 }, { kind: 'dead', cause: 'retries-exhausted', reason: 'no retries left' }, 'timed out after 10000 ms', AT);
    expect(timeout).not.toHaveProperty('response');
    expect(timeout.decision).toEqual({ kind: 'dead', reason: 'no retries left' });
    expect(attemptDetail({ ...sent, target: 'projects/p/topics/t' }, { kind: 'published', durationMs: 3, messageId: 'm-7' }, { kind: 'delivered' }, undefined, AT)).toMatchObject({ messageId: 'm-7', decision: { kind: 'delivered' } });
  });

  test('a body is cut at the excerpt size, never inside a character; bytes that are not UTF-8 are base64', () => {
    const long = Buffer.from(`${'a'.repeat(REQUEST_EXCERPT_BYTES - 1)}é and more`, 'utf8');
    const cut = attemptDetail({ ...sent, body: long }, ok, { kind: 'delivered' }, undefined, AT).request;
    expect(cut).toMatchObject({ bodyBytes: long.length, body: { encoding: 'utf8', excerpt: 'a'.repeat(REQUEST_EXCERPT_BYTES - 1), truncated: true } });
    const binary = Buffer.from([0xff, 0x00, 0xfe]);
    expect(attemptDetail({ ...sent, body: binary }, ok, { kind: 'delivered' }, undefined, AT).request.body).toEqual({ encoding: 'base64', excerpt: binary.toString('base64'), truncated: false });
  });

  test(`the newest ${ATTEMPTS_KEPT} attempts are kept, newest first, the body on the newest only`, () => {
    let kept: ReturnType<typeof withAttempt> | undefined;
    for (let i = 0; i < ATTEMPTS_KEPT + 2; i++) kept = withAttempt(kept, attemptDetail(sent, { ...ok, durationMs: i }, { kind: 'delivered' }, undefined, AT));
    expect(kept!.map((a) => a.durationMs)).toEqual([6, 5, 4, 3, 2]);
    expect(kept![0]!.request.body).toBeDefined();
    for (const older of kept!.slice(1)) expect(older.request).not.toHaveProperty('body');
  });

  test('the attempted transition keeps the detail on the record', () => {
    const detail = attemptDetail(sent, ok, { kind: 'delivered' }, undefined, AT);
    const inFlight: DeliveryState = { status: 'IN_FLIGHT', attempts: 0, claimedAt: AT.toISOString() };
    const next = transition(inFlight, { type: 'attempted', at: AT, result: ok, decision: { kind: 'delivered' }, detail });
    expect(next.ok && next.state.attemptLog).toEqual([detail]);
    const without = transition(inFlight, { type: 'attempted', at: AT, result: ok, decision: { kind: 'delivered' } });
    expect(without.ok && without.state).not.toHaveProperty('attemptLog');
  });
});
