import { randomUUID } from 'node:crypto';

/**
 * What a 5xx answer may say of its cause: a generic sentence, never the text of a Pub/Sub or
 * Firestore error (it names gRPC codes, the project, topic and document paths). The detail goes
 * to the structured log, under an `errorId` the answer carries so an operator can find it.
 */

/** Firestore could not take or give what the request needed. */
export const STORAGE_BUSY = "Herald's storage is busy";
/** Pub/Sub did not take the events (a lane or the replay topic). */
export const QUEUE_REFUSED = "Herald's queue did not take the events";

/** The id a 5xx answer and its log line share. */
export function newErrorId(): string {
  return randomUUID();
}
