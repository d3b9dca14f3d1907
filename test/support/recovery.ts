import { DeliveryRecord, deliveryId } from '../../shared/domain/retry/delivery';
import { eventKey, HeraldEvent } from '../../shared/domain/events/event';
import { DeliveryStore } from '../../shared/ports/deliveries';
import type { ReconcileDeps } from '../../shared/app/intake/reconcile-deps';
import { DestinationDirectory } from '../../shared/app/destinations/destination-directory';
import type { MemoryDestinationStore } from '../../shared/adapters/memory/destination-store';
import { createLogger } from '../../shared/log';
import { systemClock } from '../../shared/ports/clock';

/**
 * A retry that fell due an hour before `now`: the oldest due delivery, whatever a recovery made
 * due meanwhile, so a pump round of one claims it first.
 */
export function dueRetry(destinationId: string, event: HeraldEvent, now: number): DeliveryRecord {
  return {
    id: deliveryId(destinationId, eventKey(event.attributes)),
    destinationId,
    eventId: event.attributes.id,
    eventSource: event.attributes.source,
    eventType: event.attributes.type,
    status: 'PENDING',
    attempts: 1,
    availableAt: new Date(now - 3_600_000).toISOString(),
    publishedAt: new Date(now - 7_200_000).toISOString(),
    event,
  };
}

/**
 * The delivery store with its creates (those that created) and existence checks counted per id;
 * a create of an id in `failCreateOf` throws once, as if the process died there.
 */
export function countedDeliveries(store: DeliveryStore, failCreateOf = new Set<string>()) {
  const creates = new Map<string, number>();
  const examined = new Map<string, number>();
  const wrapped = new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'create')
        return async (record: DeliveryRecord, options?: { unlessGrouped?: boolean }) => {
          if (failCreateOf.delete(record.id)) throw new Error('killed mid-round');
          const created = await target.create(record, options);
          if (created) creates.set(record.id, (creates.get(record.id) ?? 0) + 1);
          return created;
        };
      if (prop === 'existing')
        return async (ids: readonly string[]) => {
          for (const id of ids) examined.set(id, (examined.get(id) ?? 0) + 1);
          return target.existing(ids);
        };
      const value: unknown = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { wrapped, creates, examined };
}

/**
 * A reconciler's deps on memory stores, with nothing published and no rate controller that
 * shows a destination moving (none ever leased): what a test does not give is that.
 */
export function memoryReconcileDeps(given: Pick<ReconcileDeps, 'intake' | 'deliveries' | 'graceMs'> & { destinations: MemoryDestinationStore } & Partial<ReconcileDeps>): ReconcileDeps {
  const { destinations, ...rest } = given;
  return {
    directory: new DestinationDirectory(destinations, systemClock, 0),
    bus: { publish: async () => '1' },
    deadLetterTopic: 'herald-dead-letter',
    clock: systemClock,
    log: createLogger({ write: () => undefined }),
    batchLimit: 100,
    rateLeases: { lease: () => Promise.reject(new Error('not used')), peek: async () => undefined },
    state: {},
    ...rest,
  };
}
