import { MemoryDestinationStore } from '../../shared/adapters/memory/destination-store';
import { deliverFromLane } from '../../shared/app/delivery/deliver';
import { BeforeSendError } from '../../shared/app/delivery/push-verdict';
import { LimiterClosedError } from '../../shared/app/rate/limiter-gate';
import { PushDelivery, toPubSubMessage } from '../../shared/domain/events/cloudevents-pubsub';
import { AttemptResult, deliveryId } from '../../shared/domain/retry/delivery';
import { transition } from '../../shared/domain/retry/delivery-state';
import { applySpec, destinationSpecSchema } from '../../shared/domain/destinations/destination';
import { eventKey, HeraldEvent } from '../../shared/domain/events/event';
import { LANE_ATTRIBUTES } from '../../shared/domain/intake/lane-message';
import { memoryDeliverDeps } from '../support/memory-deliver';

/**
 * A claimed retry that Herald, stopping, gives up before its send: the start renewed the claim, so
 * the message Pub/Sub brings again no longer matches. Handed back to the pump at once, it is
 * sent by the next Herald; kept IN_FLIGHT, it waited out HERALD_CLAIM_TTL_MS (found by
 * test/integration/local-stop.test.ts: two events not received within 30 s of the restart).
 */

const event: HeraldEvent = {
  attributes: { specversion: '1.0', id: 'e1', source: '/shop', type: 'com.example.order.created', datacontenttype: 'application/json' },
  data: Buffer.from('{"id":"e1"}'),
};
const ID = deliveryId('hook', eventKey(event.attributes));

function push(attributes: Record<string, string> = {}): PushDelivery {
  return {
    subscription: 'projects/herald-local/subscriptions/herald-shard-0-deliver',
    messageId: 'm-e1',
    publishTime: new Date(),
    message: toPubSubMessage(event, { [LANE_ATTRIBUTES.destination]: 'hook', [LANE_ATTRIBUTES.publishedAt]: new Date(Date.now() - 1000).toISOString(), ...attributes }),
  };
}

test('a claimed retry given up as Herald stops is PENDING and due again, not IN_FLIGHT under a claim no message carries', async () => {
  const destinations = new MemoryDestinationStore();
  const policy = { retryOn: { statuses: ['5xx'] }, backoff: { kind: 'fixed', delaysMs: [1000] }, maxAttempts: 3 };
  await destinations.put(applySpec('hook', destinationSpecSchema.parse({ url: 'https://example.com/hook', policy }), undefined, new Date()));
  const h = memoryDeliverDeps(destinations, { http: { send: async (): Promise<AttemptResult> => ({ kind: 'response', status: 503, durationMs: 3, bodyExcerpt: '' }) } });
  await deliverFromLane(h.deps, push());
  const claimNow = new Date(Date.now() + 2000);
  const claimed = await h.deliveries.update(ID, (c) => {
    const next = c && transition(c, { type: 'claim', now: claimNow, claimTtlMs: 90_000 });
    return next?.ok ? next.state : undefined;
  });

  jest.spyOn(h.deps.limiter, 'acquire').mockRejectedValue(new LimiterClosedError());
  await expect(deliverFromLane(h.deps, push({ [LANE_ATTRIBUTES.claim]: claimed!.claimedAt! }))).rejects.toBeInstanceOf(BeforeSendError);

  const after = await h.deliveries.get(ID);
  expect(after).toMatchObject({ status: 'PENDING', attempts: 1 });
  expect(after).not.toHaveProperty('claimedAt');
  expect(Date.parse(after!.availableAt!)).toBeLessThanOrEqual(Date.now());
  // The pump finds it due now, not after the claim's TTL.
  expect(await h.deliveries.due(new Date(), new Date(Date.now() - 90_000), 10)).toEqual([ID]);
  jest.restoreAllMocks();
  h.deps.limiter.close();
});
