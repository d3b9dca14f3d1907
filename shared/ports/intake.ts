import { IntakeBatch } from '../domain/intake/intake';
import type { ReconciledBatch } from '../domain/intake/intake-usage';

/** The intake journal, and the marks of lanes seen behind. Only shared/adapters/ implements these with SDKs and sockets. */

/**
 * The intake journal (domain/intake/intake.ts): what ingest accepted, until the reconciler has
 * matched it against the delivery records.
 */
export interface IntakeStore {
  /** Resolves once the batch is durable. */
  add(batch: IntakeBatch): Promise<void>;
  /**
   * Whether the batch is stored (one read): asked only after an `add` failed, since a write whose
   * reply was lost has landed all the same.
   */
  holds(id: string): Promise<boolean>;
  /**
   * Which of these intake ids were journaled: in the journal now, or removed from it (counted)
   * within the deliveries' retention. An id it cannot tell the time of counts as journaled.
   * The reconciler's rare path (domain/intake/intake-ownership.ts): a read each, and a query per
   * ten minutes of acceptance among those not in the journal.
   */
  journaled(ids: readonly string[]): Promise<Set<string>>;
  /** Of these delivery ids, those a removed batch adopted (ReconciledBatch.adopted): delivery id → batch id. A read each. */
  adoptedBy(deliveryIds: readonly string[]): Promise<Map<string, string>>;
  /**
   * One batch, as `due` gives it (one read), or undefined once it is removed: the batcher reads
   * the events a batch lane message names by reference (lanes.ts publishJournalled).
   */
  get(id: string): Promise<IntakeBatch | undefined>;
  /** Batches accepted at or before `before` (and after `after`, an ISO time, when given), oldest first. */
  due(before: Date, limit: number, after?: string): Promise<IntakeBatch[]>;
  /**
   * Deletes the batches, in as few requests as the store allows, and counts their events in
   * their accounts' usage (domain/intake/intake-usage.ts) in the same commits: a batch another
   * reconciler removed first is neither deleted nor counted again. The same commits keep the
   * removed ids (for `journaled`) and mark the records each batch adopted: a batch whose record
   * another batch adopted meanwhile is left in the journal for the next round to count again.
   */
  remove(batches: readonly ReconciledBatch[]): Promise<void>;
  /**
   * Keeps the reconciler's progress through a batch (IntakeBatch.progress, one write), so a
   * later round, in this process or another, goes on from there. A batch removed meanwhile stays removed.
   */
  progress(id: string, events: number): Promise<void>;
}

/**
 * When each lane was last seen behind (domain/intake/lane-backlog.ts): one document per lane, written
 * blind by the senders working through old messages on it, read by the reconciler.
 */
export interface LaneMarks {
  /** The lane (its topic name) was seen behind at `at`. */
  mark(lane: string, at: Date): Promise<void>;
  /** The last mark of each of `lanes` that has one (epoch ms). */
  read(lanes: readonly string[]): Promise<Map<string, number>>;
}
