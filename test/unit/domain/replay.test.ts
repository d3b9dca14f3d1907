import { toPubSubMessage } from '../../../shared/domain/events/cloudevents-pubsub';
import { DeliveryRecord } from '../../../shared/domain/retry/delivery';
import { parseReplayMessage, parseReplayRequest, queuedReport, REPLAY_LIMITS, ReplayItem, replayViewOf } from '../../../shared/domain/replay/replay';
import { addItem, beginRun, finishRun } from '../../../shared/domain/replay/replay-runs';
import { DeadLetter, replayedRecord, runSelection, selectDeadLetter } from '../../../shared/domain/replay/replay-selection';

/** The pure part of replay: the request, the selection of dead letters, the record, the report. */

describe('parseReplayRequest', () => {
  test('a full request is accepted; timestamps with offsets are normalised to UTC', () => {
    const parsed = parseReplayRequest({
      id: 'my-replay_1',
      destination: 'orders',
      since: '2026-11-23T15:00:00+01:00',
      until: '2026-11-23T15:30:00.5Z',
      eventTypes: ['com.example.order.*', 'com.example.user.created'],
      limit: 500,
      dryRun: true,
    });
    expect(parsed).toEqual({
      ok: true,
      value: {
        id: 'my-replay_1',
        destination: 'orders',
        since: '2026-11-23T14:00:00.000Z',
        until: '2026-11-23T15:30:00.500Z',
        eventTypes: ['com.example.order.*', 'com.example.user.created'],
        limit: 500,
        dryRun: true,
      },
    });
  });

  test('an empty object selects every dead letter', () => {
    expect(parseReplayRequest({})).toEqual({ ok: true, value: {} });
  });

  test.each<[string, unknown, { path: string; message: RegExp }[]]>([
    ['unknown keys, named', { destination: 'orders', from: 'x', types: [] }, [{ path: '', message: /^unknown fields from, types: a replay request is \{"destination"\?/ }]],
    ['a body that is not an object', [], [{ path: '', message: /must be a JSON object/ }]],
    ['a bad destination id', { destination: 'Orders!' }, [{ path: 'destination', message: /destination id/ }]],
    ['since without a zone', { since: '2026-11-23T14:00:00' }, [{ path: 'since', message: /ISO 8601 timestamp/ }]],
    ['until that is not a time', { until: 'yesterday' }, [{ path: 'until', message: /ISO 8601 timestamp/ }]],
    ['until before since', { since: '2026-11-23T14:00:00Z', until: '2026-11-23T13:00:00Z' }, [{ path: 'until', message: /must not be before since/ }]],
    ['limit 0', { limit: 0 }, [{ path: 'limit', message: /from 1 to 100000/ }]],
    ['limit 1.5', { limit: 1.5 }, [{ path: 'limit', message: /whole number/ }]],
    ['a limit over the max', { limit: REPLAY_LIMITS.maxLimit + 1 }, [{ path: 'limit', message: /from 1 to 100000/ }]],
    ['a limit given as text', { limit: '10' }, [{ path: 'limit', message: /must be a number/ }]],
    ['no event types', { eventTypes: [] }, [{ path: 'eventTypes', message: /at least one type/ }]],
    ['a wildcard inside a type', { eventTypes: ['com.*.created'] }, [{ path: 'eventTypes', message: /may only end/ }]],
    ['an empty type', { eventTypes: [''] }, [{ path: 'eventTypes[0]', message: /must not be empty/ }]],
    ['dryRun as text', { dryRun: 'yes' }, [{ path: 'dryRun', message: /true or false/ }]],
    ['an id with a slash', { id: 'a/b' }, [{ path: 'id', message: /letters, digits/ }]],
  ])('%s → every problem, by field', (_, body, expected) => {
    const parsed = parseReplayRequest(body);
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.issues).toHaveLength(expected.length);
    expected.forEach((e, i) => {
      expect(parsed.issues[i]!.path).toBe(e.path);
      expect(parsed.issues[i]!.message).toMatch(e.message);
    });
  });

  test('several problems are all listed', () => {
    const parsed = parseReplayRequest({ destination: 'X', limit: -1, eventTypes: 'orders' });
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.issues.map((i) => i.path).sort()).toEqual(['destination', 'eventTypes', 'limit']);
  });

  test('parseReplayMessage refuses data that is not JSON, at data', () => {
    const parsed = parseReplayMessage(Buffer.from('replay please'));
    expect(parsed).toEqual({ ok: false, issues: [{ path: 'data', message: expect.stringMatching(/must be a JSON replay request/) as string }] });
    expect(parseReplayMessage(Buffer.from('{"destination":"orders"}'))).toEqual({ ok: true, value: { destination: 'orders' } });
  });
});

const AT = new Date('2026-11-23T14:30:00.000Z');

function deadDelivery(destination: string, eventId: string, type: string, at: Date = AT, extra: Record<string, string> = {}): DeadLetter {
  const event = { attributes: { specversion: '1.0' as const, id: eventId, source: '/shop', type, time: '2026-11-23T14:00:00Z' }, data: Buffer.from('{}') };
  const message = toPubSubMessage(event, { destination, 'delivery-id': `${destination}.key-${eventId}`, attempts: '4', reason: 'HTTP 503 on attempt 4', ...extra });
  return { messageId: `m-${destination}-${eventId}`, deadLetteredAt: at, message };
}

describe('selectDeadLetter', () => {
  const letter = deadDelivery('orders', 'e1', 'com.example.order.created');

  test.each<[string, string, Parameters<typeof selectDeadLetter>[1]]>([
    ['no filter', 'replayable', {}],
    ['its destination', 'replayable', { destination: 'orders' }],
    ['another destination', 'unselected', { destination: 'billing' }],
    ['since at its time (inclusive)', 'replayable', { since: AT.toISOString() }],
    ['since just after it', 'unselected', { since: '2026-11-23T14:30:00.001Z' }],
    ['until at its time (exclusive)', 'unselected', { until: AT.toISOString() }],
    ['until just after it', 'replayable', { until: '2026-11-23T14:30:00.001Z' }],
    ['a window around it', 'replayable', { since: '2026-11-23T14:00:00.000Z', until: '2026-11-23T15:00:00.000Z' }],
    ['its exact type', 'replayable', { eventTypes: ['com.example.order.created'] }],
    ['a prefix of its type', 'replayable', { eventTypes: ['com.example.order.*'] }],
    ['other types', 'unselected', { eventTypes: ['com.example.user.*', 'com.example.order.paid'] }],
    ['its account (default)', 'replayable', { account: 'default' }],
    ['another account', 'unselected', { account: 'acme' }],
    ["another account's destination of the same id", 'unselected', { account: 'acme', destination: 'orders' }],
  ])('%s → %s', (_, kind, request) => {
    expect(selectDeadLetter(letter, request).kind).toBe(kind);
  });

  test("an account's replay: its own destination by the account's id for it; nothing of another account's, nor what Herald rejected", () => {
    const acme = deadDelivery('acme_orders', 'e2', 'com.example.order.created');
    expect(selectDeadLetter(acme, { account: 'acme', destination: 'orders' }).kind).toBe('replayable');
    expect(selectDeadLetter(acme, { account: 'acme' }).kind).toBe('replayable');
    expect(selectDeadLetter(acme, { destination: 'acme_orders' }).kind).toBe('replayable');
    expect(selectDeadLetter(acme, { account: 'default', destination: 'orders' }).kind).toBe('unselected');
    expect(selectDeadLetter(acme, { account: 'acme-two' }).kind).toBe('unselected');
    const rejected: DeadLetter = { messageId: 'm-r', deadLetteredAt: AT, message: { data: Buffer.from('{}'), attributes: { 'herald-reason': 'invalid-event' } } };
    expect(selectDeadLetter(rejected, { account: 'acme' }).kind).toBe('unselected');
    expect(selectDeadLetter(rejected, {}).kind).toBe('not-replayable');
  });

  test('a replayable dead letter names its delivery, destination and event', () => {
    expect(selectDeadLetter(letter, { destination: 'orders' })).toEqual({
      kind: 'replayable',
      facts: {
        messageId: 'm-orders-e1',
        deadLetteredAt: AT.toISOString(),
        destination: 'orders',
        deliveryId: 'orders.key-e1',
        eventId: 'e1',
        eventSource: '/shop',
        eventType: 'com.example.order.created',
      },
    });
  });

  test('a message Herald rejected before any delivery is selected but not replayable, with why', () => {
    // What rejectToDeadLetter publishes: the lane message's attributes, herald-reason, no delivery id.
    const attributes = { 'ce-id': 'e9', 'ce-source': '/shop', 'ce-type': 'com.example.other', 'ce-specversion': '1.0', 'herald-destination': 'orders', 'herald-reason': 'type-unsubscribed', 'herald-error': 'destination orders no longer subscribes to com.example.other', 'herald-message-id': '17' };
    const rejected: DeadLetter = { messageId: 'm-rejected', deadLetteredAt: AT, message: { data: Buffer.from('{}'), attributes } };
    const selection = selectDeadLetter(rejected, { destination: 'orders' });
    expect(selection.kind).toBe('not-replayable');
    if (selection.kind === 'not-replayable') expect(selection.detail).toMatch(/Herald rejected this message \(type-unsubscribed: destination orders no longer subscribes/);
    expect(selectDeadLetter(rejected, { destination: 'orders', eventTypes: ['com.example.order.*'] }).kind).toBe('unselected');
  });

  test("Pub/Sub's backstop dead letters and foreign messages are not replayable", () => {
    const backstop: DeadLetter = { messageId: 'b', deadLetteredAt: AT, message: { data: Buffer.alloc(0), attributes: { CloudPubSubDeadLetterSourceSubscription: 'herald-events-route' } } };
    const selection = selectDeadLetter(backstop, {});
    expect(selection.kind).toBe('not-replayable');
    if (selection.kind === 'not-replayable') expect(selection.detail).toMatch(/backstop/);
    // Without a destination it cannot match a destination filter.
    expect(selectDeadLetter(backstop, { destination: 'orders' }).kind).toBe('unselected');
  });

  test('a delivery id of another destination is not trusted', () => {
    const forged = deadDelivery('orders', 'e1', 'com.example.order.created', AT, { 'delivery-id': 'billing.key-e1' });
    expect(selectDeadLetter(forged, {}).kind).toBe('not-replayable');
  });
});

describe('replayedRecord', () => {
  const dead: DeliveryRecord = {
    id: 'orders.key-e1',
    destinationId: 'orders',
    eventId: 'e1',
    eventSource: '/shop',
    eventType: 'com.example.order.created',
    status: 'DEAD',
    attempts: 4,
    reason: 'HTTP 503 on attempt 4: event-platform allows 3 retries',
    publishedAt: '2026-11-23T13:00:00.000Z',
    firstAttemptAt: '2026-11-23T13:00:01.000Z',
    lastAttemptAt: '2026-11-23T13:35:01.000Z',
    lastError: { at: '2026-11-23T13:35:01.000Z', status: 503, error: 'HTTP 503' },
    event: { attributes: { specversion: '1.0', id: 'e1', source: '/shop', type: 'com.example.order.created' }, data: Buffer.from('{}') },
  };
  const now = new Date('2026-11-23T15:00:00.000Z');

  test('DEAD → PENDING, due now, a fresh retry budget, the dead run kept in replays', () => {
    const next = replayedRecord(dead, 'r1', now)!;
    expect(next).toMatchObject({ status: 'PENDING', attempts: 0, throttled: 0, availableAt: now.toISOString(), publishedAt: dead.publishedAt, event: dead.event });
    expect(next.firstAttemptAt).toBeUndefined();
    expect(next.reason).toBeUndefined();
    expect(next.replays).toEqual([
      { replayId: 'r1', at: now.toISOString(), attempts: 4, firstAttemptAt: dead.firstAttemptAt, lastAttemptAt: dead.lastAttemptAt, reason: dead.reason, lastError: dead.lastError },
    ]);
  });

  test('a second replay appends; the history keeps the newest entries', () => {
    const twice = replayedRecord({ ...replayedRecord(dead, 'r1', now)!, status: 'DEAD', attempts: 2 }, 'r2', now)!;
    expect(twice.replays!.map((r) => [r.replayId, r.attempts])).toEqual([
      ['r1', 4],
      ['r2', 2],
    ]);
    let record: DeliveryRecord = dead;
    for (let i = 0; i < REPLAY_LIMITS.historyEntries + 5; i++) record = { ...replayedRecord(record, `r${i}`, now)!, status: 'DEAD' };
    expect(record.replays).toHaveLength(REPLAY_LIMITS.historyEntries);
    expect(record.replays![0]!.replayId).toBe('r5');
  });

  test.each(['PENDING', 'IN_FLIGHT', 'DELIVERED', 'QUEUED'] as const)('a %s delivery is not replayed', (status) => {
    expect(replayedRecord({ ...dead, status }, 'r1', now)).toBeUndefined();
  });
});

describe('the report', () => {
  const now = new Date('2026-11-23T15:00:00.000Z');
  const start = { id: 'r1', request: { destination: 'orders' }, messageId: '42', now, leaseMs: 600_000, token: 't1' };

  test('a trigger with no report starts one; with a queued one (from the admin API) starts it', () => {
    const fresh = beginRun(undefined, start);
    expect(fresh).toMatchObject({ kind: 'run', resumed: false, report: { id: 'r1', status: 'running', via: 'topic', triggerMessageId: '42', runs: 1, runningUntil: '2026-11-23T15:10:00.000Z', runToken: 't1', request: { destination: 'orders' } } });
    const queued = queuedReport('r1', { id: 'r1', destination: 'orders', dryRun: true }, new Date('2026-11-23T14:59:00Z'));
    expect(queued.request).toEqual({ destination: 'orders', dryRun: true });
    const begun = beginRun(queued, start);
    expect(begun).toMatchObject({ kind: 'run', report: { status: 'running', via: 'admin', dryRun: true, createdAt: '2026-11-23T14:59:00.000Z', startedAt: now.toISOString() } });
  });

  test('a redelivered trigger is a duplicate while its run owns the replay, and once it ended', () => {
    const running = (beginRun(undefined, start) as { report: Parameters<typeof addItem>[0] }).report;
    expect(beginRun(running, { ...start, now: new Date('2026-11-23T15:05:00Z'), token: 't2' }).kind).toBe('duplicate');
    for (const ended of ['drained', 'limit', 'time-up', 'error'] as const) {
      expect(beginRun(finishRun(running, ended, now), { ...start, now: new Date('2026-11-24T00:00:00Z') }).kind).toBe('duplicate');
    }
  });

  test('a run whose lease ran out (its function died) is taken over, its counts kept', () => {
    let running = (beginRun(undefined, start) as { report: Parameters<typeof addItem>[0] }).report;
    running = addItem(running, { messageId: 'm', deadLetteredAt: now.toISOString(), outcome: 'redelivered', removed: true });
    const later = beginRun(running, { ...start, now: new Date('2026-11-23T15:10:00Z'), token: 't2' });
    expect(later).toMatchObject({ kind: 'run', resumed: true, report: { runs: 2, runToken: 't2', matched: 1, redelivered: 1 } });
  });

  test('addItem counts each outcome and lists items up to the cap', () => {
    let report = queuedReport('r1', {}, now);
    const item = (outcome: ReplayItem['outcome'], reason?: ReplayItem['reason']): ReplayItem => ({ messageId: 'm', deadLetteredAt: now.toISOString(), outcome, removed: false, ...(reason ? { reason } : {}) });
    report = addItem(report, item('redelivered'));
    report = addItem(report, item('skipped', 'not-dead'));
    report = addItem(report, item('skipped', 'not-dead'));
    report = addItem(report, item('skipped', 'not-replayable'));
    report = addItem(report, item('failed'));
    report = addItem(report, item('would-redeliver'));
    expect(report).toMatchObject({ matched: 6, redelivered: 1, skipped: 3, failed: 1, wouldRedeliver: 1, skippedBy: { 'not-dead': 2, 'not-replayable': 1 }, itemsOmitted: 0 });
    for (let i = 0; i < REPLAY_LIMITS.reportItems; i++) report = addItem(report, item('redelivered'));
    expect(report.items).toHaveLength(REPLAY_LIMITS.reportItems);
    expect(report.itemsOmitted).toBe(6);
    expect(report.matched).toBe(REPLAY_LIMITS.reportItems + 6);
  });

  test.each([
    ['drained', 'done'],
    ['limit', 'done'],
    ['time-up', 'incomplete'],
    ['error', 'failed'],
  ] as const)('a run that ended %s is %s; the lease and token are gone', (ended, status) => {
    const running = (beginRun(undefined, start) as { report: Parameters<typeof addItem>[0] }).report;
    const finished = finishRun(running, ended, now);
    expect(finished).toMatchObject({ status, ended, endedAt: now.toISOString() });
    expect(finished.runningUntil).toBeUndefined();
    expect(finished.runToken).toBeUndefined();
    expect(replayViewOf(running)).not.toHaveProperty('runToken');
  });
});

describe('runSelection', () => {
  test("closes the window at the replay's start, so a run never takes the dead letters it causes", () => {
    const started = '2026-11-23T15:00:00.000Z';
    expect(runSelection({ destination: 'orders' }, started)).toEqual({ destination: 'orders', until: started });
    expect(runSelection({ until: '2026-11-23T14:00:00.000Z' }, started)).toEqual({ until: '2026-11-23T14:00:00.000Z' });
    expect(runSelection({ until: '2026-11-23T16:00:00.000Z' }, started)).toEqual({ until: started });
  });
});
