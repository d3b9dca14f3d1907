import { MemoryDeliveryStore } from '../../shared/adapters/memory/delivery-store';
import { MemoryDestinationStore } from '../../shared/adapters/memory/destination-store';
import { MemoryIntakeStore } from '../../shared/adapters/memory/intake-store';
import { reconcileOnce } from '../../shared/app/intake/reconcile';
import { journaledUsage } from '../../shared/domain/intake/intake-usage';
import { intakeBatchId } from '../../shared/domain/intake/intake';
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

/** The accepted events and deliveries every removal counted so far. */
const totals = (intake: MemoryIntakeStore) => intake.counted.reduce((n, u) => ({ accepted: n.accepted + u.counts.eventsAccepted, deliveries: n.deliveries + u.counts.deliveries }), { accepted: 0, deliveries: 0 });

/** Acceptance times 30 s ago and after, and the batch ids ingest gives them (they start with the time). */
function tries() {
  const start = Date.now() - 30_000;
  const at = (ms: number) => new Date(start + ms).toISOString();
  const id = (n: number) => intakeBatchId(new Date(start + n), `r${n}`);
  const ids = { 'i-0': id(0), 'i-1': id(1), 'i-2': id(2), 'i-3': id(3) };
  return { at, ids };
}

describe('records of an intake that was never journaled (its lanes went out, its journal write never landed)', () => {
  test('are counted once, with the first batch of a resend that finds them; a later resend counts nothing', async () => {
    const { deps, intake, delivered } = await world();
    const { at, ids } = tries();
    const e1 = event('e1');
    // Try 1 (i-0) published its lanes and died before its journal write: its records carry i-0, no batch i-0 exists.
    for (const d of ['acme_a', 'acme_b']) await delivered(d, e1, ids['i-0']);
    await intake.add({ id: ids['i-2'], acceptedAt: at(2), events: [event('e1')] });
    await reconcileOnce(deps);
    expect(totals(intake)).toEqual({ accepted: 1, deliveries: 2 });
    expect([...intake.adopted.values()]).toEqual([ids['i-2'], ids['i-2']]);
    // The producer sent it a third time: those records are i-2's now.
    await intake.add({ id: ids['i-3'], acceptedAt: at(3), events: [event('e1')] });
    await reconcileOnce(deps);
    expect(totals(intake)).toEqual({ accepted: 1, deliveries: 2 });
  });

  test('two resends in one round: one adopts the records, the other counts nothing', async () => {
    const { deps, intake, delivered } = await world();
    const { at, ids } = tries();
    for (const d of ['acme_a', 'acme_b']) await delivered(d, event('e1'), ids['i-0']);
    await intake.add({ id: ids['i-2'], acceptedAt: at(2), events: [event('e1')] });
    await intake.add({ id: ids['i-3'], acceptedAt: at(3), events: [event('e1')] });
    await reconcileOnce(deps);
    await reconcileOnce(deps);
    expect(intake.batches.size).toBe(0);
    expect(totals(intake)).toEqual({ accepted: 1, deliveries: 2 });
  });

  test('a batch removed (counted) before its resend is reconciled is not taken for one never journaled', async () => {
    const { deps, intake, delivered } = await world();
    const { at, ids } = tries();
    await intake.add({ id: ids['i-1'], acceptedAt: at(1), events: [event('e1')] });
    for (const d of ['acme_a', 'acme_b']) await delivered(d, event('e1'), ids['i-1']);
    await reconcileOnce(deps);
    expect(totals(intake)).toEqual({ accepted: 1, deliveries: 2 });
    await intake.add({ id: ids['i-2'], acceptedAt: at(2), events: [event('e1')] });
    await reconcileOnce(deps);
    expect(intake.batches.size).toBe(0);
    expect(totals(intake)).toEqual({ accepted: 1, deliveries: 2 });
    expect(intake.adopted.size).toBe(0);
  });

  test("an event whose records two journaled intakes made (the first try's lane to one destination failed) is accepted once, each record counted once", async () => {
    const { deps, intake, delivered } = await world();
    const { at, ids } = tries();
    await intake.add({ id: ids['i-1'], acceptedAt: at(1), events: [event('e1')] });
    await intake.add({ id: ids['i-2'], acceptedAt: at(2), events: [event('e1')] });
    await delivered('acme_a', event('e1'), ids['i-1']);
    await delivered('acme_b', event('e1'), ids['i-2']);
    await reconcileOnce(deps);
    expect(intake.batches.size).toBe(0);
    expect(totals(intake)).toEqual({ accepted: 1, deliveries: 2 });
  });
});
