/**
 * What the reconciler compares the records of intake batches against: not their number alone
 * but their number and the sum of a 32-bit hash of each delivery id. A count lets records the
 * reconciler does not expect (of a destination deleted or re-typed since, of another batch whose
 * id lies in the round's range, of a producer's message carrying an intake id) stand for ones
 * that are missing; with the sum beside it, an extra record and a missing one balance only if
 * their hashes do (odds of about one in four billion), and anything else sends the batch to be
 * looked at record by record. Both come from one aggregation, billed as a count is.
 */
export interface IntakeTally {
  count: number;
  sum: number;
}

export const EMPTY_TALLY: IntakeTally = { count: 0, sum: 0 };

/** A delivery id's share of the sum: FNV-1a over its UTF-16 code units, as an unsigned 32-bit integer. */
export function deliveryTally(deliveryId: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < deliveryId.length; i++) {
    h ^= deliveryId.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** The tally of these deliveries, each id as often as it is given. */
export function tallyOf(deliveryIds: Iterable<string>): IntakeTally {
  let count = 0;
  let sum = 0;
  for (const id of deliveryIds) {
    count++;
    sum += deliveryTally(id);
  }
  return { count, sum };
}

export function addTallies(a: IntakeTally, b: IntakeTally): IntakeTally {
  return { count: a.count + b.count, sum: a.sum + b.sum };
}

/**
 * Whether the records found are exactly those expected. Past 2^53 a sum is no longer exact in
 * a double (over two million records): never equal then, and the batches are looked at one by one.
 */
export function sameTally(found: IntakeTally, expected: IntakeTally): boolean {
  return Number.isSafeInteger(expected.sum) && found.count === expected.count && found.sum === expected.sum;
}
