import { createHash } from 'node:crypto';
import { Receiver } from './receiver';

/** Whether this delivery's first attempt fails (a seventh of them, by its webhook-id: the same on every instance, retry and process). */
export const failsFirst = (webhookId: string) => createHash('sha256').update(webhookId).digest()[0]! % 7 === 0;

/**
 * A receiver that answers 500 to the first request of a seventh of the deliveries (failsFirst),
 * and 204 to every other request; a path ending in `/batched` never fails (a batch's webhook-id
 * is the batch's, not an event's).
 */
export function flakyFirstReceiver(): Receiver {
  const seen = new Set<string>();
  return new Receiver((req) => {
    const id = String(req.headers['webhook-id']);
    const fail = !req.path.endsWith('/batched') && !seen.has(id) && failsFirst(id);
    seen.add(id);
    return fail ? { status: 500, body: 'flaky' } : { status: 204 };
  });
}
