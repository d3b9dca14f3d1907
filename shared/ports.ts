import type { Account, AccountKey, AccountTombstone } from './domain/access/account';
import type { PortalLinkRecord, PortalSessionRecord } from './domain/access/portal-access';
import { Destination } from './domain/destinations/destination';
import { AttemptResult, DeliveryRecord, DeliveryStatus, HeraldOverload, LastError } from './domain/retry/delivery';
import { RateBucket, RateCounts, SettledCounts } from './domain/stats/success-rate';
import type { RateRollup } from './domain/stats/rate-rollup';
import { LatencyHistogram } from './domain/stats/latency-histogram';
import { Lease, LeaseRequest } from './domain/rate/rate-control';
import { RateDoc } from './domain/rate/rate-doc';
import { HeraldEvent } from './domain/events/event';
import { PubSubMessage } from './domain/events/cloudevents-pubsub';
import { ReplayReport, RunnerLock } from './domain/replay/replay';
import { IntakeBatch } from './domain/intake/intake';
import type { IntakeTally } from './domain/intake/intake-tally';
import { DeliveryLogQuery } from './domain/stats/delivery-log';
import { RecentBucket, RecentEntry } from './domain/delivery/recent-log';
import type { OrderedKeyState } from './domain/modes/ordering';

/** The edges of Herald. Only shared/adapters/ implements these with SDKs and sockets. */

export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

export interface MessageBus {
  /** Publishes and resolves with the message id once Pub/Sub has it durably. */
  publish(topic: string, message: PubSubMessage): Promise<string>;
}

/** A topic that does not exist: callers may provision it and publish again. */
export class TopicNotFoundError extends Error {
  override name = 'TopicNotFoundError';
  constructor(readonly topic: string) {
    super(`Pub/Sub topic ${topic} does not exist`);
  }
}

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
  ) {
    super(`${document} kept changing under ${tries} tries over ${elapsedMs} ms: nothing was written`);
  }
}

/**
 * A dedicated lane that this deployment has not declared (HERALD_LANE_PROVISIONING=declared:
 * the Pulumi program creates dedicated lanes, Herald may not). The message says what to do.
 */
export class LaneNotDeclaredError extends Error {
  override name = 'LaneNotDeclaredError';
  constructor(readonly destinationId: string) {
    super(
      `destination ${destinationId} asks for a dedicated lane, and this deployment creates dedicated lanes only where its Pulumi stack declares them: add "${destinationId}" to herald:dedicatedLanes and run pulumi up, then send the destination again (or leave "lane" out to use the shared lanes)`,
    );
  }
}

export interface LaneProvisioner {
  /** Creates the destination's lane topic and push subscription if missing; idempotent. */
  ensureLane(destinationId: string): Promise<void>;
  removeLane(destinationId: string): Promise<void>;
  /** Destinations that have a lane of their own now (dedicated, or from before lanes were shared). */
  existingLanes?(): Promise<string[]>;
}

/** Accounts and their keys (domain/access/account.ts). */
export interface AccountStore {
  get(id: string): Promise<Account | undefined>;
  /** By id, a page at a time: `cursor` is the last id of the page before. */
  list(page: { limit: number; cursor?: string }): Promise<{ accounts: Account[]; nextCursor?: string }>;
  /**
   * Creates the account unless its id is taken (`taken`) or was an account's that was
   * deleted (`deleted`: ids are never reused). `get` and `list` never show a deleted account.
   */
  create(account: Account): Promise<'created' | 'taken' | 'deleted'>;
  /** Reads, decides and writes atomically (as DestinationStore.update); what was written. */
  update(id: string, decide: (current: Account | undefined) => Account | undefined): Promise<Account | undefined>;
  /**
   * Deletes the account and its keys and leaves its tombstone (purge `pending`), atomically:
   * the ids of the keys deleted, or undefined when there was no such account.
   */
  delete(id: string, now: Date): Promise<{ keyIds: string[] } | undefined>;
  /** Tombstones whose data may not all be deleted yet, oldest first. */
  pendingPurges(limit: number): Promise<AccountTombstone[]>;
  /** Marks the tombstone's purge done: nothing of the account is left. */
  purged(id: string, now: Date): Promise<void>;
  putKey(key: AccountKey): Promise<void>;
  getKey(id: string): Promise<AccountKey | undefined>;
  listKeys(account: string): Promise<AccountKey[]>;
  /** Reads, decides and writes one key atomically; what was written. */
  updateKey(id: string, decide: (current: AccountKey | undefined) => AccountKey | undefined): Promise<AccountKey | undefined>;
}

/**
 * The customer portal's links and the sessions opened from them (domain/access/portal-access.ts),
 * and each account's "every session ended" mark: what a signed portal token must still find.
 */
export interface PortalStore {
  createLink(link: PortalLinkRecord): Promise<void>;
  getLink(id: string): Promise<PortalLinkRecord | undefined>;
  createSession(session: PortalSessionRecord): Promise<void>;
  /**
   * Opens `session` from its link in one transaction: counts it on the link (`sessionsOpened`)
   * and writes it, unless the link has opened all it may (domain/access/portal-access.ts
   * linkHasSessionsLeft: `used-up`) or is not the account's (`no-link`).
   */
  openSession(session: PortalSessionRecord): Promise<'opened' | 'used-up' | 'no-link'>;
  getSession(id: string): Promise<PortalSessionRecord | undefined>;
  /** The account's links made at or after `since`, newest first, at most `limit`. */
  links(account: string, since: Date, limit: number): Promise<PortalLinkRecord[]>;
  /** The account's sessions made at or after `since`, newest first, at most `limit`. */
  sessions(account: string, since: Date, limit: number): Promise<PortalSessionRecord[]>;
  /**
   * Revokes the account's link `id` at `at` (unless it already was): the link as it now stands;
   * undefined when the account has no such link. Its sessions are not read nor written: each
   * checks its link's record (domain/access/portal-access.ts sessionAccess), so the link's mark ends them.
   */
  revokeLink(account: string, id: string, at: string): Promise<PortalLinkRecord | undefined>;
  /** Revokes the account's session `id` at `at` (unless it already was); undefined when the account has no such session. */
  revokeSession(account: string, id: string, at: string): Promise<PortalSessionRecord | undefined>;
  /** Marks every link and session of the account made up to `at` as ended (the mark first, then each live record): how many records it revoked. */
  endAll(account: string, at: string): Promise<{ links: number; sessions: number }>;
  /** The account's mark: when every one of its sessions was last ended, if ever. */
  endedAt(account: string): Promise<string | undefined>;
  /** Deletes every link, session and mark of the account: how many documents. */
  deleteAccount(account: string): Promise<number>;
}

/**
 * What a deleted account left in the stores besides its account document: keys, replay
 * reports scoped to it, event-type samples, its publish bucket, its destinations' rate
 * controllers, counters and log heads, and delivery records (app/access/account-purge.ts).
 */
export interface AccountDataEraser {
  /**
   * Deletes up to `limit` of the account's documents, going on from `cursor` (from the
   * start without one): how many it deleted, and where to go on from (absent: it has been
   * through every store). Bounded and idempotent, so the work may stop and resume anywhere.
   */
  eraseSome(account: string, limit: number, cursor?: string): Promise<{ deleted: number; cursor?: string }>;
}

/** Each account's publish bucket, shared by every ingest instance (domain/intake/quota.ts). */
export interface QuotaStore {
  /** Atomically hands out up to `want` tokens of `account`'s bucket, refilling at `limit`/s: how many it did. */
  take(account: string, want: number, limit: number, nowMs: number): Promise<number>;
}

/** The latest sample of one event type an account published (app/destinations/event-type-samples.ts). */
export interface EventTypeSample {
  account: string;
  type: string;
  /** ISO 8601: when ingest accepted the sampled event (refreshed at most hourly while the type keeps coming). */
  lastSeenAt: string;
  /** The event in CloudEvents JSON (structured mode), or, over the size limit, its attributes and a `truncated` excerpt. */
  sample: Record<string, unknown>;
}

/** One type as the catalogue stores it: its sample as JSON text (Firestore refuses some JSON, arrays in arrays for one). */
export interface EventTypeEntry {
  type: string;
  lastSeenAt: string;
  sample: string;
}

/** A type in one of the account's catalogue documents (`shard`: which). */
export interface CatalogueEntry extends EventTypeEntry {
  shard: number;
}

/** Each account's event types (domain/events/event-type-catalogue.ts), kept by the reconciler from the intake journal (app/destinations/event-type-samples.ts). */
export interface EventTypeStore {
  /**
   * Adds or refreshes some of the account's types: one write per catalogue document named,
   * merged, so types another writer recorded meanwhile stay.
   */
  record(account: string, entries: readonly CatalogueEntry[]): Promise<void>;
  /** What the account's catalogue documents hold (not the per-type documents of before): the catalogue's memory after a restart. */
  known(account: string): Promise<CatalogueEntry[]>;
  /** The account's types, by type: the catalogue's and any older per-type document's, the newest `lastSeenAt` of each. */
  list(account: string): Promise<EventTypeSample[]>;
}

export interface DestinationStore {
  get(id: string): Promise<Destination | undefined>;
  /** Every destination of every account: the whole registry, for what truly means all of it. */
  list(): Promise<Destination[]>;
  /**
   * The destinations of one account, and nothing of any other: a named account's are read by
   * their ids alone (`<account>_…`); `default`'s ids have no such prefix, so its list reads the
   * registry and keeps those without one.
   */
  listAccount(account: string): Promise<Destination[]>;
  /** How many destinations the account has (listAccount's length, for a named account without reading them). */
  countAccount(account: string): Promise<number>;
  /** Writes the whole destination; resolves whether it was created (true) or replaced. */
  put(destination: Destination): Promise<{ created: boolean }>;
  delete(id: string): Promise<boolean>;
  /**
   * Reads one destination, lets `decide` compute its successor, and writes that atomically
   * (as DeliveryStore.update). Resolves with what was written, if anything.
   */
  update(id: string, decide: (current: Destination | undefined) => Destination | undefined): Promise<Destination | undefined>;
  /**
   * What changed since `since`, a `readTime` this method returned before; undefined: nothing,
   * only where the log stands now (a fresh directory starts from there, reading no
   * destination). A store without it has each account the directory holds reloaded.
   */
  changesSince?(since: Date | undefined): Promise<DestinationChanges>;
}

export interface DestinationChanges {
  upserted: Destination[];
  removed: string[];
  /** Pass it back as `since` next time. */
  readTime: Date;
}

/** Counts to add to one destination's bucket (see shared/domain/stats/success-rate.ts). */
export interface CounterDelta extends RateCounts {
  destinationId: string;
  bucketStart: number;
  /** Newest first; the store keeps the newest few. */
  lastErrors: LastError[];
  /** Attempt latencies, sparse (only the bins hit): the store adds each bin in the same write. */
  latency?: LatencyHistogram;
  /** Deliveries that became DEAD or QUEUED in this bucket: added in the same write. */
  settled?: SettledCounts;
  /** The writer's newest records created in this bucket (domain/delivery/recent-log.ts), replacing its list in the same write. */
  recent?: { writer: string; entries: readonly RecentEntry[] };
  /**
   * The shared document (of this bucket) the delta goes into with other sparse destinations'
   * — one writer's, of one account, named by it (`<account>_~…`: app/destinations/destination-counters.ts) — instead of
   * the destination's own.
   */
  group?: string;
}

/**
 * A flush, named in every counter document it writes (in the same write, so at no cost): after a
 * commit failed, one read of one of its documents tells whether it landed (a reply lost on its
 * way back), since increments added again would be counted twice. One writer's flushes go one
 * after another, and none is written until the last one's outcome is known, so its mark in a
 * document is still its own when read.
 */
export interface CounterFlushMark {
  writer: string;
  flush: number;
}

/** A commit of a flush that failed: its deltas, and a document of it with the flush's mark. */
export interface UnsureCounterWrite {
  deltas: CounterDelta[];
  probe: { doc: string; mark: CounterFlushMark };
}

/** CounterStore.add's failure when commits of a marked flush failed: every other commit is written. */
export class CountersNotWritten extends Error {
  constructor(
    readonly unsure: UnsureCounterWrite[],
    readonly writeError: unknown,
  ) {
    super(writeError instanceof Error ? writeError.message : String(writeError));
    this.name = 'CountersNotWritten';
  }
}

/**
 * Each destination's counters (success rate, latency, DEAD/QUEUED counts; the delivery log's
 * head rides in the same documents). Each writer adds to its own shard of a (destination, bucket) pair,
 * so no counter document takes more than one write per flush of one writer.
 */
export interface CounterStore {
  /**
   * One write per document: a delta without a `group` is its destination's own; all deltas of one
   * (bucket, group), one shared document. With `mark`, each document carries it, and commits that
   * fail are named in a CountersNotWritten (the others are written); without, or any other error,
   * none is known written.
   */
  add(deltas: readonly CounterDelta[], shard: number, mark?: CounterFlushMark): Promise<void>;
  /** Whether each failed commit landed after all: its probe document carries its mark (a read each). */
  landed(probes: readonly UnsureCounterWrite['probe'][]): Promise<boolean[]>;
  /** Every shard of every bucket of the destination that started at or after `since` (epoch ms), own and shared documents, merged per bucket. */
  window(destinationId: string, since: number): Promise<RateBucket[]>;
  /** `window` of each destination, read together: shared documents once for all of them (the suspension check). */
  windows(destinationIds: readonly string[], since: number): Promise<Map<string, RateBucket[]>>;
  /**
   * The log head of the destination's newest buckets (since `since`), newest first, every
   * writer's list of a bucket together: at most `maxDocs` documents read of each kind (own,
   * shared), and every bucket that may have been cut by that limit left out.
   */
  recentLog(destinationId: string, since: number, maxDocs: number): Promise<RecentBucket[]>;
  /** Every counter document (own and shared) of the buckets since `since`, read whole, merged per destination and bucket: the suspension check's one query. */
  bucketsSince(since: number): Promise<Map<string, RateBucket[]>>;
  /** The destinations' rollups (domain/stats/rate-rollup.ts), those that exist, each with the version a write of it must match: one read per destination asked. */
  rollups(destinationIds: readonly string[]): Promise<Map<string, { rollup: RateRollup; version: string }>>;
  /**
   * Writes each rollup if the stored one is still at its `version` (undefined: none stored yet),
   * a write each, not all or nothing: false for one refused (another write came first).
   */
  putRollups(writes: readonly { rollup: RateRollup; version: string | undefined }[]): Promise<boolean[]>;
  /** Where the last complete suspension check folded to (the first bucket it left unfolded); undefined before any. */
  foldCursor(): Promise<number | undefined>;
  setFoldCursor(foldedTo: number): Promise<void>;
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

/**
 * Ordered delivery's keys (domain/modes/ordering.ts): each (destination, partition key)'s sequence,
 * read and written together with the delivery records it orders, atomically.
 */
export interface OrderedKeyStore {
  /**
   * Reads the key's state (undefined: never used), lets `plan` read records through `records`
   * and decide, and writes what it returns, atomically, only if nothing it read changed
   * meanwhile. `plan` may run more than once under contention: it must not act outside it.
   */
  transact<T>(destinationId: string, key: string, plan: (state: OrderedKeyState | undefined, records: OrderedKeyRecords) => Promise<OrderedKeyWrite<T>>): Promise<T>;
  get(destinationId: string, key: string): Promise<OrderedKeyState | undefined>;
  /** The destination's keys held by their head (blocked or suspended), oldest first. */
  blocked(destinationId: string, limit: number): Promise<OrderedKeyState[]>;
  /** Keys with places still to settle, not held, unchanged since `before` (app/ordering/ordered-delivery.ts repairStalledKeys). */
  stalled(before: Date, limit: number): Promise<OrderedKeyState[]>;
  /** Ids of the key's records waiting for a place again (`order.again`), outside any transaction. */
  again(destinationId: string, key: string): Promise<string[]>;
}

/**
 * Records as an ordered key's transaction reads them, by id only (what was read is what the
 * commit checks; a query in a Firestore transaction locks a range of the collection): their own documents (an ordered delivery is never grouped).
 */
export interface OrderedKeyRecords {
  byIds(ids: readonly string[]): Promise<(DeliveryRecord | undefined)[]>;
}

export interface OrderedKeyWrite<T> {
  /** The key's new state; absent: unchanged. */
  state?: OrderedKeyState;
  /** Records to write (created or replaced). */
  records?: DeliveryRecord[];
  /** Records to create, unread: if one of them exists, nothing is written and transact throws RecordExistsError. */
  create?: DeliveryRecord[];
  result: T;
}

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
   * that must not stand beside a delivery already DELIVERED (a failed send, a recovery).
   */
  create(record: DeliveryRecord, options?: { unlessGrouped?: boolean }): Promise<boolean>;
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
  /** Batches accepted at or before `before` (and after `after`, an ISO time, when given), oldest first. */
  due(before: Date, limit: number, after?: string): Promise<IntakeBatch[]>;
  /** Deletes the batches, in as few requests as the store allows. */
  remove(ids: readonly string[]): Promise<void>;
  /**
   * Keeps the reconciler's progress through a batch (IntakeBatch.progress, one write), so a
   * later round, in this process or another, goes on from there. A batch removed meanwhile stays removed.
   */
  progress(id: string, events: number): Promise<void>;
}

/**
 * Brings up to `count` of a destination's rate-deferred deliveries forward onto its lane, as a
 * pump round would (app/retry/pump.ts deferredAdvancer); `drained`: fewer were left than asked for.
 * The delivery limiter calls it when rate control grants turns that no sender has work for.
 */
export interface DeferredAdvancer {
  bringForward(destinationId: string, count: number): Promise<{ drained: boolean }>;
}

/**
 * Each destination's rate controller, shared by every process that delivers to it: one
 * document per destination, leased from about once a second (domain/rate/rate-control.ts lease).
 */
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

export interface RateLeaseStore {
  /** Atomically applies the sender's feedback and grants it its share of the rate. */
  lease(destinationId: string, request: LeaseRequest): Promise<Lease>;
  /** The controller as it stands (the admin API shows its rate); undefined before any lease. */
  peek(destinationId: string): Promise<RateDoc | undefined>;
}

export interface HttpRequest {
  url: string;
  headers: Record<string, string>;
  body: Buffer;
  timeoutMs: number;
}

/** One address a host name resolves to. */
export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** DNS as Herald's SSRF guard sees it (tests map names to the addresses they need). */
export interface HostResolver {
  /** Every address of `hostname`; rejects with the resolver's error (`code` ENOTFOUND, EAI_AGAIN, …). */
  lookup(hostname: string): Promise<ResolvedAddress[]>;
}

/** Verifies the Google-signed OIDC token a push or scheduler request carries. */
export interface IdTokenVerifier {
  /** The token's claims once its signature, issuer, expiry and audience check out; rejects otherwise. */
  verify(idToken: string, audience: string): Promise<Record<string, unknown>>;
}

export interface HttpSender {
  /** Never throws for the receiver's faults: a timeout or a refused connection is a result. */
  send(request: HttpRequest): Promise<AttemptResult>;
}

/** One publish to a Pub/Sub-topic destination. */
export interface TopicPublishRequest {
  /** The full resource name, `projects/P/topics/T` (any project). */
  topic: string;
  message: PubSubMessage;
  timeoutMs: number;
  /** Pub/Sub's ordering key (an ordered destination's partition key): subscribers with message ordering get a key's messages in order. */
  orderingKey?: string;
}

/** A batch's publish to a Pub/Sub-topic destination. */
export interface TopicBatchRequest {
  topic: string;
  messages: PubSubMessage[];
  timeoutMs: number;
}

export interface TopicPublisher {
  /**
   * Publishes once, within `timeoutMs`. Never throws for the topic's faults: its result is
   * `published`, a `topic` refusal (permission denied, not found), a `timeout`, a
   * `network` error, or `herald-overload` when Pub/Sub itself could not take the call
   * (domain/delivery/topic-destination.ts topicAttemptResult).
   */
  publish(request: TopicPublishRequest): Promise<AttemptResult | HeraldOverload>;
  /**
   * A batch (domain/modes/batching.ts): every message in one Publish call, within `timeoutMs`. The
   * same results as `publish`, for the call as a whole (`published` carries the first message's id).
   */
  publishMany(request: TopicBatchRequest): Promise<AttemptResult | HeraldOverload>;
  close(): Promise<void>;
}

export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

export type LogFields = Record<string, unknown>;

/** A message pulled from a subscription, held by this reader until acked or released. */
export interface PulledMessage {
  ackId: string;
  messageId: string;
  publishTime: Date;
  message: PubSubMessage;
}

/**
 * A topic read through a pull subscription: the dead-letter topic (replay), the batch lane (the
 * batcher). A pulled message stays on the topic until acked; released, it is delivered again to
 * the next pull.
 */
/**
 * Whether a batcher is running (app/lanes/batcher-wake.ts): one document, which a batcher writes
 * while it pulls (until when it is sure to go on) and ingest reads when it has no such time in
 * view.
 */
export interface BatcherLeaseStore {
  aliveUntil(): Promise<Date | undefined>;
  keepAlive(until: Date): Promise<void>;
}

export interface PullQueue {
  /** Up to `max` messages; none when nothing is waiting (after a short wait). */
  pull(max: number): Promise<PulledMessage[]>;
  /** Removes them from the topic. */
  ack(ackIds: readonly string[]): Promise<void>;
  /** Keeps them from every other pull (this one's included) for `seconds` (at most 600). */
  hold(ackIds: readonly string[], seconds: number): Promise<void>;
  /** Leaves them on the topic, as they were, for the next reader. */
  release(ackIds: readonly string[]): Promise<void>;
}

/** The dead-letter topic through its hold subscription. */
export type DeadLetterQueue = PullQueue;

/** Replay reports, one document per replay id. */
/** Replay reports, each under its key (domain/replay/replay.ts replayKey: `<account>:<id>`, or the id of an unscoped one). */
export interface ReplayStore {
  get(key: string): Promise<ReplayReport | undefined>;
  /** Writes the report under reportKey(report) only if none is there; resolves false (writing nothing) if one is. */
  create(report: ReplayReport): Promise<boolean>;
  /** As DeliveryStore.update: `decide` may run more than once and must be pure. */
  update(key: string, decide: (current: ReplayReport | undefined) => ReplayReport | undefined): Promise<ReplayReport | undefined>;
  /** Newest first (by createdAt); with `account`, only the replays scoped to it (`request.account`). */
  recent(limit: number, account?: string): Promise<ReplayReport[]>;
  /** Reports whose status is running, oldest first. */
  running(limit: number): Promise<ReplayReport[]>;
  /** Reports whose status is queued, created at or after `since`, oldest first: the replays waiting for their turn. */
  queued(since: string, limit: number): Promise<ReplayReport[]>;
  /** Reports whose id is `id`, in any account (the operator's look-up by id alone). */
  named(id: string, limit: number): Promise<ReplayReport[]>;
  /** Atomically takes the one replay runner for the replay at `key` until `until` (domain/replay/replay.ts takeRunner). */
  takeRunner(key: string, until: Date, now: Date, account?: string): Promise<{ ok: true } | { ok: false; held: RunnerLock }>;
  /** Frees the runner if `key` holds it. */
  releaseRunner(key: string): Promise<void>;
}

export type { HeraldEvent };
