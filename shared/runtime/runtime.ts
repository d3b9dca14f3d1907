import { FirestoreAccountDataEraser } from '../adapters/firestore/account-data';
import { FirestoreAccountStore } from '../adapters/firestore/accounts';
import { FirestoreBatcherLease } from '../adapters/firestore/batcher-lease';
import { FirestoreCounterStore } from '../adapters/firestore/counters';
import { FirestoreDeliveryStore } from '../adapters/firestore/deliveries/delivery-store';
import { FirestoreDestinationStore } from '../adapters/firestore/destinations';
import { FirestoreEventTypeStore } from '../adapters/firestore/event-types';
import { FirestoreIntakeStore } from '../adapters/firestore/intake';
import { FirestoreLaneMarks } from '../adapters/firestore/lane-marks';
import { FirestoreOrderedKeys } from '../adapters/firestore/ordered-keys';
import { FirestorePortalStore } from '../adapters/firestore/portal';
import { FirestoreQuotaStore } from '../adapters/firestore/quotas';
import { FirestoreRateLeaseStore } from '../adapters/firestore/rate-leases';
import { FirestoreReplayStore } from '../adapters/firestore/replays';
import { OperationCounter } from '../adapters/firestore/stores';
import { GoogleIdTokenVerifier } from '../adapters/google-id-tokens';
import { systemResolver } from '../adapters/guarded-lookup';
import { UndiciHttpSender } from '../adapters/http-sender';
import { OAuth2Tokens } from '../adapters/oauth2-tokens';
import { PubSubBus } from '../adapters/pubsub/bus';
import { DeclaredLanes } from '../adapters/pubsub/declared-lanes';
import { PubSubPullQueue } from '../adapters/pubsub/pull-queue';
import { PubSubTopicPublisher } from '../adapters/pubsub/topic-publisher';
import { PubSubLanes, PushTarget } from '../adapters/pubsub/topology';
import { AccountPolicies } from '../app/access/account-policies';
import { KEY_CACHE_MS, KeyVerifier } from '../app/access/key-verifier';
import { PortalVerifier } from '../app/access/portal-verifier';
import { PushAuthenticator, digestOf } from '../app/access/push-auth';
import { DeliveryLogHead } from '../app/destinations/delivery-log-head';
import { COUNTER_SHARDS, DestinationCounters, counterBucketMs } from '../app/destinations/destination-counters';
import { DestinationDirectory } from '../app/destinations/destination-directory';
import { DestinationFilters } from '../app/destinations/destination-filters';
import { EventTypeCatalogue } from '../app/destinations/event-type-samples';
import { IntakeJournal } from '../app/intake/intake-journal';
import { PublishQuotas } from '../app/intake/publish-quotas';
import { ReconcilerState } from '../app/intake/reconcile-deps';
import { BatcherWaker } from '../app/lanes/batcher-wake';
import { LaneBacklog } from '../app/lanes/lane-backlog';
import { LaneCoalescer } from '../app/lanes/lane-coalescer';
import { DeliveryLimiter } from '../app/rate/delivery-limiter';
import { PumpDeps, deferredAdvancer } from '../app/retry/pump';
import { ConfigError, PUMP_BATCH, SLOW_FORGET_MS, onPubSubEmulator, pushAuthModeOf, secretBoxOf } from '../config';
import { ENV_NAMES, HeraldConfig } from '../config-schema';
import type { AddressRules } from '../domain/access/address-policy';
import type { LocalService } from '../domain/access/local-services';
import type { OperationalEmitter } from '../domain/operational/operational-events';
import { DAY_MS } from '../domain/delivery/delivery-retention';
import { SlowDestinations } from '../domain/delivery/slow-destinations';
import { HERALD_ATTRIBUTE_PREFIX } from '../domain/events/cloudevents-pubsub';
import { HOUR } from '../domain/retry/delivery-policy';
import { createLogger, parseSeverity } from '../log';
import { TracedHttpSender, TracedTopicPublisher } from '../adapters/traced-senders';
import { NO_TRACING, Tracing } from '../ports/tracing';
import { tracing, useTracing } from '../tracing';
import { createTracing } from './tracing';
import { AccountDataEraser, AccountStore, PortalStore } from '../ports/accounts';
import { Clock, Logger, systemClock } from '../ports/clock';
import { DeliveryStore } from '../ports/deliveries';
import { DestinationStore, EventTypeStore } from '../ports/destinations';
import { HostResolver, HttpSender, IdTokenVerifier } from '../ports/http';
import { IntakeStore, LaneMarks } from '../ports/intake';
import { BatcherLeaseStore, DeadLetterQueue, LaneProvisioner, MessageBus, PullQueue, TopicPublisher } from '../ports/messaging';
import { OrderedKeyStore } from '../ports/ordered-keys';
import { RateLeaseStore } from '../ports/rate';
import { ReplayStore } from '../ports/replay';
import { Telemetry } from '../ports/telemetry';
import { HealthReader } from '../ports/health';
import { LaneAges } from '../domain/health/lane-ages';
import { deployedHealth } from './health';
import { createTelemetry } from './telemetry';
import { FunctionName, Topology, TopologyNames, batchLaneNames, deadLetterHoldName, heraldTopology } from '../topology';
import { Firestore } from '@google-cloud/firestore';
import { PubSub } from '@google-cloud/pubsub';
import { randomUUID } from 'node:crypto';

/** Everything a function needs, built once per process from the configuration. */
export interface Runtime {
  config: HeraldConfig;
  /** Herald's own events (RuntimeOverrides.operational), for the paths built here: the pump and the limiter's bring-forward. */
  operational?: OperationalEmitter;
  /** SHA-256 digests of the admin and ingest tokens (from the token or its configured hash): requests are compared against these. */
  credentials: { admin: Buffer; ingest: Buffer };
  /** Accounts and their keys (POST /admin/accounts…). */
  accounts: AccountStore;
  /** Account keys presented as bearer tokens, each record re-read at most every few seconds. */
  keys: KeyVerifier;
  /** Deletes what a deleted account leaves behind (app/access/account-purge.ts). */
  accountData: AccountDataEraser;
  /** Portal links and sessions as minted and opened (docs/console.md), so each can be ended. */
  portals: PortalStore;
  /** Whether a portal link or session still stands, each record re-read at most every few seconds. */
  portalAccess: PortalVerifier;
  /** Each account's failure policy (docs/accounts.md), quotas and allowed topics, re-read at most every HERALD_DESTINATION_CACHE_MS. */
  accountPolicies: AccountPolicies;
  /** Each account's publish rate at ingest. */
  publishQuotas: PublishQuotas;
  /** Each account's event types, each with its latest sample (the console's Event types page). */
  eventTypes: EventTypeStore;
  /** The reconciler's writer of those: from the intake batches it reads, one write per account and round at most (no write at ingest). */
  eventTypeCatalogue: EventTypeCatalogue;
  /** Authenticates the internal endpoints (push and scheduler requests). */
  pushAuth: PushAuthenticator;
  /** DNS as the SSRF guard sees it (registration and every attempt). */
  resolver: HostResolver;
  /** The SSRF rules webhook URLs are held to, at registration and on every attempt. */
  addressRules: AddressRules;
  clock: Clock;
  log: Logger;
  bus: MessageBus;
  lanes: LaneProvisioner;
  /** Whether a batcher is running: its runs renew it, publishers onto the batch lane read it (app/lanes/batcher-wake.ts). */
  batcherLease: BatcherLeaseStore;
  /** Wakes a batcher when events reach the batch lane and none runs. */
  batcherWake: BatcherWaker;
  /** A busy destination's first attempts from separate requests, onto its lane together (HERALD_LANE_LINGER_MS). */
  coalescer: LaneCoalescer;
  destinations: DestinationStore;
  deliveries: DeliveryStore;
  /** Ordered destinations' keys, with the records they order (app/ordering/ordered-delivery.ts). */
  orderedKeys: OrderedKeyStore;
  /** What ingest accepted, until the reconciler has matched it against the delivery records. */
  intake: IntakeStore;
  /** Ingest's group-committing writer to `intake`. */
  journal: IntakeJournal;
  /** What the reconciler keeps between its rounds in this process. */
  reconciler: ReconcilerState;
  directory: DestinationDirectory;
  /** The destinations' filters, compiled once each, their outcomes counted in `counters`. */
  filters: DestinationFilters;
  /** Each destination's counters (success rate, latency, DEAD/QUEUED) as this process counts them, flushed every HERALD_RATE_FLUSH_MS. */
  counters: DestinationCounters;
  /** The head of each destination's delivery log, riding in the counter documents. */
  logHead: DeliveryLogHead;
  /** Adaptive rate per destination, shared with every other process through Firestore. */
  limiter: DeliveryLimiter;
  slow: SlowDestinations;
  rateLeases: RateLeaseStore;
  /** Lanes seen behind: marked by deliver, read by the reconciler (domain/intake/lane-backlog.ts). */
  laneMarks: LaneMarks;
  laneBacklog: LaneBacklog;
  /** Herald's own health for the console's Overview panel (runtime/health.ts). */
  health: HealthReader;
  /** Replay reports (Firestore `replays`). */
  replays: ReplayStore;
  /** The dead-letter topic through its hold subscription (replay reads it). */
  deadLetters: DeadLetterQueue;
  /** The batch lane through its pull subscription (the batcher reads it). */
  batchLane: PullQueue;
  http: HttpSender;
  /** OAuth2 client-credentials tokens for receivers, cached per destination. */
  tokens: OAuth2Tokens;
  /** Publishes to Pub/Sub-topic destinations (a client of its own, apart from Herald's internal topics). */
  topics: TopicPublisher;
  names: TopologyNames;
  topology: Topology;
  firestoreOps: OperationCounter;
  /** Herald's own metrics (docs/observability.md), exported as the settings say (runtime/telemetry.ts). */
  telemetry: Telemetry;
  pubsub: PubSub;
  firestore: Firestore;
  close(): Promise<void>;
}

export function pushTargetFrom(config: HeraldConfig): PushTarget {
  const base = config.pushBaseUrl;
  if (!base) throw new ConfigError('HERALD_PUSH_BASE_URL is not set: Herald needs the base URL of its functions to create destination lanes');
  return {
    endpointFor: (fn: FunctionName) => {
      const url = new URL(`${base.replace(/\/$/, '')}/${fn}`);
      if (config.pushToken) url.searchParams.set('token', config.pushToken);
      return url.toString();
    },
    ...(config.pushServiceAccount ? { serviceAccountEmail: config.pushServiceAccount } : {}),
    ...(onPubSubEmulator() ? { emulator: true } : {}),
  };
}

/** What tests and local mode may replace. */
export type RuntimeOverrides = Partial<Pick<Runtime, 'clock' | 'http' | 'log' | 'topics' | 'resolver'>> & {
  /** Telemetry shared with other runtimes (local mode: its instances, one GET /metrics) or read by a test; its owner shuts it down. */
  telemetry?: Telemetry;
  /** The process's tracing (tests: one that keeps its spans in memory); its owner shuts it down. Absent: made from the settings, unless one is set already. */
  tracing?: Tracing;
  /** Local mode: the health its instances share, read from their shared telemetry (runtime/health.ts localHealth). */
  health?: HealthReader;
  /** Local mode: the first attempts' ages its instances see, which `health` reads. */
  laneAges?: LaneAges;
  /** Verifies OIDC tokens (tests: certificates of a local key). */
  idTokens?: IdTokenVerifier;
  /** Local mode: its emulators and its own port, which no destination may reach (domain/access/local-services.ts). */
  localServices?: readonly LocalService[];
  /**
   * Herald's own events (runtime/intake-deps.ts operationalEvents), made from the runtime once it
   * is built: they publish through ingest's deps, which this module cannot import without a cycle.
   * Absent: deaths the pump or the rate limiter's bring-forward decide are told to nobody but the dead-letter topic.
   */
  operational?: (rt: Runtime) => OperationalEmitter;
};

/** The digest requests are compared with: of the token, or the configured SHA-256 itself. */
function credentialDigest(token: string | undefined, sha256: string | undefined, name: 'admin' | 'ingest'): Buffer {
  if (token !== undefined) return digestOf(token);
  if (sha256 !== undefined) return Buffer.from(sha256, 'hex');
  const env = name === 'admin' ? [ENV_NAMES.adminToken, ENV_NAMES.adminTokenSha256] : [ENV_NAMES.ingestToken, ENV_NAMES.ingestTokenSha256];
  throw new ConfigError(`${env[0]} (at least 16 characters) or ${env[1]} must be set`);
}

export function createRuntime(config: HeraldConfig, overrides: RuntimeOverrides = {}): Runtime {
  const credentials = {
    admin: credentialDigest(config.adminToken, config.adminTokenSha256, 'admin'),
    ingest: credentialDigest(config.ingestToken, config.ingestTokenSha256, 'ingest'),
  };
  const clock = overrides.clock ?? systemClock;
  // One tracing per process (its context is): a second runtime (local mode's instances) uses the first's.
  const ownTracing = overrides.tracing || tracing() !== NO_TRACING ? undefined : createTracing(config, { local: false });
  const processTracing = overrides.tracing ?? ownTracing;
  if (processTracing) useTracing(processTracing);
  const log = overrides.log ?? createLogger({ level: parseSeverity(config.logLevel) });
  // Before any client is made: a missing key stops start-up with nothing left open.
  const secrets = secretBoxOf(config, log);
  const pubsub = new PubSub({ projectId: config.projectId });
  // gaxServerStreamingRetries: reads and queries (server streams) retry only the codes Firestore's own config calls transient. The old default
  // retries any error, so a read Firestore refuses at once (INVALID_ARGUMENT: a reserved id such as `__x__`) failed only after ~7 s (measured on the emulator).
  const firestore = new Firestore({ projectId: config.projectId, ignoreUndefinedProperties: true, gaxServerStreamingRetries: true });
  const firestoreOps = new OperationCounter();
  const telemetry = overrides.telemetry ?? createTelemetry(config, { local: false }).telemetry;
  const deliveries = new FirestoreDeliveryStore(firestore, firestoreOps, { retentionMs: config.deliveryRetentionDays * DAY_MS, now: () => clock.now() }, { alone: 'document', metrics: telemetry.metrics });
  const destinations = new FirestoreDestinationStore(firestore, firestoreOps, secrets);
  const names = { prefix: config.topicPrefix, laneShards: config.laneShards, retryShards: config.retryShards };
  const resolver = overrides.resolver ?? systemResolver;
  const addressRules: AddressRules = { allowLoopback: config.allowLoopback, ...(overrides.localServices ? { localServices: overrides.localServices } : {}) };
  const http = overrides.http ?? new UndiciHttpSender({ rules: addressRules, resolver });
  const tokens = new OAuth2Tokens({ rules: addressRules, resolver, now: () => clock.now().getTime() });
  const pushAuth = new PushAuthenticator(
    {
      mode: pushAuthModeOf(config),
      ...(config.pushToken !== undefined ? { pushToken: config.pushToken } : {}),
      ...(config.pushServiceAccount !== undefined ? { pushServiceAccount: config.pushServiceAccount } : {}),
      ...(config.schedulerServiceAccount !== undefined ? { schedulerServiceAccount: config.schedulerServiceAccount } : {}),
      ...(config.pushBaseUrl !== undefined ? { baseUrl: config.pushBaseUrl } : {}),
    },
    overrides.idTokens ?? new GoogleIdTokenVerifier(),
    clock,
  );
  const topics = overrides.topics ?? new PubSubTopicPublisher(new PubSub({ projectId: config.projectId }));
  const counterStore = new FirestoreCounterStore(firestore, firestoreOps);
  const counters = new DestinationCounters(counterStore, clock, log, {
    bucketMs: counterBucketMs(config.timeScale, config.rateFlushMs),
    hourMs: HOUR / config.timeScale,
    dayMs: (24 * HOUR) / config.timeScale,
    flushMs: config.rateFlushMs,
    shard: Math.floor(Math.random() * COUNTER_SHARDS),
  });
  const logHead = new DeliveryLogHead(counterStore, clock, counters);
  const rateLeases = new FirestoreRateLeaseStore(firestore, firestoreOps);
  const laneMarks = new FirestoreLaneMarks(firestore, firestoreOps);
  const intake = new FirestoreIntakeStore(firestore, firestoreOps, config.operationalEventPrefix, (config.deliveryRetentionDays + 1) * DAY_MS);
  const deadLetters = new PubSubPullQueue(pubsub, deadLetterHoldName(names));
  const batchLane = new PubSubPullQueue(pubsub, batchLaneNames(names).subscription);
  // The limiter brings deferred deliveries forward as a pump round does, through this runtime's stores and lanes.
  const directory = new DestinationDirectory(destinations, clock, config.destinationCacheMs, config.directoryMaxDestinations);
  const limiter = new DeliveryLimiter(rateLeases, clock, log, randomUUID(), deferredAdvancer(() => pumpDeps(rt)), telemetry.metrics);
  // Counts left by a request are written even if no other request comes (where the CPU is allocated between requests).
  const flusher = setInterval(() => void counters.flushIfDue(), config.rateFlushMs);
  flusher.unref();
  const accounts = new FirestoreAccountStore(firestore, firestoreOps);
  const accountPolicies = new AccountPolicies(
    accounts,
    clock,
    log,
    config.destinationCacheMs,
    { publishPerSecond: config.accountPublishQuota, destinations: config.accountDestinationQuota },
    config.defaultAccountTopics ?? [],
  );
  const eventTypes = new FirestoreEventTypeStore(firestore, firestoreOps);
  const eventTypeCatalogue = new EventTypeCatalogue(eventTypes, log);
  const keys = new KeyVerifier(accounts, clock, KEY_CACHE_MS, log);
  const portals = new FirestorePortalStore(firestore, firestoreOps);
  const bus = new PubSubBus(pubsub);
  const topology = heraldTopology(names);
  const batcherLease = new FirestoreBatcherLease(firestore, firestoreOps);
  const batcherWake = new BatcherWaker({
    lease: batcherLease,
    wake: () => bus.publish(topology.topics.batchWake.name, { data: Buffer.alloc(0), attributes: { [`${HERALD_ATTRIBUTE_PREFIX}wake`]: 'batcher' } }).then(() => undefined),
    clock,
    log,
  });
  const lanes = config.laneProvisioning === 'declared' ? new DeclaredLanes(config.dedicatedLanes ?? []) : new PubSubLanes(pubsub, names, pushTargetFrom(config));
  const coalescer = new LaneCoalescer({ bus, lanes, names, batcherWake }, config.laneLingerMs);
  const rt: Runtime = {
    config,
    credentials,
    accounts,
    keys,
    accountData: new FirestoreAccountDataEraser(firestore, firestoreOps),
    portals,
    portalAccess: new PortalVerifier({ portals, accounts, keys, clock }),
    accountPolicies,
    publishQuotas: new PublishQuotas(new FirestoreQuotaStore(firestore, firestoreOps), (account) => accountPolicies.quotasOf(account), clock, log),
    eventTypes,
    eventTypeCatalogue,
    pushAuth,
    resolver,
    addressRules,
    clock,
    log,
    bus,
    lanes,
    destinations,
    deliveries,
    orderedKeys: new FirestoreOrderedKeys(firestore, deliveries, firestoreOps, config.deliveryRetentionDays * DAY_MS),
    intake,
    journal: new IntakeJournal(intake, clock, undefined, config.journalGapMs, log),
    reconciler: {},
    directory,
    filters: new DestinationFilters({ tally: counters, clock, log }),
    counters,
    logHead,
    limiter,
    slow: new SlowDestinations({ slowMs: config.slowAttemptMs, forgetMs: SLOW_FORGET_MS }),
    rateLeases,
    laneMarks,
    laneBacklog: new LaneBacklog(laneMarks, clock, log, config.reconcileAfterMs, overrides.laneAges),
    health: overrides.health ?? deployedHealth(config),
    replays: new FirestoreReplayStore(firestore, firestoreOps),
    deadLetters,
    batchLane,
    // Each delivery's send in a client span whose context the receiver gets (adapters/traced-senders.ts).
    http: new TracedHttpSender(http),
    topics: new TracedTopicPublisher(topics),
    tokens,
    names,
    topology,
    batcherLease,
    batcherWake,
    coalescer,
    firestoreOps,
    telemetry,
    pubsub,
    firestore,
    async close() {
      // A bundle waiting for company goes now, before the Pub/Sub client closes under it.
      coalescer.flushAll();
      limiter.close();
      await limiter.advancesDone();
      clearInterval(flusher);
      await counters.flush();
      await Promise.all([deadLetters.close().catch(() => undefined), batchLane.close().catch(() => undefined)]);
      await Promise.allSettled([
        pubsub.close(),
        topics.close(),
        firestore.terminate(),
        http instanceof UndiciHttpSender ? http.close() : Promise.resolve(),
        // The last points (this instance's final minute) go out now, with the clients.
        overrides.telemetry ? Promise.resolve() : telemetry.shutdown(),
        // And the last spans.
        closeTracing(ownTracing),
        tokens.close(),
      ]);
    },
  };
  if (overrides.operational) rt.operational = overrides.operational(rt);
  return rt;
}

/** The tracing this runtime made: its last spans exported, then no longer the process's. */
async function closeTracing(own: Tracing | undefined): Promise<void> {
  if (!own) return;
  if (tracing() === own) useTracing(NO_TRACING);
  await own.shutdown();
}

/** What the retry pump needs, from a runtime. */
export function pumpDeps(rt: Runtime): PumpDeps {
  return {
    bus: rt.bus,
    lanes: rt.lanes,
    names: rt.names,
    directory: rt.directory,
    destinations: rt.destinations,
    deliveries: rt.deliveries,
    deadLetterTopic: rt.topology.topics.deadLetter.name,
    clock: rt.clock,
    log: rt.log,
    claimTtlMs: rt.config.claimTtlMs,
    batchSize: PUMP_BATCH,
    keys: rt.orderedKeys,
    metrics: rt.telemetry.metrics,
    ...(rt.operational ? { operational: rt.operational } : {}),
  };
}
