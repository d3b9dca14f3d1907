import { DeliveryRecord } from '../domain/delivery';
import { transition, Transition } from '../domain/delivery-state';
import { DeliveryStore } from '../ports';

/**
 * Moves a claimed delivery through the state machine only while it is still IN_FLIGHT under
 * the claim `claimedAt`: if the claim expired and was taken over meanwhile, the newer claim
 * decides and nothing is written.
 */
export function updateUnderClaim(
  deliveries: DeliveryStore,
  id: string,
  claimedAt: string | undefined,
  t: Transition,
): Promise<DeliveryRecord | undefined> {
  return deliveries.update(id, (current) => {
    if (current?.status !== 'IN_FLIGHT' || current.claimedAt !== claimedAt) return undefined;
    const next = transition(current, t);
    return next.ok ? next.state : undefined;
  });
}

/**
 * A claimed delivery started under the claim its lane message carries (IN_FLIGHT, attempted
 * now), or why not: no record, or the state machine's refusal (the claim lost or expired).
 */
export async function startUnderClaim(deliveries: DeliveryStore, id: string, claim: string, now: Date): Promise<{ started: DeliveryRecord } | { refused: string; record?: DeliveryRecord }> {
  let refused = 'claim lost';
  let seen: DeliveryRecord | undefined;
  const started = await deliveries.update(id, (current) => {
    seen = current;
    if (!current) {
      refused = 'no record';
      return undefined;
    }
    const next = transition(current, { type: 'start', now, claimedAt: claim });
    if (!next.ok) refused = next.error.message;
    return next.ok ? next.state : undefined;
  });
  return started ? { started } : { refused, ...(seen ? { record: seen } : {}) };
}
