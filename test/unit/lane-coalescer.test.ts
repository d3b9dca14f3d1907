import { LaneCoalescer } from '../../shared/app/lanes/lane-coalescer';
import { unbundle } from '../../shared/app/lanes/lanes';
import { PubSubMessage } from '../../shared/domain/events/cloudevents-pubsub';
import { HeraldEvent } from '../../shared/domain/events/event';
import { coalesceStep } from '../../shared/domain/intake/lane-coalescing';
import { LaneMessage } from '../../shared/domain/intake/lane-message';
import { sharedLaneFor } from '../../shared/topology';

/**
 * A busy destination's events from separate requests go onto its lane together (one push); a
 * quiet one's at once. The rules (domain/intake/lane-coalescing.ts), then the coalescer on a recording bus.
 */

describe('the rules', () => {
  const at = (input: Partial<Parameters<typeof coalesceStep>[0]>) => coalesceStep({ now: 1000, lingerMs: 20, limit: 100, ...input });
  test('a destination never seen, or quiet for the linger, goes at once', () => {
    expect(at({})).toEqual({ kind: 'at-once' });
    expect(at({ lastAt: 980 })).toEqual({ kind: 'at-once' });
  });
  test('a destination seen within the linger opens a bundle published a linger later; the next join it, the one that fills it publishes it', () => {
    expect(at({ lastAt: 990 })).toEqual({ kind: 'open', publishAt: 1020 });
    expect(at({ lastAt: 995, waiting: 1 })).toEqual({ kind: 'join', full: false });
    expect(at({ lastAt: 995, waiting: 99 })).toEqual({ kind: 'join', full: true });
  });
  test('a linger of 0 sends everything at once', () => {
    expect(at({ lingerMs: 0, lastAt: 999, waiting: 3 })).toEqual({ kind: 'at-once' });
  });
});

describe('the coalescer', () => {
  const names = { prefix: 'herald' };
  const destination = { id: 'hook' };
  const event = (id: string): HeraldEvent => ({ attributes: { specversion: '1.0', id, source: '/shop', type: 't' }, data: Buffer.from(id) });
  const first = (id: string): LaneMessage => ({ kind: 'first', destinationId: 'hook', event: event(id), publishedAt: '2026-11-27T10:00:00.000Z', intake: `in-${id}` });

  function world(lingerMs = 20, fail = false) {
    let now = 0;
    const published: { topic: string; message: PubSubMessage; at: number }[] = [];
    const coalescer = new LaneCoalescer(
      {
        bus: {
          publish: async (topic, message) => {
            if (fail) throw new Error('14 UNAVAILABLE: pubsub down');
            return String(published.push({ topic, message, at: now }));
          },
        },
        lanes: { ensureLane: async () => undefined, removeLane: async () => undefined },
        names,
      },
      lingerMs,
      () => now,
    );
    const ids = async () => (await Promise.all(published.map(async (p) => ((await unbundle(p.message)) ?? { ok: true as const, members: [p.message] })))).map((r) => (r.ok ? r.members.map((m) => m.attributes['ce-id']) : []));
    return { coalescer, published, ids, advance: (ms: number) => (now += ms) };
  }

  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  test("a quiet destination's event is published at once, alone", async () => {
    const w = world();
    await w.coalescer.publish(destination, first('a'));
    w.advance(25);
    await w.coalescer.publish(destination, first('b'));
    expect(await w.ids()).toEqual([['a'], ['b']]);
    expect(w.published.map((p) => [p.topic, p.message.attributes['herald-bundle']])).toEqual([
      [sharedLaneFor('hook', 'first', names), undefined],
      [sharedLaneFor('hook', 'first', names), undefined],
    ]);
  });

  test("a busy destination's next events wait the linger and go as one bundle; each caller is answered once it is published", async () => {
    const w = world();
    await w.coalescer.publish(destination, first('a'));
    w.advance(5);
    let answered = 0;
    const b = w.coalescer.publish(destination, first('b')).then(() => answered++);
    w.advance(5);
    const c = w.coalescer.publish(destination, first('c')).then(() => answered++);
    await jest.advanceTimersByTimeAsync(19);
    expect(answered).toBe(0);
    expect(await w.ids()).toEqual([['a']]);
    await jest.advanceTimersByTimeAsync(1);
    await Promise.all([b, c]);
    expect(answered).toBe(2);
    expect(await w.ids()).toEqual([['a'], ['b', 'c']]);
    const bundle = await unbundle(w.published[1]!.message);
    expect(bundle?.ok && bundle.members.map((m) => m.attributes['herald-intake'])).toEqual(['in-b', 'in-c']);
  });

  test('a bundle that fills goes at once, without waiting for the linger', async () => {
    const w = world(1000);
    await w.coalescer.publish(destination, first('x'));
    const waiting = Array.from({ length: 100 }, (_, i) => w.coalescer.publish(destination, first(`e${i}`)));
    await Promise.all(waiting);
    expect((await w.ids()).map((m) => m.length)).toEqual([1, 100]);
  });

  test('a bundle whose publish fails fails every event in it (ingest answers 503 for them)', async () => {
    const w = world(20, true);
    await expect(w.coalescer.publish(destination, first('a'))).rejects.toThrow('pubsub down');
    const b = w.coalescer.publish(destination, first('b'));
    const c = w.coalescer.publish(destination, first('c'));
    const settled = Promise.allSettled([b, c]);
    await jest.advanceTimersByTimeAsync(20);
    expect((await settled).map((s) => s.status)).toEqual(['rejected', 'rejected']);
  });

  test("a slow destination's hand-overs are bundled onto its retry lane, never with its first attempts", async () => {
    const w = world();
    const handedOver = (id: string): LaneMessage => ({ kind: 'handed-over', destinationId: 'hook', event: event(id), publishedAt: '2026-11-27T10:00:00.000Z' });
    await w.coalescer.publish(destination, handedOver('h0'));
    await w.coalescer.publish(destination, first('f0'));
    const waiting = [w.coalescer.publish(destination, handedOver('h1')), w.coalescer.publish(destination, first('f1')), w.coalescer.publish(destination, handedOver('h2'))];
    await jest.advanceTimersByTimeAsync(20);
    await Promise.all(waiting);
    const ids = await w.ids();
    const onLane = (topic: string) => w.published.flatMap((p, i) => (p.topic === topic ? [ids[i]] : []));
    expect(onLane(sharedLaneFor('hook', 'retry', names))).toEqual([['h0'], ['h1', 'h2']]);
    expect(onLane(sharedLaneFor('hook', 'first', names))).toEqual([['f0'], ['f1']]);
    // A bundle's members keep their kind: deliver attempts a handed-over one where it lands.
    const bundle = await unbundle(w.published.find((p) => p.message.attributes['herald-bundle'] === '2')!.message);
    expect(bundle?.ok && bundle.members.map((m) => m.attributes['herald-handed-over'])).toEqual(['1', '1']);
  });

  test('flushAll publishes what waits, at once (a stop)', async () => {
    const w = world();
    await w.coalescer.publish(destination, first('a'));
    const b = w.coalescer.publish(destination, first('b'));
    w.coalescer.flushAll();
    await b;
    expect(await w.ids()).toEqual([['a'], ['b']]);
  });
});
