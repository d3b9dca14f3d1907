import { AttemptDetail, AttemptResult, DeliveryRecord, DeliveryStatus } from '../../../shared/domain/retry/delivery';
import { transition } from '../../../shared/domain/retry/delivery-state';
import { afterRedeliveredSend, readsBeforeFirstSend, writtenBefore, pulledBefore, PULLED_BEFORE_AGE_MS } from '../../../shared/domain/delivery/redelivered-push';
import { HeraldEvent } from '../../../shared/domain/events/event';

/** What a send made without reading first does to a record that was already there (create-if-absent found it). */

const T0 = new Date('2026-11-26T12:00:00.000Z');
const at = (ms: number) => new Date(T0.getTime() + ms);
const iso = (ms: number) => at(ms).toISOString();

const ok200: AttemptResult = { kind: 'response', status: 200, durationMs: 7, bodyExcerpt: '' };
const published: AttemptResult = { kind: 'published', durationMs: 3, messageId: 'm-9' };
const e503: AttemptResult = { kind: 'response', status: 503, durationMs: 7, bodyExcerpt: 'busy' };
const timeout: AttemptResult = { kind: 'timeout', durationMs: 5000, timeoutMs: 5000 };
const detail: AttemptDetail = { at: iso(60_000), durationMs: 7, target: 'https://example.com/hook', request: { headers: {}, bodyBytes: 2 }, response: { status: 200, headers: {}, bodyExcerpt: '' }, decision: { kind: 'delivered' } };
const event: HeraldEvent = { attributes: { specversion: '1.0', id: 'e1', source: '/s', type: 't' }, data: Buffer.from('{}') };

const base = { id: 'd.e1', destinationId: 'd', eventId: 'e1', eventSource: '/s', eventType: 't', publishedAt: iso(0) };
const firstFailure = { at: iso(0), status: 503, error: 'HTTP 503', bodyExcerpt: 'busy' };
const records: Record<string, DeliveryRecord> = {
  delivered: { ...base, status: 'DELIVERED', attempts: 1, firstAttemptAt: iso(0), lastAttemptAt: iso(0), deliveredAt: iso(0) },
  deliveredTwice: { ...base, status: 'DELIVERED', attempts: 1, deliveredAt: iso(0), duplicates: { count: 1, lastAt: iso(30_000) } },
  retryScheduled: { ...base, status: 'PENDING', attempts: 1, firstAttemptAt: iso(0), lastAttemptAt: iso(0), availableAt: iso(300_000), lastError: firstFailure, event },
  rateDeferred: { ...base, status: 'PENDING', attempts: 0, availableAt: iso(120_000), rateDeferred: true, event },
  recovered: { ...base, status: 'PENDING', attempts: 0, availableAt: iso(0), recoveredAt: iso(0), event },
  claimed: { ...base, status: 'IN_FLIGHT', attempts: 1, firstAttemptAt: iso(0), availableAt: iso(50_000), claimedAt: iso(55_000), lastError: firstFailure, event },
  dead: { ...base, status: 'DEAD', attempts: 4, reason: 'HTTP 503 on attempt 4', lastError: firstFailure, event },
  deadLetterOwed: { ...base, status: 'DEAD', attempts: 1, reason: 'HTTP 400', deadLetterDueAt: iso(0), event },
  queued: { ...base, status: 'QUEUED', attempts: 0, reason: 'destination suspended', event },
};

describe('afterRedeliveredSend: what the send does to the record it found', () => {
  const send = (result: AttemptResult) => ({ at: at(60_000), result, detail });
  const table: [string, string, AttemptResult, 'duplicate' | 'delivered' | 'left', DeliveryStatus][] = [
    ['DELIVERED, the duplicate succeeded', 'delivered', ok200, 'duplicate', 'DELIVERED'],
    ['DELIVERED, the duplicate failed (the destination got it once already)', 'delivered', e503, 'duplicate', 'DELIVERED'],
    ['DELIVERED with a duplicate already', 'deliveredTwice', ok200, 'duplicate', 'DELIVERED'],
    ['PENDING retry scheduled, the send succeeded', 'retryScheduled', ok200, 'delivered', 'DELIVERED'],
    ['PENDING retry scheduled, the send failed', 'retryScheduled', e503, 'left', 'PENDING'],
    ['PENDING retry scheduled, the send timed out', 'retryScheduled', timeout, 'left', 'PENDING'],
    ['PENDING for a turn of its rate, the send succeeded', 'rateDeferred', ok200, 'delivered', 'DELIVERED'],
    ['PENDING recovered by the reconciler, a topic took it', 'recovered', published, 'delivered', 'DELIVERED'],
    ['IN_FLIGHT under a claimed retry, the send succeeded', 'claimed', ok200, 'delivered', 'DELIVERED'],
    ['IN_FLIGHT under a claimed retry, the send failed', 'claimed', e503, 'left', 'IN_FLIGHT'],
    ['DEAD, the send succeeded', 'dead', ok200, 'left', 'DEAD'],
    ['DEAD with its dead letter still owed, the send failed', 'deadLetterOwed', e503, 'left', 'DEAD'],
    ['QUEUED, the send succeeded', 'queued', ok200, 'left', 'QUEUED'],
    ['QUEUED, the send failed', 'queued', e503, 'left', 'QUEUED'],
  ];

  it.each(table)('%s', (_, name, result, kind, status) => {
    const existing = records[name]!;
    const after = afterRedeliveredSend(existing, send(result));
    expect(after.kind).toBe(kind);
    expect(after.kind === 'left' ? after.status : after.record.status).toBe(status);
    if (after.kind === 'left') return;
    // Never backwards, and the delivery stays itself.
    expect(after.record).toMatchObject(base);
    // Never a second dead letter: nothing that leaves here is DEAD.
    expect(after.record.deadLetterDueAt).toBeUndefined();
  });

  it('a duplicate of a DELIVERED delivery is counted on the record and nothing else changes (no attempt, no new attemptLog entry)', () => {
    const once = afterRedeliveredSend(records.delivered!, send(ok200));
    expect(once).toEqual({ kind: 'duplicate', record: { ...records.delivered, duplicates: { count: 1, lastAt: iso(60_000) } } });
    const twice = afterRedeliveredSend(records.deliveredTwice!, send(e503));
    expect(twice).toEqual({ kind: 'duplicate', record: { ...records.deliveredTwice, duplicates: { count: 2, lastAt: iso(60_000) } } });
  });

  it('a PENDING retry that the send delivered is DELIVERED as a claimed retry\'s success makes it', () => {
    const after = afterRedeliveredSend(records.retryScheduled!, send(ok200));
    // The same state a claim, a start and the attempt would have left.
    const claimed = transition(records.retryScheduled!, { type: 'claim', now: at(300_000), claimTtlMs: 0 });
    if (!claimed.ok) throw new Error(claimed.error.message);
    const viaRetry = transition(claimed.state, { type: 'attempted', at: at(60_000), result: ok200, decision: { kind: 'delivered' }, detail });
    if (!viaRetry.ok) throw new Error(viaRetry.error.message);
    const { event: _e, ...expected } = viaRetry.state;
    expect(after).toEqual({ kind: 'delivered', record: expected });
    expect(after.kind === 'delivered' && after.record).toMatchObject({ attempts: 2, firstAttemptAt: iso(0), lastAttemptAt: iso(60_000), deliveredAt: iso(60_000), attemptLog: [detail] });
    expect(after.kind === 'delivered' && after.record).not.toHaveProperty('availableAt');
    expect(after.kind === 'delivered' && after.record).not.toHaveProperty('event');
  });

  it('a rate-deferred or claimed delivery loses its mark and its claim once DELIVERED', () => {
    for (const name of ['rateDeferred', 'claimed'] as const) {
      const after = afterRedeliveredSend(records[name]!, send(ok200));
      expect(after.kind === 'delivered' && after.record).not.toHaveProperty('rateDeferred');
      expect(after.kind === 'delivered' && after.record).not.toHaveProperty('claimedAt');
    }
  });
});

describe('the delivered-unclaimed transition', () => {
  const t = { type: 'delivered-unclaimed', at: at(1000), result: ok200 } as const;
  it.each(['DELIVERED', 'DEAD', 'QUEUED'] as const)('is refused from %s', (status) => {
    const result = transition({ status, attempts: 1 }, t);
    expect(result.ok).toBe(false);
    expect(!result.ok && result.error.code).toBe('invalid-transition');
  });
  it('takes only a success', () => {
    const result = transition({ status: 'PENDING', attempts: 1, availableAt: iso(5000) }, { ...t, result: e503 });
    expect(!result.ok && result.error.code).toBe('inconsistent-decision');
  });
  it('does not wait for availableAt (the send was made already)', () => {
    const result = transition({ status: 'PENDING', attempts: 1, availableAt: iso(3_600_000) }, t);
    expect(result.ok && result.state).toEqual({ status: 'DELIVERED', attempts: 2, firstAttemptAt: iso(1000), lastAttemptAt: iso(1000), deliveredAt: iso(1000) });
  });
});

describe('readsBeforeFirstSend', () => {
  it.each<[number | undefined, boolean, string]>([
    [undefined, false, 'the emulator (no deliveryAttempt)'],
    [1, false, 'production, the first push'],
    [2, true, 'production, a redelivery'],
    [5, true, 'production, a late redelivery'],
  ])('deliveryAttempt %s → %s (%s)', (attempt, reads, _where) => {
    expect(readsBeforeFirstSend(attempt)).toBe(reads);
  });
});

describe('writtenBefore: this very send found recorded (its update lost its reply and ran again)', () => {
  const send = (result: AttemptResult) => ({ at: at(60_000), result, detail });

  test('its duplicate is there: the same outcome, nothing more to write', () => {
    const first = afterRedeliveredSend(records.delivered!, send(e503));
    expect(first.kind).toBe('duplicate');
    const written = (first as { record: DeliveryRecord }).record;
    expect(writtenBefore(written, first)).toEqual({ kind: 'duplicate', record: written, already: true });
    expect(written.duplicates?.count).toBe(1);
  });

  test('its success settled the waiting retry: delivered, not a duplicate of itself', () => {
    const first = afterRedeliveredSend(records.retryScheduled!, send(ok200));
    expect(first.kind).toBe('delivered');
    const written = (first as { record: DeliveryRecord }).record;
    expect(writtenBefore(written, first)).toEqual({ kind: 'delivered', record: written, already: true });
  });

  test('not written (the record as it was, or changed by another send since): settled afresh', () => {
    const first = afterRedeliveredSend(records.delivered!, send(ok200));
    expect(writtenBefore(records.delivered!, first)).toBeUndefined();
    const another = { ...(first as { record: DeliveryRecord }).record, duplicates: { count: 2, lastAt: iso(60_001) } };
    expect(writtenBefore(another, first)).toBeUndefined();
    expect(writtenBefore(records.delivered!, undefined)).toBeUndefined();
  });

  test('a send of the same moment as the first attempt is a duplicate, not taken for that attempt', () => {
    const delivered = { ...records.delivered!, lastAttemptAt: iso(60_000) };
    expect(afterRedeliveredSend(delivered, send(ok200))).toMatchObject({ kind: 'duplicate', record: { duplicates: { count: 1 } } });
  });
});

test('a pulled message was pulled before when Pub/Sub counts a second delivery, or, uncounted (the emulator), when it is older than the shortest hold', () => {
  const now = Date.parse('2026-12-07T12:00:00Z');
  expect(pulledBefore(2, now, now)).toBe(true);
  expect(pulledBefore(1, now - 60_000, now)).toBe(false);
  expect(pulledBefore(undefined, now - 1_000, now)).toBe(false);
  expect(pulledBefore(undefined, now - PULLED_BEFORE_AGE_MS, now)).toBe(true);
});
