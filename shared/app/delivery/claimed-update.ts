import { DeliveryRecord } from '../../domain/retry/delivery';
import { isOwnWrite } from '../../domain/delivery/delivery-record';
import { transition, Transition } from '../../domain/retry/delivery-state';
import { DeliveryStore } from '../../ports/deliveries';
import { RECORD_RETRY } from './delivery-context';
import { retryOnOverload } from '../support/overload-retry';
import { LimiterClosedError } from '../rate/limiter-gate';

/**
 * Writes under a claim. Each recognises its own write when it finds it: Firestore runs a
 * transaction again when its commit's reply is lost (DEADLINE_EXCEEDED after the write took
 * effect, issue 51), and that run finds the delivery no longer IN_FLIGHT under the claim — moved
 * on by this very write, not taken over. What was written is then answered as written, and
 * nothing is written again; this costs nothing when no reply is lost.
 */

/**
 * Moves a claimed delivery through the state machine only while it is still IN_FLIGHT under
 * the claim `claimedAt`: if the claim expired and was taken over meanwhile, the newer claim
 * decides and nothing is written.
 */
export async function updateUnderClaim(
  deliveries: DeliveryStore,
  id: string,
  claimedAt: string | undefined,
  t: Transition,
): Promise<DeliveryRecord | undefined> {
  let mine: DeliveryRecord | undefined;
  let found: DeliveryRecord | undefined;
  const written = await deliveries.update(id, (current) => {
    found = undefined;
    if (current?.status !== 'IN_FLIGHT' || current.claimedAt !== claimedAt) {
      if (current && mine && isOwnWrite(current, mine)) found = mine;
      return undefined;
    }
    const next = transition(current, t);
    mine = next.ok ? next.state : undefined;
    return mine;
  });
  return written ?? found;
}

/**
 * An attempt's outcome `record` written over the delivery while it is IN_FLIGHT under the claim
 * `claimedAt` (it was not taken over while the attempt ran: the claim outlived its TTL), tried
 * again on Herald's overload; undefined when the claim was taken over.
 */
export async function writeUnderClaim(deliveries: DeliveryStore, id: string, claimedAt: string | undefined, record: DeliveryRecord): Promise<DeliveryRecord | undefined> {
  let found: DeliveryRecord | undefined;
  const written = await retryOnOverload(
    () =>
      deliveries.update(id, (current) => {
        found = current && isOwnWrite(current, record) ? record : undefined;
        return current?.status === 'IN_FLIGHT' && current.claimedAt === claimedAt ? record : undefined;
      }),
    RECORD_RETRY,
  );
  return written ?? found;
}

/**
 * A claimed delivery started under the claim its lane message carries (IN_FLIGHT, attempted
 * now), or why not: no record, or the state machine's refusal (the claim lost or expired).
 */
export async function startUnderClaim(deliveries: DeliveryStore, id: string, claim: string, now: Date): Promise<{ started: DeliveryRecord } | { refused: string; record?: DeliveryRecord }> {
  let refused = 'claim lost';
  let seen: DeliveryRecord | undefined;
  let mine: DeliveryRecord | undefined;
  let found: DeliveryRecord | undefined;
  const started = await deliveries.update(id, (current) => {
    seen = current;
    found = undefined;
    if (!current) {
      refused = 'no record';
      return undefined;
    }
    // Started already by this very call (its claim renewed to `now`), the reply to that commit lost.
    if (mine && current.status === 'IN_FLIGHT' && current.claimedAt === mine.claimedAt && isOwnWrite(current, mine)) {
      found = mine;
      return undefined;
    }
    const next = transition(current, { type: 'start', now, claimedAt: claim });
    if (!next.ok) refused = next.error.message;
    mine = next.ok ? next.state : undefined;
    return mine;
  });
  const ours = started ?? found;
  return ours ? { started: ours } : { refused, ...(seen ? { record: seen } : {}) };
}

/**
 * Herald stopping before a claimed send (its limiter closed), however the stage wrapped it. The
 * start renewed the claim, so the message Pub/Sub brings again no longer matches it and would be
 * skipped, leaving the delivery IN_FLIGHT until the claim expired (HERALD_CLAIM_TTL_MS): it is
 * handed back to the pump, due now, by `handBack`. If that write fails too, the TTL still recovers it.
 */
export function stoppedBeforeSend(e: unknown): boolean {
  return e instanceof LimiterClosedError || (e instanceof Error && e.cause instanceof LimiterClosedError);
}

export async function handBackOnStop(e: unknown, handBack: (t: Transition) => Promise<unknown>, now: Date): Promise<never> {
  if (stoppedBeforeSend(e)) await handBack({ type: 'back-off', until: now }).catch(() => undefined);
  throw e;
}
