import type { IntakeTally } from '../domain/intake/intake-tally';
import { DeliveryRecord, DeliveryStatus } from '../domain/retry/delivery';
import { DeliveryLogQuery } from '../domain/stats/delivery-log';

/** Delivery records: created, updated under a claim, grouped, paged for the log. Only shared/adapters/ implements these with SDKs and sockets. */

/**
 * A store gave up writing one document that other writers kept changing under it (it read,
 * decided and tried again until its time was up): nothing was written; the caller may retry.
 */
export class WriteContentionError extends Error {
  override name = 'WriteContentionError';
  constructor(
    readonly document: string,
    readonly tries: number,
    readonly elapsedMs: number,
    /** What the last try ended with (a lost race, or a reply that left it unsure). */
    readonly lastError?: string,
  ) {
    super(`${document} kept changing under ${tries} tries over ${elapsedMs} ms${lastError ? ` (the last: ${lastError})` : ''}: nothing was written`);
  }
}

export interface DeliveryPage {
  deliveries: DeliveryRecord[];
  /** Pass back to get the next page; absent on the last page. */
  nextCursor?: string;
}

/** How long a DELIVERED outcome's group commit may wait for others: at most `lingerMs`, and no longer than `until` takes to settle. */
export interface DeliveredLinger {
  lingerMs?: number;
  until?: Promise<unknown>;
}

/** What addDelivered did: created (`group`: the group document that holds it), or found a record of its own there. */
export type AddedDelivered = { created: true; group?: string } | { created: false };

/** A status a record may hold only in a document of its own: never a grouped one (DELIVERED). */
export type WorkStatus = Exclude<DeliveryStatus, 'DELIVERED'>;

/** An ordered key's transaction meant to create a record that exists (OrderedKeyWrite.create): nothing was written. */
export class RecordExistsError extends Error {
  constructor() {
    super('a delivery record to be created exists already');
  }
}

export interface DeliveryStore {
  /** The delivery as it stands (domain/delivery/grouped-outcomes.ts), from its own document and any group copies. */
  get(id: string): Promise<DeliveryRecord | undefined>;
  put(record: DeliveryRecord): Promise<void>;
  /**
   * Writes the record only if no document of its own has its id; resolves false (writing
   * nothing) if one exists. `unlessGrouped`: nor a group member (one read more), for a record
   * that must not stand beside a delivery already DELIVERED (a failed send, a recovery);
   * `'here'`: nor a group member this instance recorded, no read (a late success, which must
   * not stand beside a record the reconciler made, and is as unchecked against another
   * instance's group as any first success).
   */
  create(record: DeliveryRecord, options?: { unlessGrouped?: boolean | 'here' }): Promise<boolean>;
  /**
   * Records a first attempt that ended DELIVERED, durable when this resolves, committed with the
   * others this instance records meanwhile (domain/delivery/grouped-outcomes.ts). Alone, it is a document
   * of its own, created only if none has its id: false when one had (a redelivery, settled as
   * `create`'s false is). With others, a member of a group — one write for many — and nothing is
   * read first: a delivery recorded already is then found twice, and every view shows it once,
   * the later copy counted as a duplicate (true). `lingerMs`: how long its commit may wait for
   * more outcomes to share the write (domain/delivery/grouped-outcomes.ts BATCH_OUTCOME_LINGER_MS);
   * `until`: the wait ends when this settles, if sooner (the rest of its bundle is in).
   */
  addDelivered(record: DeliveryRecord, options?: DeliveredLinger): Promise<AddedDelivered>;
  /**
   * A first attempt is being sent: its outcome may be added in a moment, and a commit waits a
   * little for it. Call what this returns once the outcome is added or will not be.
   */
  expectDelivered?(): () => void;
  /**
   * Reads one record, lets `decide` compute its successor, and writes that atomically.
   * `decide` may run more than once under contention, so it must be pure; returning
   * undefined leaves the record as it is. Resolves with what was written, if anything.
   */
  update(id: string, decide: (current: DeliveryRecord | undefined) => DeliveryRecord | undefined): Promise<DeliveryRecord | undefined>;
  /** Ids of work due now: PENDING with availableAt ≤ now, or IN_FLIGHT claimed before `claimExpiredBefore`. */
  due(now: Date, claimExpiredBefore: Date, limit: number): Promise<string[]>;
  /** The earliest availableAt of any PENDING delivery. */
  nextAvailableAt(): Promise<Date | undefined>;
  /** Ids of the destination's PENDING deliveries deferred by rate control (`rateDeferred`), earliest availableAt first. */
  rateDeferred(destinationId: string, limit: number): Promise<string[]>;
  /** The destination's records in `status`, by id; `cursor` is an id: the records after it (a page's nextCursor is its last row's id). */
  list(destinationId: string, query: { status: WorkStatus; limit: number; cursor?: string }): Promise<DeliveryPage>;
  /**
   * The destination's delivery log: newest published first, filtered (domain/stats/delivery-log.ts
   * says what is in it and in which order). Records come without their event and attemptLog.
   */
  log(destinationId: string, query: DeliveryLogQuery): Promise<DeliveryPage>;
  /** The records of `ids` as the log shows them (no event, no attemptLog), in that order; those missing left out. One read each. */
  logRows(ids: readonly string[]): Promise<DeliveryRecord[]>;
  /**
   * The deliveries that came from intake batch `intake` for one of `destinationIds`, each
   * counted once however it is stored (a grouped one and a document of its own): how many, and
   * the sum of their ids' hashes (domain/intake/intake-tally.ts). With `expected`: when its group
   * members counted whole, without looking for documents of their own, make exactly that tally,
   * it is returned without a read more (a member also stored on its own would make the tally
   * differ, as an extra record does: then the exact tally, reading those documents).
   */
  tallyFromIntake(intake: string, destinationIds: readonly string[], expected?: IntakeTally): Promise<IntakeTally>;
  /**
   * The same for these intake batches, every destination: records of other batches whose ids
   * lie between them may be tallied too (which makes the tally differ from the one expected,
   * and the caller looks batch by batch).
   */
  tallyFromIntakes(intakes: readonly string[], expected?: IntakeTally): Promise<IntakeTally>;
  /**
   * The ids of the deliveries that came from intake batch `intake` for one of `destinationIds`,
   * documents of their own and group members alike: a read each (the reconciler's path for a
   * batch whose records were not found exactly, rare).
   */
  fromIntake(intake: string, destinationIds: readonly string[]): Promise<Set<string>>;
  /** The intake id each of `ids` carries, of those with a record that carries one (a read each: the reconciler's rare path). */
  intakesOf(ids: readonly string[]): Promise<Map<string, string>>;
  /** Which of `ids` have a record (one read each). */
  existing(ids: readonly string[]): Promise<Set<string>>;
  /** DEAD records whose dead letter is still owed since `before` or earlier, oldest first. */
  deadLettersOwed(before: Date, limit: number): Promise<string[]>;
  /**
   * How many records of these destinations have `status`: count aggregations (one per 30
   * destinations), billed one read per 1,000 records counted. The console's overview, and
   * what deleting a destination finds still to send.
   */
  countByStatus(destinationIds: readonly string[], status: WorkStatus): Promise<number>;
}
