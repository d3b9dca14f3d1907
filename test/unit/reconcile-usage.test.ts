import { MemoryDeliveryStore } from '../../shared/adapters/memory/delivery-store';
import { MemoryDestinationStore } from '../../shared/adapters/memory/destination-store';
import { MemoryIntakeStore } from '../../shared/adapters/memory/intake-store';
import { reconcileOnce } from '../../shared/app/intake/reconcile';
import { journaledUsage } from '../../shared/domain/intake/intake-usage';
import { deliveryId } from '../../shared/domain/retry/delivery';
import { applySpec, destinationSpecSchema } from '../../shared/domain/destinations/destination';
import { eventKey, HeraldEvent } from '../../shared/domain/events/event';
import { memoryReconcileDeps } from '../support/recovery';

/**
 * Usage counted as the reconciler removes journal batches (docs/usage.md): an event a producer
 * sent again after an answer it never got, both tries journaled, is accepted once — with the
 * batch whose intake created its records — and its deliveries once.
 */

const event = (id: string): HeraldEvent => ({ attributes: { specversion: '1.0', id, source: '/s', type: 't', heraldaccount: 'acme' }, data: Buffer.from('{}') });

async function world() {
  const destinations = new MemoryDestinationStore();
  const created = new Date(Date.now() - 60_000);
  for (const d of ['acme_a', 'acme_b']) await destinations.put(applySpec(d, destinationSpecSchema.parse({ url: `https://hooks.example.com/${d}`, eventTypes: ['t'] }), undefined, created));
  const deliveries = new MemoryDeliveryStore();
  const intake = new MemoryIntakeStore();
  const deps = memoryReconcileDeps({ intake, deliveries, destinations, graceMs: 1_000 });
  /** The record a first attempt of `e` from intake `batch` wrote, as its lane message carried it. */
  const delivered = (destinationId: string, e: HeraldEvent, batch: string) =>
    deliveries.put({ id: deliveryId(destinationId, eventKey(e.attributes)), destinationId, eventId: e.attributes.id, eventSource: '/s', eventType: 't', status: 'DELIVERED', attempts: 1, intake: batch });
  return { deps, intake, delivered };
}

test('a resent event journaled twice is accepted once, with the batch whose intake made its records', async () => {
  const { deps, intake, delivered } = await world();
  const acceptedAt = new Date(Date.now() - 30_000).toISOString();
  const [first, resent, fresh] = [event('e1'), event('e1'), event('e2')];
  // Try 1 was journaled (its answer lost) and delivered; the producer sent e1 again with e2 in try 2.
  await intake.add({ id: 'i-1', acceptedAt, events: [first] });
  await intake.add({ id: 'i-2', acceptedAt: new Date(Date.parse(acceptedAt) + 1).toISOString(), events: [resent, fresh] });
  for (const d of ['acme_a', 'acme_b']) {
    await delivered(d, first, 'i-1');
    await delivered(d, fresh, 'i-2');
  }
  await reconcileOnce(deps);
  const total = intake.counted.reduce((n, u) => ({ accepted: n.accepted + u.counts.eventsAccepted, deliveries: n.deliveries + u.counts.deliveries }), { accepted: 0, deliveries: 0 });
  // Two events, four deliveries: not three and six.
  expect(total).toEqual({ accepted: 2, deliveries: 4 });
});

test('journaledUsage leaves out the resent events of a batch, and only those', () => {
  const at = '2026-12-06T12:00:00.000Z';
  const [row] = journaledUsage([{ acceptedAt: at, events: [event('x'), event('y'), event('z')], resent: [1], deliveries: { acme: 4 } }]);
  expect(row).toMatchObject({ account: 'acme', day: '2026-12-06', counts: { eventsAccepted: 2, deliveries: 4 } });
});
