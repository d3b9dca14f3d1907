import { MemoryDeliveryStore } from '../../shared/adapters/memory/delivery-store';
import { MemoryDestinationStore } from '../../shared/adapters/memory/destination-store';
import { MemoryIntakeStore } from '../../shared/adapters/memory/intake-store';
import { DestinationDirectory } from '../../shared/app/destinations/destination-directory';
import { reconcileOnce } from '../../shared/app/intake/reconcile';
import { deliveryId } from '../../shared/domain/retry/delivery';
import { applySpec, destinationSpecSchema } from '../../shared/domain/destinations/destination';
import { eventKey, HeraldEvent } from '../../shared/domain/events/event';
import { createLogger } from '../../shared/log';
import { systemClock } from '../../shared/ports/clock';

/**
 * A journal batch whose events a batch lane took by reference (IntakeBatch.refs) is removed only
 * once each of them is recorded at that destination — whatever its routing says by then — so no
 * message ever names events that are nowhere. A destination deleted since is owed nothing.
 */

const event = (id: string, type: string): HeraldEvent => ({ attributes: { specversion: '1.0', id, source: '/s', type }, data: Buffer.from('{}') });

test('what a batch lane took by reference is recovered there after a routing change, and the batch removed only then', async () => {
  const destinations = new MemoryDestinationStore();
  // `feed` took the events by reference, then stopped taking their type; `gone` was deleted.
  await destinations.put(applySpec('feed', destinationSpecSchema.parse({ url: 'https://hooks.example.com/feed', eventTypes: ['com.other'], batch: { maxEvents: 100, maxWaitMs: 1000 } }), undefined, new Date(Date.now() - 60_000)));
  const deliveries = new MemoryDeliveryStore();
  const intake = new MemoryIntakeStore();
  const events = [event('e0', 'com.order'), event('e1', 'com.order')];
  await intake.add({ id: 'i-1', acceptedAt: new Date(Date.now() - 30_000).toISOString(), events, refs: { feed: [0, 1], gone: [0] } });
  const report = await reconcileOnce({
    intake,
    deliveries,
    directory: new DestinationDirectory(destinations, systemClock, 0),
    bus: { publish: async () => '1' },
    deadLetterTopic: 'herald-dead-letter',
    clock: systemClock,
    log: createLogger({ write: () => undefined }),
    graceMs: 1_000,
    batchLimit: 100,
    rateLeases: { lease: () => Promise.reject(new Error('not used')), peek: async () => undefined },
    state: {},
  });
  expect(report).toMatchObject({ recovered: 2, batches: 1 });
  const records = await Promise.all(events.map((e) => deliveries.get(deliveryId('feed', eventKey(e.attributes)))));
  expect(records.map((r) => [r?.status, r?.recoveredAt !== undefined])).toEqual([['PENDING', true], ['PENDING', true]]);
  expect(await deliveries.get(deliveryId('gone', eventKey(events[0]!.attributes)))).toBeUndefined();
  expect(intake.batches.size).toBe(0);
});
