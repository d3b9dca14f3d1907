import { eventAccount } from '../access/account';
import { Destination } from '../destinations/destination';
import { HeraldEvent, matchesType } from '../events/event';
import { splitDestinationId } from '../ids';
import { leavesSharedLane } from './lane-admission';
import { ReadLaneMessage } from '../intake/lane-message';

/** Why a message goes to the dead-letter topic without an attempt. */
export type RejectReason = 'invalid-event' | 'unknown-account' | 'invalid-lane-message' | 'destination-deleted' | 'type-unsubscribed' | 'unsupported-destination';

/**
 * What `deliver` does with a lane message, given its destination as the directory has it:
 * - unusable: nothing can be sent (the destination is gone, of another account, no longer
 *   subscribed, or has nowhere to send): a dead letter;
 * - queue: the destination is suspended: QUEUED without an attempt;
 * - claimed: a retry the pump claimed, attempted under its claim;
 * - hand-over: a slow destination's first attempt, moved off its shared lane;
 * - first: a first attempt.
 */
export type LaneStep =
  | { kind: 'unusable'; reason: RejectReason; message: string }
  | { kind: 'queue' }
  | { kind: 'claimed'; claim: string }
  | { kind: 'hand-over' }
  | { kind: 'first' };

/** `slow`: whether this instance sees the destination slow now (asked only for a first attempt). */
export function laneStep(message: ReadLaneMessage, destination: Destination | undefined, slow: () => boolean): LaneStep {
  const unusable = unusableBecause(destination, message.event);
  if (unusable) return { kind: 'unusable', ...unusable };
  if (destination!.status === 'suspended') return { kind: 'queue' };
  if (message.kind === 'claimed') return { kind: 'claimed', claim: message.claim };
  if (message.kind === 'first' && leavesSharedLane(destination!, slow())) return { kind: 'hand-over' };
  return { kind: 'first' };
}

function unusableBecause(destination: Destination | undefined, event: HeraldEvent): { reason: RejectReason; message: string } | undefined {
  if (!destination) return { reason: 'destination-deleted', message: 'the destination no longer exists' };
  if (splitDestinationId(destination.id).account !== eventAccount(event.attributes)) {
    return { reason: 'type-unsubscribed', message: `destination ${destination.id} is not of the event's account ${eventAccount(event.attributes)}` };
  }
  if (!matchesType(destination.eventTypes, event.attributes.type)) {
    return { reason: 'type-unsubscribed', message: `destination ${destination.id} no longer subscribes to ${event.attributes.type}` };
  }
  if (!destination.url && !destination.topic) return { reason: 'unsupported-destination', message: `destination ${destination.id} has neither url nor topic` };
  return undefined;
}
