import type { DeliveryLogHead } from '../destinations/delivery-log-head';
import { SkipPostponed } from '../../domain/intake/intake';
import { Clock, Logger } from '../../ports/clock';
import { DeliveryStore } from '../../ports/deliveries';
import { IntakeStore, LaneMarks } from '../../ports/intake';
import { MessageBus } from '../../ports/messaging';
import { RateLeaseStore } from '../../ports/rate';
import { Metrics } from '../../ports/telemetry';
import type { DestinationDirectory } from '../destinations/destination-directory';
import type { EventTypeCatalogue } from '../destinations/event-type-samples';
import type { DestinationFilters } from '../destinations/destination-filters';
import type { OperationalEmitter } from '../../domain/operational/operational-events';

/** What the reconciler (reconcile.ts) works with. */
export interface ReconcileDeps {
  intake: IntakeStore;
  deliveries: DeliveryStore;
  directory: DestinationDirectory;
  bus: MessageBus;
  deadLetterTopic: string;
  /** Announces the dead letters it publishes (`herald.delivery.dead`, the same event as the first try's); absent: none. */
  operational?: OperationalEmitter;
  clock: Clock;
  log: Logger;
  /** A batch is reconciled once it is this old: longer than Pub/Sub takes to deliver it when all is well. */
  graceMs: number;
  /** Batches (and owed dead letters) taken per round. */
  batchLimit: number;
  /** Each destination's rate controller: when a sender last leased tells whether its lane is moving. */
  rateLeases: RateLeaseStore;
  /**
   * When each lane was last seen behind (domain/intake/lane-backlog.ts), and a destination's lanes: a
   * destination under the unleased allowance leases nothing, and on a shared lane backed up by
   * its neighbours its missing record is late, not lost. Absent: rate leases alone.
   */
  laneMarks?: LaneMarks;
  lanesOf?: (destination: { id: string; lane?: string; batch?: object }) => string[];
  /** Kept between rounds (one per process). */
  state: ReconcilerState;
  /** A recovered record goes into its destination's log head (domain/delivery/recent-log.ts) as deliver's do. */
  logHead?: Pick<DeliveryLogHead, 'created'>;
  /** The Event types page, kept from the batches each round reads (it never rejects, nor fails the round). */
  catalogue?: Pick<EventTypeCatalogue, 'observe'>;
  /** A round starts no run of recovery after this long (ms); default ROUND_MS. */
  roundMs?: number;
  /** Nor once it has created this many records; default ROUND_RECORDS. */
  roundRecords?: number;
  /** Herald's own metrics; absent: none recorded. */
  metrics?: Metrics;
  /** The destinations' filters, as routing applied them: a delivery a filter dropped is not expected (absent: applied all the same). */
  filters?: Pick<DestinationFilters, 'takes'>;
}

export interface ReconcilerState {
  /**
   * Batches postponed (their lanes still moving) are left alone until `until` (epoch ms): the
   * rounds before then look only at batches accepted after `through`, rather than read the
   * same postponed batches again each round while the lanes drain.
   */
  skip?: SkipPostponed;
  /**
   * The last round ran out of budget with batches unfinished: the next takes only
   * BEHIND_BATCHES, the oldest (those it will work on), rather than read 100 whole batches each
   * round of a long recovery.
   */
  behind?: boolean;
}

export interface ReconcileReport {
  /** Intake batches reconciled (and removed). */
  batches: number;
  /** Batches left for a later round: their missing deliveries are for destinations still being delivered to. */
  postponed: number;
  /** Deliveries they should have led to. */
  expected: number;
  /** Of those, found without a record and created PENDING. */
  recovered: number;
  /** Owed dead letters published. */
  deadLetters: number;
  /** Batches the round's budget left part-way or untouched (their progress kept): the next round goes on. Absent when none. */
  unfinished?: number;
}
