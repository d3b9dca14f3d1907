import { HTTP } from 'cloudevents';
import { BatchGatherer, batchBody, batchIdOf, batchShare, batchSpecSchema, GatherLimits, retryBatchId } from '../../../shared/domain/modes/batching';
import { HeraldEvent } from '../../../shared/domain/events/event';
import { readLaneMessage, toLaneMessage } from '../../../shared/domain/intake/lane-message';

const event = (id: string, data: string | Buffer = `{"id":"${id}"}`, datacontenttype = 'application/json'): HeraldEvent => ({
  attributes: { specversion: '1.0', id, source: '/t', type: 't.x', datacontenttype },
  data: Buffer.isBuffer(data) ? data : Buffer.from(data),
});
const limits: GatherLimits = { maxEvents: 3, maxWaitMs: 1000, maxBytes: 10_000 };
const waiting = (id: string, acceptedAt: number, e = event(id)) => ({ event: e, acceptedAt, bytes: batchShare(e), ticket: id });

describe('BatchGatherer', () => {
  test('a batch closes when full; the next event opens another', () => {
    const g = new BatchGatherer<string>();
    expect(g.add('d', limits, waiting('a', 0))).toEqual([]);
    expect(g.add('d', limits, waiting('b', 1))).toEqual([]);
    const [closed] = g.add('d', limits, waiting('c', 2));
    expect(closed).toMatchObject({ key: 'd', why: 'full' });
    expect(closed!.members.map((m) => m.ticket)).toEqual(['a', 'b', 'c']);
    expect(g.waiting).toBe(0);
    g.add('d', limits, waiting('e', 3));
    expect(g.size('d')).toBe(1);
  });

  test('a batch closes once its oldest event has waited maxWaitMs since Herald accepted it, not before', () => {
    const g = new BatchGatherer<string>();
    g.add('d', limits, waiting('a', 100));
    g.add('d', limits, waiting('b', 600));
    expect(g.nextDueAt()).toBe(1100);
    expect(g.due(1099)).toEqual([]);
    const [closed] = g.due(1100);
    expect(closed).toMatchObject({ why: 'waited' });
    expect(closed!.members).toHaveLength(2);
    expect(g.nextDueAt()).toBeUndefined();
  });

  test('an event that would overflow maxBytes closes the open batch and opens the next one', () => {
    const g = new BatchGatherer<string>();
    const big = event('big', `"${'x'.repeat(600)}"`);
    const small = { ...limits, maxBytes: 1000 };
    g.add('d', small, waiting('a', 0, big));
    const closed = g.add('d', small, waiting('b', 1, big));
    expect(closed.map((c) => [c.why, c.members.map((m) => m.ticket)])).toEqual([['bytes', ['a']]]);
    expect(g.size('d')).toBe(1);
  });

  test('an event larger than maxBytes on its own still goes, alone', () => {
    const g = new BatchGatherer<string>();
    const huge = event('huge', `"${'x'.repeat(5000)}"`);
    expect(g.add('d', { ...limits, maxBytes: 1024 }, waiting('h', 0, huge))).toEqual([]);
    expect(g.due(1000)[0]!.members.map((m) => m.ticket)).toEqual(['h']);
  });

  test('keys gather apart; drain empties every open batch', () => {
    const g = new BatchGatherer<string>();
    g.add('d1', limits, waiting('a', 0));
    g.add('d2', limits, waiting('b', 0));
    expect(g.waiting).toBe(2);
    expect(g.drain().flatMap((b) => b.members.map((m) => m.ticket)).sort()).toEqual(['a', 'b']);
    expect(g.waiting).toBe(0);
  });
});

describe('the batch request body', () => {
  test('is the CloudEvents batched content mode: the SDK reads back every event, JSON, text and binary data alike', () => {
    const events = [event('j'), event('t', 'plain text', 'text/plain'), event('b', Buffer.from([0xff, 0x00, 0x01]), 'application/octet-stream')];
    const body = batchBody(events);
    const parsed = HTTP.toEvent({ headers: { 'content-type': 'application/cloudevents-batch+json' }, body: body.toString('utf8') });
    const list = Array.isArray(parsed) ? parsed : [parsed];
    expect(list.map((e) => e.id)).toEqual(['j', 't', 'b']);
    expect(list[0]!.data).toEqual({ id: 'j' });
    expect(list[1]!.data).toBe('plain text');
    expect(Buffer.from(list[2]!.data_base64!, 'base64')).toEqual(Buffer.from([0xff, 0x00, 0x01]));
    expect(body.length).toBe(events.reduce((n, e) => n + batchShare(e), 0) + 1);
  });
});

describe('batch ids', () => {
  test('follow the members: the same events in the same order are the same batch', () => {
    expect(batchIdOf(['d.a', 'd.b'])).toBe(batchIdOf(['d.a', 'd.b']));
    expect(batchIdOf(['d.a', 'd.b'])).not.toBe(batchIdOf(['d.b', 'd.a']));
    expect(batchIdOf(['d.a'])).toMatch(/^b_[A-Za-z0-9_-]{22}$/);
  });

  test('a retry keeps the batch id only when every member came back', () => {
    expect(retryBatchId('b_x', 3, [0, 1, 2])).toBe('b_x');
    expect(retryBatchId('b_x', 3, [0, 2])).not.toBe('b_x');
    expect(retryBatchId('b_x', 3, [0, 2])).toBe(retryBatchId('b_x', 3, [0, 2]));
  });

  test('a claimed retry carries its place on the lane and reads back with it', () => {
    const message = toLaneMessage({ kind: 'claimed', destinationId: 'd', event: event('a'), claim: '2026-01-01T00:00:00.000Z', batch: { id: 'b_abc', position: 1, size: 3 } });
    const read = readLaneMessage({ subscription: 's', messageId: '1', publishTime: new Date(), message });
    expect(read.ok && read.value.kind === 'claimed' && read.value.batch).toEqual({ id: 'b_abc', position: 1, size: 3 });
  });
});

describe('the batch setting', () => {
  test('takes whole numbers within its bounds and names what is wrong', () => {
    expect(batchSpecSchema.safeParse({ maxEvents: 100, maxWaitMs: 1000 }).success).toBe(true);
    expect(batchSpecSchema.safeParse({ maxEvents: 1000, maxWaitMs: 60_000, maxBytes: 1024 * 1024 }).success).toBe(true);
    const messages = (v: unknown) => (batchSpecSchema.safeParse(v).error?.issues ?? []).map((i) => i.message);
    expect(messages({ maxEvents: 1, maxWaitMs: 1000 })).toEqual(['batch.maxEvents must be 2–1000']);
    expect(messages({ maxEvents: 10, maxWaitMs: 50 })).toEqual(['batch.maxWaitMs must be 100–60000']);
    expect(messages({ maxEvents: 10.5, maxWaitMs: 100 })).toEqual(['batch.maxEvents must be a whole number']);
    expect(messages({ maxEvents: 10, maxWaitMs: 100, maxBytes: 2 * 1024 * 1024 })).toEqual(['batch.maxBytes must be 1024–1048576']);
    expect(messages({ maxEvents: 10, maxWaitMs: 100, every: 1 })).toHaveLength(1);
  });
});
