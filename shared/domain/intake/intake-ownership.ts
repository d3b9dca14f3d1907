import { splitDestinationId } from '../ids';

/**
 * Which journal batch counts a delivery record, and which counts an event, when the same event
 * is in several batches (a producer's resend after an answer it never got) — docs/usage.md,
 * "Exactness". Pure: the caller reads what it needs first.
 *
 * A record carries the id of the intake whose lane message created it. That intake counts it
 * when it was journaled. Ingest publishes the lane messages beside the journal write, so an
 * intake may have sent records on and never been journaled: the process was killed, or the
 * write failed. No batch of that id exists to count those records. The first batch that finds
 * one of them counts it instead ("adopts" it), and says so durably, so that no other batch does.
 */

/** One record a batch expects: its delivery, and the event it carries (the batch's own object). */
export interface ExpectedRecord<E> {
  deliveryId: string;
  destinationId: string;
  event: E;
}

export interface RecordOwners {
  /** The intake id each existing record carries; records missing or without one are left out. */
  intakeOf: ReadonlyMap<string, string>;
  /** Intake ids that are in the journal or were removed from it after being counted. */
  journaled: ReadonlySet<string>;
  /** Orphaned records (their intake never journaled) that another batch adopted already: delivery id → batch. */
  adoptedBy: ReadonlyMap<string, string>;
}

export interface OwnedCounts<E> {
  /** The records this batch counts, per account. */
  deliveries: Record<string, number>;
  /** Events this batch does not count: another batch owns their first record. */
  resentEvents: Set<E>;
  /** Records carrying a never-journaled intake's id that this batch counts: to be marked as adopted with its removal. */
  adopted: string[];
}

/**
 * `batch` counts each record it owns: one carrying its own id, or one carrying an intake that was
 * never journaled and no batch adopted yet. It counts an event when it owns the event's first record
 * (the smallest delivery id): every batch holding the event looks at the same record, so one does.
 * An event with expected records of which none exists or carries an intake id is not counted here.
 */
export function ownedCounts<E>(batch: string, expected: readonly ExpectedRecord<E>[], owners: RecordOwners, accounts: Iterable<string> = []): OwnedCounts<E> {
  const deliveries: Record<string, number> = Object.fromEntries([...accounts].map((a) => [a, 0]));
  const adopted: string[] = [];
  const first = new Map<E, { deliveryId: string; ours: boolean }>();
  const seen = new Set<E>();
  for (const e of expected) {
    seen.add(e.event);
    const owner = ownerOf(batch, e.deliveryId, owners);
    if (owner === undefined) continue;
    const ours = owner === batch;
    if (ours) {
      const { account } = splitDestinationId(e.destinationId);
      deliveries[account] = (deliveries[account] ?? 0) + 1;
      if (owners.intakeOf.get(e.deliveryId) !== batch && !owners.adoptedBy.has(e.deliveryId)) adopted.push(e.deliveryId);
    }
    const was = first.get(e.event);
    if (was === undefined || e.deliveryId < was.deliveryId) first.set(e.event, { deliveryId: e.deliveryId, ours });
  }
  const resentEvents = new Set([...seen].filter((event) => first.get(event)?.ours !== true));
  return { deliveries, resentEvents, adopted };
}

/** The batch that counts the record: its intake's when journaled, else the adopter's, else `batch` (which adopts it). */
function ownerOf(batch: string, deliveryId: string, owners: RecordOwners): string | undefined {
  const intake = owners.intakeOf.get(deliveryId);
  if (intake === undefined) return undefined;
  if (intake === batch || owners.journaled.has(intake)) return intake;
  return owners.adoptedBy.get(deliveryId) ?? batch;
}
