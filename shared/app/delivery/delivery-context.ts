import type { ReceiverTokens } from '../../ports/receiver-tokens';
import { OperationalEmitter } from '../../domain/operational/operational-events';
import { LaneBacklog } from '../lanes/lane-backlog';
import type { LaneDeps } from '../lanes/lanes';
import { DeliveryRecord } from '../../domain/retry/delivery';
import { Destination, PolicySettings } from '../../domain/destinations/destination';
import { FailurePolicy } from '../../domain/access/account';
import { HeraldEvent } from '../../domain/events/event';
import { RejectReason } from '../../domain/delivery/lane-step';
import { DeliveryPolicy } from '../../domain/retry/delivery-policy';
import { Decision } from '../../domain/retry/retry-decision';
import { SlowDestinations } from '../../domain/delivery/slow-destinations';
import { UnrecordedSends } from '../../domain/delivery/unrecorded-sends';
import { Clock, Logger, LogFields } from '../../ports/clock';
import { DeliveryStore } from '../../ports/deliveries';
import { DestinationStore } from '../../ports/destinations';
import { HttpSender } from '../../ports/http';
import { LaneProvisioner, MessageBus, TopicPublisher } from '../../ports/messaging';
import { OrderedKeyStore } from '../../ports/ordered-keys';
import { TopologyNames } from '../../topology';
import { DeliveryLimiter } from '../rate/delivery-limiter';
import { DestinationDirectory } from '../destinations/destination-directory';
import { DeliveryLogHead } from '../destinations/delivery-log-head';
import type { BundleMember } from './bundle-outcomes';
import type { AllowedTopics } from '../access/topic-access';
import { DestinationCounters } from '../destinations/destination-counters';
import { Metrics } from '../../ports/telemetry';

/** What `deliver` works with (shared/runtime/delivery-deps.ts deliverDeps builds it once per runtime). */
export interface DeliverDeps {
  bus: MessageBus;
  /** Provisions a dedicated lane found missing when a message is published onto it. */
  lanes: LaneProvisioner;
  deadLetterTopic: string;
  directory: DestinationDirectory;
  destinations: DestinationStore;
  deliveries: DeliveryStore;
  /** Each destination's success-rate counters, latency and DEAD/QUEUED counts (this process's, flushed now and then). */
  counters: DestinationCounters;
  /** The head of each destination's delivery log: a record created goes into it. */
  logHead: Pick<DeliveryLogHead, 'created'>;
  limiter: DeliveryLimiter;
  /** Longest a delivery waits in-process for its rate slot; a later slot defers it (PENDING) to the pump. */
  maxRateWaitMs: number;
  /** The same on a shared lane, whose push slots other destinations share (HERALD_SHARED_LANE_WAIT_MS). */
  sharedLaneWaitMs: number;
  /** Destinations slow now, as this instance saw them: their first attempts leave the shared lanes. */
  slow: SlowDestinations;
  /** Bundles a slow destination's hand-overs of the moment into one message on its retry lane (app/lanes/lane-coalescer.ts); absent, each goes alone. */
  coalescer?: LaneDeps['coalescer'];
  /** Where the retry lanes are (a slow destination's first attempts are handed over to them). */
  names: TopologyNames;
  notificationsTopic: string;
  http: HttpSender;
  /** OAuth2 client-credentials tokens for receivers that want them (app/delivery/webhook-send.ts). */
  tokens?: ReceiverTokens;
  /** Pub/Sub-topic destinations: one publish per attempt, in the CloudEvents Pub/Sub binding. */
  topics: TopicPublisher;
  clock: Clock;
  log: Logger;
  policy: PolicySettings;
  /** An account's failure policy (docs/accounts.md), for destinations without a failureMode of their own; absent: retry. */
  failurePolicy?: (account: string) => Promise<FailurePolicy>;
  /** An account's allowedTopics in force, cached: checked before every publish to a topic destination (app/access/topic-access.ts). */
  allowedTopics: (account: string) => Promise<AllowedTopics>;
  /** First attempts this instance sent but could not record: a redelivery records them without sending again. */
  unrecorded: UnrecordedSends;
  /** Ordered destinations' keys (app/ordering/ordered-delivery.ts); absent: records are settled without them (unit tests of other things). */
  keys?: OrderedKeyStore;
  /** Marks lanes seen behind, for the reconciler (app/lanes/lane-backlog.ts); absent: none is marked. */
  laneBacklog?: Pick<LaneBacklog, 'seen'>;
  /** Herald's own metrics (docs/observability.md); absent: none recorded (unit tests of other things). */
  metrics?: Metrics;
  /** Announces dead deliveries and suspensions (docs/operational-events.md); absent: only the dead letter and the suspension email go out. */
  operational?: OperationalEmitter;
  /** The reconciler's grace (HERALD_RECONCILE_AFTER_MS): a success later than it may meet a recovered record (domain/intake/intake.ts mayMeetRecovered); absent: never. */
  reconcileGraceMs?: number;
}

export type DeliverOutcome =
  | { kind: 'attempted'; deliveryId: string; decision: Decision['kind']; status: DeliveryRecord['status'] }
  | { kind: 'duplicate'; deliveryId: string; status?: DeliveryRecord['status'] }
  | { kind: 'queued'; deliveryId: string }
  | { kind: 'deferred'; deliveryId: string; until: string }
  | { kind: 'handed-over'; deliveryId: string; topic: string }
  | { kind: 'rejected'; reason: RejectReason }
  /** A bundle's member that failed, published again alone (app/delivery/deliver.ts deliverPush). */
  | { kind: 'published-again'; deliveryId: string; topic: string };

/** One delivery as `deliver` handles it: the event, where it goes, under which policy. */
export interface Target {
  destination: Destination;
  policy: DeliveryPolicy;
  event: HeraldEvent;
  id: string;
  /** The delivery's ids, as every log line about it carries them. */
  ids: LogFields;
  /** When the event was first published to Herald (its lane message's `publishedAt`): max-age limits and its log place count from it. */
  publishedAt: string;
  /** The intake batch the event came in (ingest's journal), written on the record for the reconciler. */
  intake?: string;
  /** Its producer resent it (`Herald-Resend`): a first attempt reads its record before sending. */
  resent?: true;
  /** It came in a bundle, one push for several: how long it may wait for its rate turn (domain/delivery/lane-admission.ts), how its outcome joins the group commit. */
  bundle?: BundleMember;
}

/**
 * The record of an attempt already made is written again after a passing overload of
 * Firestore (up to 3 tries over 0.3 s): failing that, the push is redelivered and the
 * destination gets the event twice.
 */
export const RECORD_RETRY = { tries: 3, firstPauseMs: 100 };
