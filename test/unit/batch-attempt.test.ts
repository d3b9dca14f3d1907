import { MemoryDestinationStore } from '../../shared/adapters/memory/destination-store';
import { MemoryDeliveryStore } from '../../shared/adapters/memory/delivery-store';
import { claimedBatch, ClaimedMember, FirstMember, firstBatch } from '../../shared/app/delivery/batch-attempt';
import { AttemptResult, deliveryId, DeliveryRecord } from '../../shared/domain/retry/delivery';
import { transition } from '../../shared/domain/retry/delivery-state';
import { applySpec, Destination, destinationSpecSchema } from '../../shared/domain/destinations/destination';
import { eventKey, HeraldEvent } from '../../shared/domain/events/event';
import { HttpRequest } from '../../shared/ports/http';
import { memoryDeliverDeps } from '../support/memory-deliver';

/** A batch's attempts on memory adapters: one request, one decision, a record per event, retries as a unit. */

const event = (id: string): HeraldEvent => ({ attributes: { specversion: '1.0', id, source: '/shop', type: 'com.example.order', datacontenttype: 'application/json' }, data: Buffer.from(`{"id":"${id}"}`) });
const idOf = (id: string) => deliveryId('orders', eventKey(event(id).attributes));
const first = (id: string): FirstMember => ({ kind: 'first', destinationId: 'orders', event: event(id), publishedAt: new Date(Date.now() - 1000).toISOString() });

async function setup(statuses: number[], policy = 'adobe-best-effort') {
  const destinations = new MemoryDestinationStore();
  await destinations.put(applySpec('orders', destinationSpecSchema.parse({ url: 'https://hooks.example.com/orders', policy, batch: { maxEvents: 10, maxWaitMs: 500 } }), undefined, new Date()));
  const sent: HttpRequest[] = [];
  const http = {
    send: async (request: HttpRequest): Promise<AttemptResult> => {
      const status = statuses[Math.min(sent.length, statuses.length - 1)]!;
      sent.push(request);
      return { kind: 'response', status, durationMs: 3, bodyExcerpt: '' };
    },
  };
  const h = memoryDeliverDeps(destinations, { http });
  const destination = (await destinations.get('orders')) as Destination;
  return { ...h, sent, destination };
}

/** What the pump does to a due record: claims it, and sends it back with its place. */
async function claim(deliveries: { update: (id: string, f: (c: DeliveryRecord | undefined) => DeliveryRecord | undefined) => Promise<DeliveryRecord | undefined> }, id: string): Promise<ClaimedMember> {
  const now = new Date(Date.now() + 3_600_000);
  const claimed = await deliveries.update(id, (c) => {
    const next = c && transition(c, { type: 'claim', now, claimTtlMs: 60_000 });
    return next?.ok ? next.state : undefined;
  });
  return { kind: 'claimed', destinationId: 'orders', event: event(claimed!.eventId), claim: claimed!.claimedAt!, publishedAt: claimed!.publishedAt!, batch: claimed!.batch! };
}

test('a delivered batch: one request in the batched content mode, signed once, each event DELIVERED with its place', async () => {
  const h = await setup([204]);
  const report = await firstBatch(h.deps, h.destination, ['a', 'b', 'c'].map(first));
  expect(report).toMatchObject({ outcome: 'delivered', recorded: 3, members: 3 });
  expect(h.sent).toHaveLength(1);
  expect(h.sent[0]!.headers['content-type']).toBe('application/cloudevents-batch+json');
  expect(h.sent[0]!.headers['webhook-id']).toBe(`msg_${report.batchId}`);
  expect((JSON.parse(h.sent[0]!.body.toString()) as { id: string }[]).map((e) => e.id)).toEqual(['a', 'b', 'c']);
  const records = await Promise.all(['a', 'b', 'c'].map((id) => h.deliveries.get(idOf(id))));
  expect(records.map((r) => [r?.status, r?.batch])).toEqual([0, 1, 2].map((position) => ['DELIVERED', { id: report.batchId, position, size: 3 }]));
  // Grouped, each shows the batch's request: the group stores it once.
  expect(records[2]!.attemptLog?.[0]).toEqual(records[0]!.attemptLog?.[0]);
  expect(records[2]!.attemptLog?.[0]?.request.body).toBeDefined();
});

test('a failed batch is retried as a unit: the same events, the same webhook-id, each record under its claim', async () => {
  const h = await setup([503, 204]);
  const report = await firstBatch(h.deps, h.destination, ['a', 'b', 'c'].map(first));
  expect(report).toMatchObject({ outcome: 'retry', recorded: 3 });
  const failed = await Promise.all(['a', 'b', 'c'].map((id) => h.deliveries.get(idOf(id))));
  expect(new Set(failed.map((r) => r?.availableAt)).size).toBe(1);
  // A document each: the request whole on the first event's, the status alone on the others.
  expect(failed[0]!.attemptLog?.[0]?.request.body).toBeDefined();
  expect(failed[1]!.attemptLog?.[0]?.request).toEqual({ headers: {}, bodyBytes: h.sent[0]!.body.length });
  const members = await Promise.all(['c', 'a', 'b'].map((id) => claim(h.deliveries, idOf(id))));
  const retry = await claimedBatch(h.deps, h.destination, members);
  expect(retry).toMatchObject({ batchId: report.batchId, outcome: 'delivered', recorded: 3 });
  expect(h.sent.map((r) => r.headers['webhook-id'])).toEqual([`msg_${report.batchId}`, `msg_${report.batchId}`]);
  expect((JSON.parse(h.sent[1]!.body.toString()) as { id: string }[]).map((e) => e.id)).toEqual(['a', 'b', 'c']);
  const done = await Promise.all(['a', 'b', 'c'].map((id) => h.deliveries.get(idOf(id))));
  expect(done.map((r) => [r?.status, r?.attempts])).toEqual([['DELIVERED', 2], ['DELIVERED', 2], ['DELIVERED', 2]]);
});

test('a retry missing a member goes under an id of its own, so a receiver deduplicating on webhook-id drops nothing', async () => {
  const h = await setup([503, 204]);
  const report = await firstBatch(h.deps, h.destination, ['a', 'b', 'c'].map(first));
  const members = await Promise.all(['a', 'c'].map((id) => claim(h.deliveries, idOf(id))));
  const retry = await claimedBatch(h.deps, h.destination, members);
  expect(retry.batchId).not.toBe(report.batchId);
  expect(h.sent[1]!.headers['webhook-id']).toBe(`msg_${retry.batchId}`);
  expect((await h.deliveries.get(idOf('b')))?.status).toBe('PENDING');
});

test('a member whose claim was taken over is left to its claim; the others are sent', async () => {
  const h = await setup([503, 204]);
  await firstBatch(h.deps, h.destination, ['a', 'b'].map(first));
  const members = await Promise.all(['a', 'b'].map((id) => claim(h.deliveries, idOf(id))));
  const stale = { ...members[1]!, claim: '2000-01-01T00:00:00.000Z' };
  const retry = await claimedBatch(h.deps, h.destination, [members[0]!, stale]);
  expect(retry).toMatchObject({ recorded: 1, members: 2 });
  expect((JSON.parse(h.sent[1]!.body.toString()) as { id: string }[]).map((e) => e.id)).toEqual(['a']);
});

test('a batch refused for good is DEAD, every event of it dead-lettered on its own', async () => {
  const h = await setup([400]);
  const report = await firstBatch(h.deps, h.destination, ['a', 'b', 'c'].map(first));
  expect(report.outcome).toBe('dead');
  const letters = h.bus.filter((m) => m.topic === 'herald-dead-letter').map((m) => m.message.attributes['ce-id']);
  expect(letters.sort()).toEqual(['a', 'b', 'c']);
  expect((await Promise.all(['a', 'b', 'c'].map((id) => h.deliveries.get(idOf(id))))).map((r) => r?.status)).toEqual(['DEAD', 'DEAD', 'DEAD']);
});

test('a batch redelivered after its records were written is not recorded twice', async () => {
  const h = await setup([503]);
  await firstBatch(h.deps, h.destination, ['a', 'b'].map(first));
  const again = await firstBatch(h.deps, h.destination, ['a', 'b'].map(first));
  expect(again.recorded).toBe(0);
  expect((await h.deliveries.get(idOf('a')))?.attempts).toBe(1);
});

test('a batch of resent events (Herald-Resend) leaves out the members already recorded: only the others are sent, in a batch of their own', async () => {
  const h = await setup([204]);
  await firstBatch(h.deps, h.destination, ['a', 'b'].map(first));
  const resent = (id: string): FirstMember => ({ ...first(id), resent: true });
  const report = await firstBatch(h.deps, h.destination, ['a', 'b', 'c'].map(resent));
  expect(report).toMatchObject({ outcome: 'delivered', recorded: 1, members: 1 });
  expect(h.sent).toHaveLength(2);
  expect((JSON.parse(h.sent[1]!.body.toString()) as { id: string }[]).map((e) => e.id)).toEqual(['c']);
  // All of them recorded already: nothing is sent.
  expect(await firstBatch(h.deps, h.destination, ['a', 'b', 'c'].map(resent))).toMatchObject({ outcome: 'nothing-to-send', recorded: 0, members: 3 });
  expect(h.sent).toHaveLength(2);
  // Not marked resent, a batch is sent without reading (a redelivered one is recorded as a duplicate).
  await firstBatch(h.deps, h.destination, ['a'].map(first));
  expect(h.sent).toHaveLength(3);
});

test('a second copy deferred by rate control leaves a delivered member DELIVERED: no PENDING record for the pump to send again', async () => {
  const h = await setup([204]);
  // Successes go into groups, as a batch's do on Firestore.
  const deliveries = new MemoryDeliveryStore({ alone: 'group' });
  await firstBatch({ ...h.deps, deliveries }, h.destination, ['a', 'b'].map(first));
  // The same events again (a lane message redelivered, a producer's resend not marked), this time put off by rate control.
  const until = Date.now() + 60_000;
  const deferring = Object.assign(Object.create(h.deps.limiter) as typeof h.deps.limiter, { acquire: async () => ({ kind: 'defer' as const, until }) });
  const report = await firstBatch({ ...h.deps, deliveries, limiter: deferring }, h.destination, ['a', 'c'].map(first));
  expect(report).toMatchObject({ outcome: 'deferred', recorded: 1, members: 2 });
  expect((await deliveries.get(idOf('a')))?.status).toBe('DELIVERED');
  expect((await deliveries.get(idOf('c')))?.status).toBe('PENDING');
  expect(await deliveries.due(new Date(until + 1000), new Date(0), 10)).toEqual([idOf('c')]);
});
