import { MemoryDestinationStore } from '../../shared/adapters/memory/destination-store';
import { MemoryIntakeStore } from '../../shared/adapters/memory/intake-store';
import { DestinationDirectory } from '../../shared/app/destinations/destination-directory';
import { ingest, IngestDeps } from '../../shared/app/intake/ingest';
import { IntakeJournal } from '../../shared/app/intake/intake-journal';
import { OperationalEvents } from '../../shared/app/operational/operational-events';
import { suspendDestination } from '../../shared/app/delivery/suspend-and-reactivate';
import { DestinationCounters } from '../../shared/app/destinations/destination-counters';
import { MemoryCounterStore } from '../../shared/adapters/memory/counter-store';
import { admitNotices } from '../../shared/app/intake/admit-notices';
import { applySpec, destinationSpecSchema } from '../../shared/domain/destinations/destination';
import { PubSubMessage } from '../../shared/domain/events/cloudevents-pubsub';
import { NoticeLimit } from '../../shared/domain/operational/notice-limit';
import { OperationalNotice } from '../../shared/domain/operational/operational-events';
import { createLogger } from '../../shared/log';
import { eventually } from '../support/eventually';

/** Operational events through ingest's core, on memory stores: who gets them, the rate limit, the quota's refusal told. */

const INTERVAL_MS = 60_000;

async function world(eventTypes: string[] | undefined) {
  let now = new Date('2026-12-06T10:00:00Z').getTime();
  const clock = { now: () => new Date(now) };
  const destinations = new MemoryDestinationStore();
  await destinations.put(applySpec('orders', destinationSpecSchema.parse({ url: 'https://hooks.example.com/orders', eventTypes: ['com.example.*', 'herald.*'] }), undefined, new Date('2026-12-01T00:00:00Z')));
  if (eventTypes) await destinations.put(applySpec('ops', destinationSpecSchema.parse({ url: 'https://ops.example.com/herald', eventTypes }), undefined, new Date('2026-12-01T00:00:00Z')));
  const published: { topic: string; message: PubSubMessage }[] = [];
  const store = new MemoryIntakeStore();
  const log = createLogger({ level: 'ERROR', write: () => undefined });
  const directory = new DestinationDirectory(destinations, clock, 0);
  const bus = { publish: async (topic: string, message: PubSubMessage) => String(published.push({ topic, message })) };
  const base: IngestDeps = {
    bus,
    lanes: { ensureLane: async () => undefined, removeLane: async () => undefined },
    names: { prefix: 'herald' },
    directory,
    journal: new IntakeJournal(store, clock, undefined, 0, log),
    clock,
    log,
    maxBodyBytes: 100_000,
    maxEventBytes: 10_000,
  };
  const operational = new OperationalEvents({ admit: (account, events) => admitNotices({ ...base, account }, events), directory, clock, log, prefix: 'herald.', limit: new NoticeLimit(INTERVAL_MS) });
  /** The operational events sent onto lanes: to whom, of what type, with what data. */
  const sent = () =>
    published
      .filter((p) => p.message.attributes['ce-source'] === '/herald')
      .map((p) => ({ to: p.message.attributes['herald-destination'], type: p.message.attributes['ce-type'], data: JSON.parse(p.message.data.toString()) as Record<string, unknown> }));
  const counters = new DestinationCounters(new MemoryCounterStore(), clock, log, { bucketMs: 60_000, flushMs: 1_000, shard: 0 });
  const suspension = { destinations, directory, counters, bus, notificationsTopic: 'herald-notifications', clock, log };
  return { base, operational, suspension, sent, store, published, advance: (ms: number) => (now += ms) };
}

const dead = (n: number): OperationalNotice => ({
  kind: 'delivery.dead',
  key: `orders.k${n}`,
  concerns: 'orders',
  data: { account: 'default', destinationId: 'orders', deliveryId: `orders.k${n}`, eventId: `e${n}`, eventSource: '/shop', eventType: 'com.example.order.created', attempts: 3, reason: 'retries exhausted' },
});

test('a death goes to the subscribed destination, not to the one it is about; one an interval, the rest counted', async () => {
  const w = await world(['herald.delivery.dead']);
  await w.operational.emit(dead(1));
  await w.operational.emit(dead(2));
  await w.operational.emit(dead(3));
  // The record names the destination; its url is looked up for `target`.
  expect(w.sent()).toEqual([{ to: 'ops', type: 'herald.delivery.dead', data: expect.objectContaining({ eventId: 'e1', target: 'https://hooks.example.com/orders', suppressed: 0 }) }]);
  w.advance(INTERVAL_MS);
  await w.operational.emit(dead(4));
  expect(w.sent().map((s) => [s.to, s.data.eventId, s.data.suppressed])).toEqual([
    ['ops', 'e1', 0],
    ['ops', 'e4', 2],
  ]);
});

test('an account where no destination would receive it gets nothing, and nothing is journaled', async () => {
  // orders subscribes to herald.* but is the one the death is about.
  const w = await world(undefined);
  await w.operational.emit(dead(1));
  expect(w.sent()).toEqual([]);
  expect(await w.store.due(new Date('2030-01-01T00:00:00Z'), 100)).toEqual([]);
});

test('a refusal over the publish quota is told to the account, at once and once an interval', async () => {
  const w = await world(['herald.account.*']);
  const quotas = { admit: async () => ({ ok: false as const, account: 'default', limit: 5, retryAfterSeconds: 1, why: 'spent' as const }), refusedNow: () => undefined };
  const deps: IngestDeps = { ...w.base, quotas, operational: w.operational };
  const body = Buffer.from(JSON.stringify([{ specversion: '1.0', id: 'x1', source: '/shop', type: 'com.example.order.created' }]));
  const headers = { 'content-type': 'application/cloudevents-batch+json' };
  expect((await ingest(deps, headers, body)).kind).toBe('too-many');
  expect((await ingest(deps, headers, body)).kind).toBe('too-many');
  // Not awaited by ingest (the 429 goes at once): to every destination of the account subscribed, once for both refusals.
  const told = await eventually('the quota notice', () => (w.sent().length >= 2 ? w.sent() : undefined));
  const data = { account: 'default', limit: 5, why: 'spent', retryAfterSeconds: 1, suppressed: 0 };
  expect(told.sort((a, b) => a.to!.localeCompare(b.to!))).toEqual([
    { to: 'ops', type: 'herald.account.quota-exceeded', data },
    { to: 'orders', type: 'herald.account.quota-exceeded', data },
  ]);
});

test("a suspension's email goes out whether or not a destination takes the event, naming the event", async () => {
  // orders subscribes to herald.* but is the one suspended: no destination takes the notice.
  const w = await world(undefined);
  const suspended = await suspendDestination({ ...w.suspension, operational: w.operational }, 'orders', { cause: 'gone', reason: 'HTTP 410' });
  expect(suspended?.status).toBe('suspended');
  expect(w.sent()).toEqual([]);
  const mails = w.published.filter((p) => p.topic === 'herald-notifications');
  expect(mails.map((m) => m.message.attributes)).toEqual([{ 'herald-type': 'herald.destination.suspended', 'herald-destination': 'orders', 'herald-event-id': 'destination.suspended-orders-2026-12-06T10:00:00.000Z' }]);
  expect(JSON.parse(mails[0]!.message.data.toString())).toEqual(suspended!.suspension!.notification);
});

test('without operational events the suspension email goes out alone, naming no event', async () => {
  const w = await world(['herald.*']);
  await suspendDestination(w.suspension, 'orders', { cause: 'gone', reason: 'HTTP 410' });
  expect(w.sent()).toEqual([]);
  expect(w.published.filter((p) => p.topic === 'herald-notifications').map((m) => m.message.attributes)).toEqual([{ 'herald-type': 'herald.destination.suspended', 'herald-destination': 'orders' }]);
});
