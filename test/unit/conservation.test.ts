import { MemoryDeliveryStore } from '../../shared/adapters/memory/delivery-store';
import { MemoryIntakeStore } from '../../shared/adapters/memory/intake-store';
import { deliverFromLane } from '../../shared/app/delivery/deliver';
import { LANE_ATTRIBUTES } from '../../shared/domain/intake/lane-message';
import { DestinationDirectory } from '../../shared/app/destinations/destination-directory';
import { ingest } from '../../shared/app/intake/ingest';
import { IntakeJournal } from '../../shared/app/intake/intake-journal';
import { memoryDeliverDeps } from '../support/memory-deliver';
import { reconcileOnce } from '../../shared/app/intake/reconcile';
import { ReconcileDeps } from '../../shared/app/intake/reconcile-deps';
import { PubSubMessage, toPubSubMessage } from '../../shared/domain/events/cloudevents-pubsub';
import { AttemptResult, deliveryId } from '../../shared/domain/retry/delivery';
import { applySpec, destinationSpecSchema } from '../../shared/domain/destinations/destination';
import { eventKey, HeraldEvent } from '../../shared/domain/events/event';
import { createLogger } from '../../shared/log';
import { Clock, systemClock } from '../../shared/ports/clock';
import { RateLeaseStore } from '../../shared/ports/rate';
import { RateDoc } from '../../shared/domain/rate/rate-doc';
import { MemoryDestinationStore } from '../../shared/adapters/memory/destination-store';

/** Conservation on memory adapters: the journal, the reconciler, and the dead letter written before it is sent. */

const event = (id: string, type = 'com.example.order'): HeraldEvent => ({
  attributes: { specversion: '1.0', id, source: '/shop', type, time: '2026-11-25T10:00:00.000Z' },
  data: Buffer.from(`{"n":"${id}"}`),
});

function manualClock(start: string): Clock & { advance(ms: number): void } {
  let now = Date.parse(start);
  return { now: () => new Date(now), advance: (ms) => (now += ms) };
}

async function world(clock: Clock = systemClock) {
  const destinations = new MemoryDestinationStore();
  const deliveries = new MemoryDeliveryStore();
  const intake = new MemoryIntakeStore();
  const bus: { topic: string; message: PubSubMessage }[] = [];
  const logs: Record<string, unknown>[] = [];
  const log = createLogger({ level: 'DEBUG', write: (line) => logs.push(JSON.parse(line) as Record<string, unknown>) });
  const directory = new DestinationDirectory(destinations, clock, 0);
  const add = (id: string, spec: Record<string, unknown>, at: Date) => destinations.put(applySpec(id, destinationSpecSchema.parse(spec), undefined, at));
  /** When each destination's senders last leased (what tells the reconciler its lane is moving). */
  const leasedAt = new Map<string, number>();
  const rateLeases: RateLeaseStore = {
    lease: () => Promise.reject(new Error('not used')),
    peek: async (id) => (leasedAt.has(id) ? ({ holders: { h1: { at: leasedAt.get(id)!, until: leasedAt.get(id)! + 1000 } } } as unknown as RateDoc) : undefined),
  };
  const reconcile: ReconcileDeps = {
    intake,
    deliveries,
    directory,
    bus: { publish: async (topic, message) => String(bus.push({ topic, message })) },
    deadLetterTopic: 'herald-dead-letter',
    clock,
    log,
    graceMs: 60_000,
    batchLimit: 100,
    rateLeases,
    state: {},
  };
  return { destinations, deliveries, intake, bus, logs, log, directory, add, reconcile, leasedAt };
}

/** One binary-mode event of type `t` through ingest, journaled in `store`, to the one destination that takes it. */
async function ingestOne(store: MemoryIntakeStore) {
  const published: PubSubMessage[] = [];
  const destinations = new MemoryDestinationStore();
  await destinations.put(applySpec('d1', destinationSpecSchema.parse({ url: 'https://hooks.example.com/d1', eventTypes: ['t'] }), undefined, new Date()));
  const result = await ingest(
    {
      bus: { publish: async (_t, m) => String(published.push(m)) },
      lanes: { ensureLane: async () => undefined, removeLane: async () => undefined },
      names: { prefix: 'herald' },
      directory: new DestinationDirectory(destinations, systemClock, 0),
      journal: new IntakeJournal(store, systemClock),
      clock: systemClock,
      log: createLogger({ write: () => undefined }),
      maxBodyBytes: 100_000,
      maxEventBytes: 10_000,
    },
    { 'content-type': 'application/json', 'ce-specversion': '1.0', 'ce-id': 'x1', 'ce-source': '/s', 'ce-type': 't' },
    Buffer.from('{}'),
  );
  return { result, published };
}

describe('the intake journal', () => {
  it('writes the events of requests that arrive together in one document, and each learns its batch id at once', async () => {
    const store = new MemoryIntakeStore();
    const journal = new IntakeJournal(store, systemClock);
    const a = journal.add([event('a1'), event('a2')]);
    const b = journal.add([event('b1')]);
    expect(new Set([...a.ids, ...b.ids]).size).toBe(1);
    await Promise.all([a.durable, b.durable]);
    expect(store.writes).toHaveLength(1);
    expect(store.writes[0]!.events.map((e) => e.attributes.id)).toEqual(['a1', 'a2', 'b1']);
  });

  it('one write at a time, at most one per gap: requests arriving meanwhile share the next; a failed write fails only its own', async () => {
    const store = new MemoryIntakeStore();
    const releases: (() => void)[] = [];
    const startedAt: number[] = [];
    const write = store.add.bind(store);
    store.add = async (batch) => {
      startedAt.push(performance.now());
      await new Promise<void>((r) => releases.push(r));
      return write(batch);
    };
    const journal = new IntakeJournal(store, systemClock, undefined, 50);
    const tick = () => new Promise((r) => setImmediate(r));
    const first = journal.add([event('a')]);
    await tick();
    expect(releases).toHaveLength(1);
    const later = [journal.add([event('b')]), journal.add([event('c')])];
    await tick();
    await tick();
    expect(releases).toHaveLength(1);
    expect(later[0]!.ids[0]).toBe(later[1]!.ids[0]);
    expect(later[0]!.ids[0]).not.toBe(first.ids[0]);
    releases[0]!();
    await first.durable;
    // The next write waits for the gap since the last one started (a timer may fire a millisecond early).
    while (releases.length < 2) await new Promise((r) => setTimeout(r, 5));
    expect(startedAt[1]! - startedAt[0]!).toBeGreaterThanOrEqual(49);
    store.failing = new Error('UNAVAILABLE');
    releases[1]!();
    // A failed write is read back and written once more: both wait for their release.
    while (releases.length < 3) await new Promise((r) => setTimeout(r, 5));
    releases[2]!();
    await expect(Promise.all(later.map((l) => l.durable))).rejects.toThrow('UNAVAILABLE');
    expect(store.writes.map((b) => b.events.map((e) => e.attributes.id))).toEqual([['a']]);
  });

  it('ingest answers 503 and accepts nothing when the journal cannot record the events', async () => {
    const store = new MemoryIntakeStore();
    store.failing = Object.assign(new Error('14 UNAVAILABLE: no connection'), { code: 14 });
    const { result } = await ingestOne(store);
    expect(result.kind).toBe('unavailable');
    expect(result.body).toMatchObject({ accepted: [], failed: [{ id: 'x1' }] });
  });

  it('ingest stamps each published event with its batch id', async () => {
    const store = new MemoryIntakeStore();
    const { result, published } = await ingestOne(store);
    expect(result.kind).toBe('accepted');
    expect(published[0]!.attributes['herald-intake']).toBe(store.writes[0]!.id);
  });
});

/** Destination `orders` (created an hour before) and event e1 journaled at 10:00 on a manual clock. */
async function ordersWithOneEvent() {
  const clock = manualClock('2026-11-25T10:00:00.000Z');
  const w = await world(clock);
  await w.add('orders', { url: 'https://orders.example/hook' }, new Date('2026-11-25T09:00:00.000Z'));
  const { ids, durable } = new IntakeJournal(w.intake, clock).add([event('e1')]);
  await durable;
  return { clock, w, ids };
}

describe('the reconciler', () => {
  it('creates PENDING records for accepted events that never reached deliver, once their grace has passed, and removes the batch', async () => {
    const clock = manualClock('2026-11-25T10:00:00.000Z');
    const w = await world(clock);
    await w.add('orders', { url: 'https://orders.example/hook', eventTypes: ['com.example.*'] }, new Date('2026-11-25T09:00:00.000Z'));
    await w.add('audit', { url: 'https://audit.example/hook', eventTypes: ['com.other.*'] }, new Date('2026-11-25T09:00:00.000Z'));
    // Created after the events were accepted: not owed them.
    await w.add('late', { url: 'https://late.example/hook' }, new Date('2026-11-25T10:00:30.000Z'));
    const journal = new IntakeJournal(w.intake, clock);
    const { ids, durable } = journal.add([event('e1'), event('e2')]);
    await durable;
    // e1 reached deliver; e2 never did.
    await w.deliveries.create({ id: deliveryId('orders', eventKey(event('e1').attributes)), destinationId: 'orders', eventId: 'e1', eventSource: '/shop', eventType: 'com.example.order', status: 'DELIVERED', attempts: 1, intake: ids[0]! });

    clock.advance(30_000);
    expect(await reconcileOnce(w.reconcile)).toMatchObject({ batches: 0, recovered: 0 });
    clock.advance(31_000);
    expect(await reconcileOnce(w.reconcile)).toEqual({ batches: 1, postponed: 0, expected: 2, recovered: 1, deadLetters: 0 });
    const recovered = await w.deliveries.get(deliveryId('orders', eventKey(event('e2').attributes)));
    expect(recovered).toMatchObject({ status: 'PENDING', attempts: 0, availableAt: clock.now().toISOString(), intake: ids[0], recoveredAt: clock.now().toISOString() });
    expect(recovered?.event?.data.toString()).toBe('{"n":"e2"}');
    expect(w.intake.batches.size).toBe(0);
    expect(w.logs.filter((l) => l.severity === 'WARNING' && l.deliveryId === recovered!.id)).toHaveLength(1);
  });

  it('waits while the destination is still being delivered to (its lane has a backlog), up to four graces', async () => {
    const { clock, w } = await ordersWithOneEvent();
    const busyNow = () => w.leasedAt.set('orders', clock.now().getTime() - 1000);
    clock.advance(61_000);
    busyNow();
    expect(await reconcileOnce(w.reconcile)).toMatchObject({ batches: 0, postponed: 1, recovered: 0 });
    expect(w.intake.batches.size).toBe(1);
    // It leaves the postponed batch alone for the activity window, rather than read it each round.
    const due = jest.spyOn(w.intake, 'due');
    clock.advance(10_000);
    expect(await reconcileOnce(w.reconcile)).toMatchObject({ batches: 0, postponed: 0 });
    expect(due).toHaveBeenCalledWith(expect.any(Date), 100, new Date('2026-11-25T10:00:00.000Z').toISOString());
    // Idle for longer than the window: the lane is not moving; recovered.
    clock.advance(30_000);
    expect(await reconcileOnce(w.reconcile)).toMatchObject({ batches: 1, postponed: 0, recovered: 1 });

    // Busy for ever: recovered all the same once four graces have passed.
    const { durable: second } = new IntakeJournal(w.intake, clock).add([event('e2')]);
    await second;
    clock.advance(61_000);
    busyNow();
    expect(await reconcileOnce(w.reconcile)).toMatchObject({ postponed: 1 });
    clock.advance(180_000);
    busyNow();
    expect(await reconcileOnce(w.reconcile)).toMatchObject({ batches: 1, recovered: 1 });
  });

  it('costs one aggregation for the whole round, not a read per delivery, when every record is there', async () => {
    const { clock, w, ids } = await ordersWithOneEvent();
    await w.deliveries.create({ id: deliveryId('orders', eventKey(event('e1').attributes)), destinationId: 'orders', eventId: 'e1', eventSource: '/shop', eventType: 'com.example.order', status: 'DELIVERED', attempts: 1, intake: ids[0]! });
    const existing = jest.spyOn(w.deliveries, 'existing');
    const perBatch = jest.spyOn(w.deliveries, 'tallyFromIntake');
    clock.advance(61_000);
    expect(await reconcileOnce(w.reconcile)).toMatchObject({ batches: 1, recovered: 0 });
    expect(existing).not.toHaveBeenCalled();
    expect(perBatch).not.toHaveBeenCalled();
  });

  it('extra records do not hide a missing one: batch A lost its record to d1 while batch B has one for d3, deleted since (issue 35 item 1)', async () => {
    const clock = manualClock('2026-11-25T10:00:00.000Z');
    const w = await world(clock);
    const before = new Date('2026-11-25T09:00:00.000Z');
    await w.add('d1', { url: 'https://d1.example/hook', eventTypes: ['com.example.a'] }, before);
    await w.add('d2', { url: 'https://d2.example/hook', eventTypes: ['com.example.b'] }, before);
    await w.add('d3', { url: 'https://d3.example/hook', eventTypes: ['com.example.b'] }, before);
    const journal = new IntakeJournal(w.intake, clock);
    const first = journal.add([event('ea', 'com.example.a')]);
    await first.durable;
    clock.advance(5);
    const second = journal.add([event('eb', 'com.example.b')]);
    await second.durable;
    const [a, b] = [first.ids[0]!, second.ids[0]!];
    expect(a).not.toBe(b);
    const record = (dest: string, id: string, type: string, intake: string) =>
      w.deliveries.create({ id: deliveryId(dest, eventKey(event(id, type).attributes)), destinationId: dest, eventId: id, eventSource: '/shop', eventType: type, status: 'DELIVERED', attempts: 1, intake });
    // A's event never reached d1; B's reached d2 and d3, and d3 is deleted.
    await record('d2', 'eb', 'com.example.b', b);
    await record('d3', 'eb', 'com.example.b', b);
    await w.destinations.delete('d3');
    clock.advance(61_000);
    expect(await reconcileOnce(w.reconcile)).toEqual({ batches: 2, postponed: 0, expected: 2, recovered: 1, deadLetters: 0 });
    expect(await w.deliveries.get(deliveryId('d1', eventKey(event('ea', 'com.example.a').attributes)))).toMatchObject({ status: 'PENDING', intake: a });
  });

  it('within one batch and destination: a record of an event the destination no longer takes does not stand for one it still takes', async () => {
    const clock = manualClock('2026-11-25T10:00:00.000Z');
    const w = await world(clock);
    const before = new Date('2026-11-25T09:00:00.000Z');
    await w.add('d1', { url: 'https://d1.example/hook', eventTypes: ['com.example.a', 'com.example.b'] }, before);
    const { ids: [a], durable } = new IntakeJournal(w.intake, clock).add([event('e1', 'com.example.a'), event('e2', 'com.example.b')]);
    await durable;
    await w.deliveries.create({ id: deliveryId('d1', eventKey(event('e1', 'com.example.a').attributes)), destinationId: 'd1', eventId: 'e1', eventSource: '/shop', eventType: 'com.example.a', status: 'DELIVERED', attempts: 1, intake: a! });
    // e2's record is missing; d1 now takes only com.example.b, so e1's record is an extra one.
    await w.add('d1', { url: 'https://d1.example/hook', eventTypes: ['com.example.b'] }, before);
    clock.advance(61_000);
    expect(await reconcileOnce(w.reconcile)).toMatchObject({ batches: 1, expected: 1, recovered: 1 });
    expect(await w.deliveries.get(deliveryId('d1', eventKey(event('e2', 'com.example.b').attributes)))).toMatchObject({ status: 'PENDING' });
  });

  it('an event that joins a batch after a destination was created is expected there: its lost lane message is recovered (issue 51 item 6)', async () => {
    const clock = manualClock('2026-11-25T10:00:00.000Z');
    const w = await world(clock);
    await w.add('orders', { url: 'https://orders.example/hook', eventTypes: ['com.example.*'] }, new Date('2026-11-25T09:00:00.000Z'));
    // Journal writes held until released: the second batch opens with e1 and stays open while e2 joins it.
    const releases: (() => void)[] = [];
    const write = w.intake.add.bind(w.intake);
    w.intake.add = async (batch) => {
      await new Promise<void>((r) => releases.push(r));
      return write(batch);
    };
    const journal = new IntakeJournal(w.intake, clock, undefined, 0);
    let joined = 0;
    const join = journal.add.bind(journal);
    journal.add = (events, newest) => (joined++, join(events, newest));
    const published: PubSubMessage[] = [];
    const deps = {
      bus: { publish: async (_t: string, m: PubSubMessage) => String(published.push(m)) },
      lanes: { ensureLane: async () => undefined, removeLane: async () => undefined },
      names: { prefix: 'herald' },
      directory: w.directory,
      journal,
      clock,
      log: w.log,
      maxBodyBytes: 100_000,
      maxEventBytes: 10_000,
    };
    const send = (id: string) => ingest(deps, { 'content-type': 'application/json', 'ce-specversion': '1.0', 'ce-id': id, 'ce-source': '/shop', 'ce-type': 'com.example.order' }, Buffer.from('{}'));
    const until = async (ok: () => boolean) => {
      while (!ok()) await new Promise((r) => setImmediate(r));
    };
    const answers = [send('e0')];
    await until(() => releases.length === 1);
    clock.advance(1000);
    answers.push(send('e1'));
    await until(() => joined === 2);
    clock.advance(1000);
    await w.add('newcomer', { url: 'https://newcomer.example/hook', eventTypes: ['com.example.order'] }, clock.now());
    clock.advance(1000);
    answers.push(send('e2'));
    await until(() => joined === 3);
    // Released as they come: however the journal cuts its batches, each is written.
    let released = 0;
    const releasing = setInterval(() => releases.slice(released).forEach((r) => (released++, r())), 1);
    const kinds = (await Promise.all(answers)).map((a) => a.kind);
    clearInterval(releasing);
    expect(kinds).toEqual(['accepted', 'accepted', 'accepted']);
    expect(published.filter((m) => m.attributes['herald-destination'] === 'newcomer').map((m) => m.attributes['ce-id'])).toEqual(['e2']);
    // Every lane message but e2's to the newcomer reached deliver; that one was lost.
    for (const m of published.filter((m) => !(m.attributes['herald-destination'] === 'newcomer'))) {
      const id = m.attributes['ce-id']!;
      await w.deliveries.create({ id: deliveryId(m.attributes['herald-destination']!, eventKey(event(id).attributes)), destinationId: m.attributes['herald-destination']!, eventId: id, eventSource: '/shop', eventType: 'com.example.order', status: 'DELIVERED', attempts: 1, intake: m.attributes['herald-intake']! });
    }
    clock.advance(61_000);
    // Only the lost one is recovered: e1, routed before the newcomer existed, is not owed to it.
    expect(await reconcileOnce(w.reconcile)).toMatchObject({ recovered: 1 });
    expect(w.intake.batches.size).toBe(0);
    expect(await w.deliveries.get(deliveryId('newcomer', eventKey(event('e2').attributes)))).toMatchObject({ status: 'PENDING', destinationId: 'newcomer' });
  });

  it('a record written under an earlier intake of the same event (a producer resent it) counts: nothing recovered', async () => {
    const { clock, w } = await ordersWithOneEvent();
    await w.deliveries.create({ id: deliveryId('orders', eventKey(event('e1').attributes)), destinationId: 'orders', eventId: 'e1', eventSource: '/shop', eventType: 'com.example.order', status: 'DELIVERED', attempts: 1, intake: 'i-earlier' });
    clock.advance(61_000);
    expect(await reconcileOnce(w.reconcile)).toEqual({ batches: 1, postponed: 0, expected: 1, recovered: 0, deadLetters: 0 });
  });

  it('publishes a dead letter still owed a minute after its delivery died, and marks it sent', async () => {
    const clock = manualClock('2026-11-25T10:00:00.000Z');
    const w = await world(clock);
    await w.deliveries.create({
      id: 'orders.k1',
      destinationId: 'orders',
      eventId: 'e1',
      eventSource: '/shop',
      eventType: 'com.example.order',
      status: 'DEAD',
      attempts: 4,
      reason: 'out of retries',
      deadLetterDueAt: clock.now().toISOString(),
      event: event('e1'),
    });
    expect((await reconcileOnce(w.reconcile)).deadLetters).toBe(0);
    clock.advance(61_000);
    expect((await reconcileOnce(w.reconcile)).deadLetters).toBe(1);
    expect(w.bus.filter((m) => m.topic === 'herald-dead-letter')).toHaveLength(1);
    expect(await w.deliveries.get('orders.k1')).not.toHaveProperty('deadLetterDueAt');
    expect((await reconcileOnce(w.reconcile)).deadLetters).toBe(0);
  });
});

describe('a DEAD delivery is written before its dead letter is published', () => {
  it('two copies of one lane message attempted at once publish one dead letter', async () => {
    const w = await world();
    await w.add('orders', { url: 'https://orders.example/hook', policy: 'adobe-best-effort' }, new Date());
    let answered = 0;
    // Both attempts are under way before either is recorded.
    let bothIn!: () => void;
    const together = new Promise<void>((r) => (bothIn = r));
    const { deps } = memoryDeliverDeps(
      w.destinations,
      {
        http: {
          send: async (): Promise<AttemptResult> => {
            if (++answered === 2) bothIn();
            await together;
            return { kind: 'response', status: 400, durationMs: 1, bodyExcerpt: 'bad' };
          },
        },
      },
      { bus: { publish: async (topic: string, message: PubSubMessage) => String(w.bus.push({ topic, message })) }, directory: w.directory, deliveries: w.deliveries, log: w.log },
    );
    const push = {
      subscription: 'projects/p/subscriptions/herald-lane-orders-deliver',
      messageId: 'm1',
      publishTime: new Date(),
      message: toPubSubMessage(event('e1'), { [LANE_ATTRIBUTES.destination]: 'orders' }),
    };
    const outcomes = await Promise.all([deliverFromLane(deps, push), deliverFromLane(deps, { ...push, messageId: 'm1-again' })]);
    expect(outcomes.map((o) => o.kind).sort()).toEqual(['attempted', 'duplicate']);
    expect(w.bus.filter((m) => m.topic === 'herald-dead-letter')).toHaveLength(1);
    deps.limiter.close();
  });
});
