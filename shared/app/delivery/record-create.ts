import { DeliveryRecord } from '../../domain/retry/delivery';
import { isOwnWrite } from '../../domain/delivery/delivery-record';
import { DeliveryStore } from '../../ports/deliveries';
import { RECORD_RETRY } from './delivery-context';
import { retryOnOverload } from '../support/overload-retry';

/**
 * A delivery's first record created (by `create`: true when it wrote, false when a record was
 * there), tried again on Herald's overload (RECORD_RETRY). A try that failed may have landed
 * with its reply lost (DEADLINE_EXCEEDED after the commit, issue 51): the next try then finds a
 * record, and one plain read says whether it is this one (domain/delivery/delivery-record.ts isOwnWrite)
 * — created after all, to be counted and ended by this writer — or another's (a redelivery).
 * That read is made only after a failed try: nothing more on the common path. `again`: how the
 * tries after a failed one write, if not as `create` — a grouped success is created checked then
 * (DeliveryStore.create unlessGrouped), so that a first try that landed in a group is found there
 * rather than copied into a second one.
 */
export async function createRecord(deliveries: Pick<DeliveryStore, 'get'>, record: DeliveryRecord, create: () => Promise<boolean>, again: () => Promise<boolean> = create): Promise<boolean> {
  let failed = false;
  return retryOnOverload(async () => {
    let created: boolean;
    try {
      created = await (failed ? again : create)();
    } catch (e) {
      failed = true;
      throw e;
    }
    return created || (failed && (await landed(deliveries, record)));
  }, RECORD_RETRY);
}

/** Whether the record stored under `record`'s id is `record`, written by this writer (its reply lost). */
export async function landed(deliveries: Pick<DeliveryStore, 'get'>, record: DeliveryRecord): Promise<boolean> {
  const existing = await deliveries.get(record.id);
  return existing !== undefined && isOwnWrite(existing, record);
}
