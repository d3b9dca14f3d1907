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
