import { errorMessage } from '../../domain/error-message';

/**
 * How a push to `deliver` fails, by the stage of its attempt that failed (attempt.ts: gate,
 * send, decide, record, after; the reads and writes before an attempt count as before the
 * send). Each wraps what failed (an adapter's error, the store unavailable) as its `cause` and
 * keeps its message. `pushVerdict` alone says what a failure does to the push.
 */
export abstract class DeliveryStageError extends Error {
  abstract readonly stage: 'before-send' | 'send' | 'decide' | 'record' | 'after';
  constructor(cause: unknown) {
    super(errorMessage(cause), { cause });
    this.name = new.target.name;
  }
}

/** Nothing was sent: the destination's read, its turn, a deferral's or a queued record's write, a hand-over's publish. */
export class BeforeSendError extends DeliveryStageError {
  readonly stage = 'before-send';
}

/** The send itself failed in Herald (a topic's allow-list unread): the destination may or may not have the event. */
export class SendError extends DeliveryStageError {
  readonly stage = 'send';
}

/** Sent, but what comes of it could not be decided (the account's failure policy unread): nothing recorded. */
export class DecideError extends DeliveryStageError {
  readonly stage = 'decide';
}

/** Sent and decided, and the record could not be written. */
export class RecordError extends DeliveryStageError {
  readonly stage = 'record';
  /**
   * @param standing a record of the delivery is there and owns it (DELIVERED, scheduled, DEAD or
   * QUEUED), only this send could not be added to it: nothing can be lost.
   */
  constructor(
    cause: unknown,
    readonly standing = false,
  ) {
    super(cause);
  }
}

/** Recorded, and what follows the record failed (counted, dead-lettered, suspended, an ordered key moved on). */
export class AfterError extends DeliveryStageError {
  readonly stage = 'after';
}

/**
 * What a failed push does: `ack` (acked as a duplicate), `redeliver` (the push fails, and
 * Pub/Sub brings it again) or `publish-again` (a bundle's member onto its lane alone, the rest of
 * the bundle acked). Herald promises at least once: a fault is redelivered, which may send an
 * event twice but never loses it; only a record that stands and owns the delivery lets a failed
 * push be acked. A bundle's member is published again alone unless every member failed: then
 * the whole bundle comes again.
 */
export type PushVerdict = 'ack' | 'redeliver' | 'publish-again';

export function pushVerdict(failure: unknown, bundle?: { everyMemberFailed: boolean }): PushVerdict {
  if (failure instanceof RecordError && failure.standing) return 'ack';
  if (bundle !== undefined && !bundle.everyMemberFailed) return 'publish-again';
  return 'redeliver';
}

/** A stage's `.catch`: the failure typed as `Failed` (one typed further in already keeps its stage), thrown on. */
export function failedIn(Failed: new (cause: unknown) => DeliveryStageError): (cause: unknown) => never {
  return (cause) => {
    throw cause instanceof DeliveryStageError ? cause : new Failed(cause);
  };
}
