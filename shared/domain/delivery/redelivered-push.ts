import { AttemptDetail, AttemptResult, DeliveryRecord, DeliveryStatus, isSuccess } from '../retry/delivery';
import { isOwnWrite } from './delivery-record';
import { transition } from '../retry/delivery-state';

/**
 * A first push is sent without reading its record first (docs/delivery-guarantees.md: no read is
 * owed on a first push to keep a redelivery from being sent again); its record is then created
 * only if there is none. When one was there, the push was a redelivery (Pub/Sub lost an ack,
 * a producer resent after a 503, a lane message arrived after the reconciler recovered its
 * delivery) or ran beside a concurrent copy: these rules say what the send that was made
 * anyway does to the record. None of them dead-letters twice or moves a delivery backwards; the
 * send is counted once, when it is made (app/delivery/attempt.ts).
 */

/** The send that found a record already there. */
export interface RedeliveredSend {
  at: Date;
  result: AttemptResult;
  /** The attempt as the record keeps it (attemptLog), for a send that settles the delivery. */
  detail?: AttemptDetail;
}

export type AfterRedelivery =
  /**
   * DELIVERED before: the destination got the event again. One more duplicate on the record (the send itself is counted as sent, as every send is).
   * `already`: the record has this send's duplicate or success (the update that wrote it lost its reply and ran
   * again): nothing more to write, the same outcome.
   */
  | { kind: 'duplicate'; record: DeliveryRecord; already?: true }
  /**
   * Waiting for a retry (PENDING) or in a claimed retry (IN_FLIGHT), and this send succeeded:
   * DELIVERED through the state machine as the retry's success would have made it. It is an
   * attempt like that retry (the attempts before it failed and were counted as failures); a
   * claimed retry still under way finds its claim gone.
   */
  | { kind: 'delivered'; record: DeliveryRecord; already?: true }
  /** Nothing to write: a failed send leaves the delivery to its schedule; DEAD and QUEUED are never changed. */
  | { kind: 'left'; status: DeliveryStatus; why: string };

export function afterRedeliveredSend(existing: DeliveryRecord, send: RedeliveredSend): AfterRedelivery {
  const { status } = existing;
  switch (status) {
    case 'DELIVERED': {
      const count = (existing.duplicates?.count ?? 0) + 1;
      return { kind: 'duplicate', record: { ...existing, duplicates: { count, lastAt: send.at.toISOString() } } };
    }
    case 'PENDING':
    case 'IN_FLIGHT': {
      if (!isSuccess(send.result)) return { kind: 'left', status, why: `the send failed; the ${status} delivery keeps its schedule` };
      const next = transition(existing, { type: 'delivered-unclaimed', at: send.at, result: send.result, ...(send.detail ? { detail: send.detail } : {}) });
      if (!next.ok) return { kind: 'left', status, why: next.error.message };
      // DELIVERED keeps no event (domain/delivery/delivery-record.ts withEvent): nothing is owed any more.
      const { event: _sent, ...record } = next.state;
      return { kind: 'delivered', record };
    }
    case 'DEAD':
    case 'QUEUED':
      // Terminal, or held for an operator: its dead letter (if any) is out already, its counters are settled.
      return { kind: 'left', status, why: `the delivery is ${status}; it is not changed by a redelivered push` };
  }
}

/**
 * What this very send wrote on an earlier run of its update (`earlier`), when `existing` is that
 * write: the update's reply was lost and it runs again (the Firestore client runs a transaction
 * again after DEADLINE_EXCEEDED), and finds its own duplicate or success rather than another
 * send's. Then the same outcome, `already` written; undefined when `existing` is anything else
 * (a record another writer changed since is settled afresh).
 */
export function writtenBefore(existing: DeliveryRecord, earlier: AfterRedelivery | undefined): AfterRedelivery | undefined {
  if (earlier === undefined || earlier.kind === 'left') return undefined;
  const mine = earlier.record;
  const same = isOwnWrite(existing, mine) && existing.duplicates?.count === mine.duplicates?.count && existing.duplicates?.lastAt === mine.duplicates?.lastAt;
  return same ? { ...earlier, record: existing, already: true } : undefined;
}

/**
 * Whether a first push reads its record before sending. Production Pub/Sub numbers a push's
 * deliveries (`deliveryAttempt`) on a subscription with a dead-letter policy, which every lane
 * has: a push it says is not its first is a redelivery, almost always of a delivery already
 * recorded, and one read (which skips the send) costs less than a duplicate send and the
 * update that records it. The emulator sends no `deliveryAttempt`. A lane message of an event
 * its producer says it resends (`Herald-Resend`, domain/intake/resend.ts) reads first too: its
 * first try, unanswered, may have reached the lane and been sent already.
 */
export function readsBeforeFirstSend(deliveryAttempt: number | undefined, resent = false): boolean {
  return resent || (deliveryAttempt !== undefined && deliveryAttempt > 1);
}

/**
 * Whether a pulled lane message was most likely handed out before: its reader died holding it,
 * or its hold ran out, and it came back. Pub/Sub says so (`deliveryAttempt`, on a subscription
 * with a dead-letter policy); the emulator does not, and then a message published longer ago
 * than the shortest hold (10 s) is taken for one: a backlog's first pull pays a read per event,
 * where a message brought back unchecked was sent again beside its first copy's send (the
 * batcher's share of `chaos --batched` duplicates after a kill).
 */
export function pulledBefore(deliveryAttempt: number | undefined, publishTime: number, now: number): boolean {
  return deliveryAttempt !== undefined ? deliveryAttempt > 1 : now - publishTime >= PULLED_BEFORE_AGE_MS;
}

export const PULLED_BEFORE_AGE_MS = 10_000;
