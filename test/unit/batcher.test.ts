import { MemoryDeadLetterQueue } from '../../shared/adapters/memory/dead-letter-queue';
import { MemoryDestinationStore } from '../../shared/adapters/memory/destination-store';
import { runBatcher } from '../../shared/app/delivery/batcher';
import { MemoryBatcherLease } from '../../shared/adapters/memory/batcher-lease';
import { AttemptResult, deliveryId } from '../../shared/domain/retry/delivery';
import { applySpec, destinationSpecSchema } from '../../shared/domain/destinations/destination';
import { eventKey, HeraldEvent } from '../../shared/domain/events/event';
import { toLaneMessage } from '../../shared/domain/intake/lane-message';
import { HttpRequest } from '../../shared/ports/http';
import { PulledMessage } from '../../shared/ports/messaging';
import { PubSubMessage } from '../../shared/domain/events/cloudevents-pubsub';
import { LaneDeps, publishBundled } from '../../shared/app/lanes/lanes';
import { memoryDeliverDeps } from '../support/memory-deliver';
import { MemoryIntakeStore } from '../../shared/adapters/memory/intake-store';
import { journalledMessage } from '../../shared/domain/intake/lane-reference';

/** The batcher over a pull queue in memory: what it acks, holds and gives back, and when it sends. */

const event = (id: string): HeraldEvent => ({ attributes: { specversion: '1.0', id, source: '/shop', type: 'com.example.order', datacontenttype: 'application/json' }, data: Buffer.from(`{"id":"${id}"}`) });

/** The memory queue, with a pull that waits a moment when empty (as Pub/Sub's does) and a record of every hold. */
class Queue extends MemoryDeadLetterQueue {
  readonly holds: { ids: number; seconds: number }[] = [];
  override async pull(max: number): Promise<PulledMessage[]> {
    const got = await super.pull(max);
    if (got.length === 0) await new Promise((r) => setTimeout(r, 10));
    return got;
  }
  override async hold(ackIds: readonly string[], seconds: number): Promise<void> {
    this.holds.push({ ids: ackIds.length, seconds });
    await super.hold(ackIds, seconds);
  }
}

/** Real time, moved on by `skip` (the queue's holds and the batcher judge by it). */
function skippingClock() {
  let offset = 0;
  return { now: () => new Date(Date.now() + offset), skip: (ms: number) => void (offset += ms) };
}

async function setup(batch: { maxEvents: number; maxWaitMs: number }, ids: string[], clock = skippingClock()) {
  const destinations = new MemoryDestinationStore();
  await destinations.put(applySpec('orders', destinationSpecSchema.parse({ url: 'https://hooks.example.com/orders', batch }), undefined, new Date()));
  const sent: HttpRequest[] = [];
  const http = { send: async (r: HttpRequest): Promise<AttemptResult> => (sent.push(r), { kind: 'response', status: 204, durationMs: 2, bodyExcerpt: '' }) };
  const h = memoryDeliverDeps(destinations, { http });
  const queue = new Queue(() => clock.now().getTime());
  for (const id of ids) queue.add(toLaneMessage({ kind: 'first', destinationId: 'orders', event: event(id), publishedAt: new Date().toISOString() }), new Date());
  const batcher = (options: Parameters<typeof runBatcher>[1] = {}) => runBatcher({ deliver: { ...h.deps, clock }, queue, subscription: 'herald-batch-gather', log: h.deps.log }, options);
  return { ...h, queue, sent, batcher, clock };
}

const until = async (what: () => boolean) => {
  for (let i = 0; i < 500 && !what(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(what()).toBe(true);
};

test('a full batch is sent, and its messages acked once its records are written; held meanwhile for its wait, attempt and a margin', async () => {
  const h = await setup({ maxEvents: 5, maxWaitMs: 1000 }, ['a', 'b', 'c', 'd', 'e']);
  const run = h.batcher();
  await until(() => h.queue.acked.length === 5);
  await run.stop();
  expect(h.sent).toHaveLength(1);
  expect(h.queue.remaining()).toEqual([]);
  // 1 s of wait and the preset's 5 s attempt, and 30 s: 36 s, not the slowest destination's 600.
  expect(h.queue.holds).toEqual([{ ids: 5, seconds: 36 }]);
});

test('messages whose batch is still being recorded when half their hold is gone are held on: the batch is not sent twice', async () => {
  const h = await setup({ maxEvents: 3, maxWaitMs: 1000 }, ['a', 'b', 'c']);
  const add = h.deliveries.addDelivered.bind(h.deliveries);
  let commit!: () => void;
  const committed = new Promise<void>((r) => (commit = r));
  // A Firestore as slow as a busy emulator's: the records land long after the send.
  h.deliveries.addDelivered = async (r) => (await committed, add(r));
  const run = h.batcher({ holdTickMs: 5 });
  await until(() => h.sent.length === 1);
  // Twice 20 s: past the 36 s hold set at the pull, each time past half of the hold left.
  for (let i = 0; i < 2; i++) {
    const holds = h.queue.holds.length;
    h.clock.skip(20_000);
    await until(() => h.queue.holds.length > holds);
  }
  await new Promise((r) => setTimeout(r, 50));
  expect(h.sent).toHaveLength(1);
  commit();
  await until(() => h.queue.acked.length === 3);
  await run.stop();
  expect(h.sent).toHaveLength(1);
  expect(h.queue.holds).toEqual([{ ids: 3, seconds: 36 }, { ids: 3, seconds: 36 }, { ids: 3, seconds: 36 }]);
});

test('a batch whose records cannot be written is given back whole, and sent again by the next pull', async () => {
  const h = await setup({ maxEvents: 3, maxWaitMs: 1000 }, ['a', 'b', 'c']);
  const add = h.deliveries.addDelivered.bind(h.deliveries);
  let failures = 1;
  h.deliveries.addDelivered = async (r) => {
    if (failures > 0) {
      failures--;
      throw new Error('Firestore unavailable');
    }
    return add(r);
  };
  const run = h.batcher();
  await until(() => h.queue.acked.length === 3);
  await run.stop();
  expect(h.queue.released.length).toBeGreaterThanOrEqual(1);
  expect(h.sent.length).toBeGreaterThanOrEqual(2);
  const records = await Promise.all(['a', 'b', 'c'].map((id) => h.deliveries.get(deliveryId('orders', eventKey(event(id).attributes)))));
  expect(records.map((r) => r?.status)).toEqual(['DELIVERED', 'DELIVERED', 'DELIVERED']);
});

test('an acknowledgement Pub/Sub refuses is logged, and the run goes on (the messages come back when their hold ends)', async () => {
  const h = await setup({ maxEvents: 2, maxWaitMs: 1000 }, ['a', 'b', 'c', 'd']);
  const ack = h.queue.ack.bind(h.queue);
  let refusals = 1;
  h.queue.ack = async (ids) => {
    if (refusals-- > 0) throw new Error('5 NOT_FOUND: Subscription does not exist');
    return ack(ids);
  };
  const unhandled: unknown[] = [];
  const onUnhandled = (e: unknown) => unhandled.push(e);
  process.on('unhandledRejection', onUnhandled);
  try {
    const run = h.batcher();
    await until(() => h.sent.length === 2 && h.queue.acked.length === 2);
    await new Promise((r) => setTimeout(r, 20));
    await run.stop();
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
  expect(unhandled).toEqual([]);
  expect(h.logs.some((l) => String(l.message).startsWith('batcher: acknowledging messages failed'))).toBe(true);
});

test('a run that pulls for good says so at once; a scheduled run only once it has events, until its idle end can come', async () => {
  const forGood = await setup({ maxEvents: 5, maxWaitMs: 1000 }, []);
  const lease = new MemoryBatcherLease();
  const local = runBatcher({ deliver: forGood.deps, queue: forGood.queue, subscription: 's', log: forGood.deps.log, lease });
  await until(() => lease.writes === 1);
  expect(lease.until!.getTime()).toBeGreaterThan(Date.now() + 20_000);
  await local.stop();

  // Nothing to pull: it ends at its first empty pull, having promised nothing.
  const idle = await setup({ maxEvents: 2, maxWaitMs: 1000 }, []);
  const none = new MemoryBatcherLease();
  expect((await runBatcher({ deliver: idle.deps, queue: idle.queue, subscription: 's', log: idle.deps.log, lease: none }, { untilMs: 60_000, endWhenIdle: true }).done).ended).toBe('idle');
  expect(none.writes).toBe(0);

  const h = await setup({ maxEvents: 2, maxWaitMs: 1000 }, ['a', 'b']);
  const scheduled = new MemoryBatcherLease();
  const started = Date.now();
  const run = runBatcher({ deliver: h.deps, queue: h.queue, subscription: 's', log: h.deps.log, lease: scheduled }, { untilMs: 60_000, endWhenIdle: true, idleEndMs: 300 });
  await until(() => scheduled.writes === 1);
  // Until its last message's idle end: not the run's whole minute.
  expect(scheduled.until!.getTime()).toBeGreaterThanOrEqual(started + 300);
  expect(scheduled.until!.getTime()).toBeLessThanOrEqual(Date.now() + 300);
  expect((await run.done).ended).toBe('idle');
  expect(scheduled.until!.getTime()).toBeLessThanOrEqual(Date.now());
});

test('a run that stops gives its open batches back to the queue, unsent', async () => {
  const h = await setup({ maxEvents: 10, maxWaitMs: 60_000 }, ['a', 'b', 'c']);
  const run = h.batcher();
  await until(() => h.queue.holds.length === 1);
  const report = await (run.stop(), run.done);
  expect(h.sent).toHaveLength(0);
  expect(h.queue.released.sort()).toEqual(['1', '2', '3']);
  expect(report).toMatchObject({ pulled: 3, batches: 0, released: 3, ended: 'stopped' });
});

describe('copies of one event (a producer resend beside its original, a message brought again while its first is held)', () => {
  const ids = (r: HttpRequest) => JSON.parse(r.body.toString()).map((e: { id: string }) => e.id) as string[];

  test('two in one pull go once, in one batch; both messages are acked once it is recorded', async () => {
    const h = await setup({ maxEvents: 2, maxWaitMs: 200 }, ['a', 'b', 'a']);
    const run = h.batcher();
    await until(() => h.queue.acked.length === 3);
    await new Promise((r) => setTimeout(r, 300));
    await run.stop();
    expect(h.sent.map(ids)).toEqual([['a', 'b']]);
  });

  test('one that comes while its first is being sent and recorded is not sent: it ends as the first does', async () => {
    const h = await setup({ maxEvents: 2, maxWaitMs: 200 }, ['a', 'b']);
    const add = h.deliveries.addDelivered.bind(h.deliveries);
    let commit!: () => void;
    const committed = new Promise<void>((r) => (commit = r));
    h.deliveries.addDelivered = async (r) => (await committed, add(r));
    const run = h.batcher();
    await until(() => h.sent.length === 1);
    h.queue.add(toLaneMessage({ kind: 'first', destinationId: 'orders', event: event('a'), publishedAt: new Date().toISOString(), resent: true }), new Date());
    await until(() => h.queue.remaining().length === 3 && h.queue.holds.length === 2);
    await new Promise((r) => setTimeout(r, 300));
    expect(h.queue.acked).toEqual([]);
    commit();
    await until(() => h.queue.acked.length === 3);
    await run.stop();
    expect(h.sent.map(ids)).toEqual([['a', 'b']]);
  });

  test('a message that comes back long after it was published (its reader died holding it) is read first: recorded, it is acked unsent', async () => {
    const h = await setup({ maxEvents: 2, maxWaitMs: 200 }, ['a', 'b']);
    const run = h.batcher();
    await until(() => h.queue.acked.length === 2);
    // 'a' again, as the emulator brings back a message whose hold ran out: no deliveryAttempt, published 20 s ago.
    h.queue.add(toLaneMessage({ kind: 'first', destinationId: 'orders', event: event('a'), publishedAt: new Date(Date.now() - 20_000).toISOString() }), new Date(Date.now() - 20_000));
    // And one never sent, as old: read, not found, sent.
    h.queue.add(toLaneMessage({ kind: 'first', destinationId: 'orders', event: event('c'), publishedAt: new Date(Date.now() - 20_000).toISOString() }), new Date(Date.now() - 20_000));
    await until(() => h.queue.acked.length === 4);
    await run.stop();
    expect(h.sent.map(ids)).toEqual([['a', 'b'], ['c']]);
  });

  test('a run that stops gives back the copies with the open batch they wait on', async () => {
    const h = await setup({ maxEvents: 10, maxWaitMs: 60_000 }, ['a', 'a', 'b']);
    const run = h.batcher();
    await until(() => h.queue.holds.length === 1);
    const report = await (run.stop(), run.done);
    expect(h.sent).toHaveLength(0);
    expect(h.queue.released.sort()).toEqual(['1', '2', '3']);
    expect(report).toMatchObject({ pulled: 3, released: 3 });
  });
});

describe('messages that name their events in the intake journal (domain/intake/lane-reference.ts)', () => {
  const journalled = async () => {
    const h = await setup({ maxEvents: 3, maxWaitMs: 200 }, []);
    const journal = new MemoryIntakeStore();
    await journal.add({ id: 'i-1', acceptedAt: new Date().toISOString(), events: ['a', 'b', 'c', 'd'].map(event), refs: { orders: [1, 3] } });
    const ref = (places: number[], intake = 'i-1') => h.queue.add(journalledMessage({ destinationId: 'orders', intake, places, publishedAt: new Date().toISOString() }), new Date());
    const run = (withJournal = true) => runBatcher({ deliver: h.deps, queue: h.queue, subscription: 'herald-batch-gather', log: h.deps.log, ...(withJournal ? { journal } : {}) });
    return { ...h, journal, ref, run };
  };
  const ids = (r: HttpRequest) => JSON.parse(r.body.toString()).map((e: { id: string }) => e.id) as string[];

  test('are read from the journal, one read a batch however many name it, and batched as their events', async () => {
    const h = await journalled();
    h.ref([1, 3]);
    h.ref([0]);
    const run = h.run();
    await until(() => h.queue.acked.length === 2);
    await run.stop();
    expect(h.sent.map(ids)).toEqual([['b', 'd', 'a']]);
    expect(h.journal.gets).toEqual(['i-1']);
    const record = await h.deliveries.get(deliveryId('orders', eventKey(event('b').attributes)));
    expect(record).toMatchObject({ status: 'DELIVERED', intake: 'i-1' });
  });

  test('one naming a journal batch reconciled and removed is acked unsent: each delivery it names is recorded by then', async () => {
    const h = await journalled();
    h.ref([0, 1], 'i-gone');
    const run = h.run();
    await until(() => h.queue.acked.length === 1);
    await run.stop();
    expect(h.sent).toEqual([]);
    expect(h.logs.some((l) => String(l.message).startsWith('batch lane message named a reconciled journal batch'))).toBe(true);
  });

  test('a batcher with no journal to read leaves the message to come again after its deadline, unsent, and says why', async () => {
    const h = await journalled();
    h.ref([1]);
    const run = h.run(false);
    await until(() => h.logs.some((l) => String(l.message).startsWith('batch lane message could not be read')));
    await new Promise((r) => setTimeout(r, 50));
    await run.stop();
    expect(h.sent).toEqual([]);
    expect(h.queue.acked).toEqual([]);
    expect(h.queue.remaining()).toHaveLength(1);
    expect(h.logs.some((l) => String(l.message).startsWith('batch lane message could not be read (its events in the intake journal)'))).toBe(true);
  });
});

test('a message whose destination is not batched (any more) is delivered alone, as a push would be', async () => {
  const h = await setup({ maxEvents: 10, maxWaitMs: 60_000 }, []);
  await h.deps.destinations.put(applySpec('plain', destinationSpecSchema.parse({ url: 'https://hooks.example.com/plain' }), undefined, new Date()));
  h.queue.add(toLaneMessage({ kind: 'first', destinationId: 'plain', event: event('x'), publishedAt: new Date().toISOString() }), new Date());
  const run = h.batcher();
  await until(() => h.queue.acked.length === 1);
  const report = await (run.stop(), run.done);
  expect(report).toMatchObject({ single: 1, batches: 0 });
  expect(h.sent[0]!.headers['ce-id']).toBe('x');
});

test('a scheduled run with no batch messages ends at its first empty pull; one that had some ends only after a quiet spell', async () => {
  const empty = await setup({ maxEvents: 2, maxWaitMs: 100 }, []);
  const started = Date.now();
  expect(await empty.batcher({ untilMs: 600_000, endWhenIdle: true }).done).toMatchObject({ ended: 'idle', pulled: 0 });
  // Not to its end (ten minutes), however slow this machine.
  expect(Date.now() - started).toBeLessThan(60_000);

  const busy = await setup({ maxEvents: 2, maxWaitMs: 100 }, ['a', 'b']);
  const run = busy.batcher({ untilMs: 60_000, endWhenIdle: true, idleEndMs: 400 });
  await until(() => busy.queue.acked.length === 2);
  // A third event within the quiet spell is still taken by this run.
  busy.queue.add(toLaneMessage({ kind: 'first', destinationId: 'orders', event: event('c'), publishedAt: new Date().toISOString() }), new Date());
  const report = await run.done;
  expect(report).toMatchObject({ ended: 'idle', pulled: 3 });
  expect(busy.queue.acked).toHaveLength(3);
});

describe('bundles: one ingest request’s events for a batched destination in one message (lanes.ts publishBundled)', () => {
  /** The bundle message publishBundled makes of `ids`. */
  async function bundleOf(ids: string[]): Promise<PubSubMessage> {
    const published: PubSubMessage[] = [];
    const bus = { publish: async (_topic: string, m: PubSubMessage) => (published.push(m), 'id') } as unknown as LaneDeps['bus'];
    const destination = { id: 'orders', batch: { maxEvents: 5, maxWaitMs: 1000 } };
    await publishBundled({ bus, lanes: { ensureLane: async () => undefined } as unknown as LaneDeps['lanes'], names: { prefix: 'herald' } }, destination, ids.map((id) => ({ kind: 'first', destinationId: 'orders', event: event(id), publishedAt: new Date().toISOString() })));
    expect(published).toHaveLength(1);
    return published[0]!;
  }

  test('its events join batches as single messages would; it is acked once, when every part is recorded', async () => {
    const h = await setup({ maxEvents: 5, maxWaitMs: 60_000 }, []);
    h.queue.add(await bundleOf(['a', 'b', 'c', 'd', 'e']), new Date());
    const run = h.batcher();
    await until(() => h.queue.acked.length === 1);
    const report = await (run.stop(), run.done);
    expect(report).toMatchObject({ pulled: 1, batches: 1, batched: 5, released: 0 });
    expect(JSON.parse(h.sent[0]!.body.toString()).map((e: { id: string }) => e.id)).toEqual(['a', 'b', 'c', 'd', 'e']);
    const records = await Promise.all(['a', 'e'].map((id) => h.deliveries.get(deliveryId('orders', eventKey(event(id).attributes)))));
    expect(records.map((r) => r?.status)).toEqual(['DELIVERED', 'DELIVERED']);
  });

  test('a run that stops sends the open batch holding the rest of a bundle it sent part of (given back, the sent part would go twice)', async () => {
    const h = await setup({ maxEvents: 5, maxWaitMs: 60_000 }, []);
    h.queue.add(await bundleOf(['a', 'b', 'c', 'd', 'e', 'f', 'g']), new Date());
    const run = h.batcher();
    await until(() => h.sent.length === 1);
    const report = await (run.stop(), run.done);
    expect(h.sent.map((r) => JSON.parse(r.body.toString()).length)).toEqual([5, 2]);
    expect(h.queue.released).toEqual([]);
    expect(h.queue.acked).toHaveLength(1);
    expect(report).toMatchObject({ batches: 2, released: 0 });
  });

  test('a run that stops gives back, unsent, a bundle none of whose events went', async () => {
    const h = await setup({ maxEvents: 10, maxWaitMs: 60_000 }, []);
    h.queue.add(await bundleOf(['a', 'b', 'c']), new Date());
    const run = h.batcher();
    await until(() => h.queue.holds.length === 1);
    const report = await (run.stop(), run.done);
    expect(h.sent).toHaveLength(0);
    expect(h.queue.released).toHaveLength(1);
    expect(report).toMatchObject({ pulled: 1, batches: 0, released: 1 });
  });

  test('a bundle one of whose batches could not be recorded is given back whole once all its parts ended, and the next pull delivers the rest', async () => {
    const h = await setup({ maxEvents: 2, maxWaitMs: 60_000 }, []);
    const add = h.deliveries.addDelivered.bind(h.deliveries);
    let failures = 1;
    h.deliveries.addDelivered = async (r) => {
      if (failures > 0 && r.eventId === 'c') {
        failures--;
        throw new Error('Firestore unavailable');
      }
      return add(r);
    };
    h.queue.add(await bundleOf(['a', 'b', 'c', 'd']), new Date());
    const run = h.batcher();
    await until(() => h.queue.acked.length === 1);
    await run.stop();
    expect(h.queue.released).toHaveLength(1);
    const records = await Promise.all(['a', 'b', 'c', 'd'].map((id) => h.deliveries.get(deliveryId('orders', eventKey(event(id).attributes)))));
    expect(records.map((r) => r?.status)).toEqual(['DELIVERED', 'DELIVERED', 'DELIVERED', 'DELIVERED']);
  });

  test('a bundle that cannot be read is dead-lettered whole, as a foreign lane message is', async () => {
    const h = await setup({ maxEvents: 5, maxWaitMs: 60_000 }, []);
    const bundle = await bundleOf(['a', 'b']);
    h.queue.add({ ...bundle, data: Buffer.from('not gzip') }, new Date());
    const run = h.batcher();
    await until(() => h.queue.acked.length === 1);
    const report = await (run.stop(), run.done);
    expect(report).toMatchObject({ single: 1, batches: 0 });
    expect(h.sent).toHaveLength(0);
    expect(h.bus.filter((b) => b.topic === 'herald-dead-letter').map((b) => b.message.attributes['herald-bundle'])).toEqual(['2']);
  });
});
