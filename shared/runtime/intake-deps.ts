import { IngestDeps } from '../app/intake/ingest';
import { admitNotices } from '../app/intake/admit-notices';
import { ReconcileDeps } from '../app/intake/reconcile-deps';
import { RouteDeps } from '../app/intake/route';
import { RECONCILE_BATCH } from '../config';
import { laneTopicOf } from '../topology';
import { Runtime } from './runtime';
import { OperationalEvents } from '../app/operational/operational-events';
import { NoticeLimit } from '../domain/operational/notice-limit';

/** What ingest, route and the reconciler need, from a runtime. */

/** What ingest needs, from a runtime, for one publisher: an account key's account, or none for the ingest token (each event names its own). */
export function ingestDeps(rt: Runtime, publisher: { account?: string }): IngestDeps {
  return {
    bus: rt.bus,
    lanes: rt.lanes,
    names: rt.names,
    batcherWake: rt.batcherWake,
    coalescer: rt.coalescer,
    directory: rt.directory,
    journal: rt.journal,
    clock: rt.clock,
    log: rt.log,
    ...publisher,
    quotas: rt.publishQuotas,
    accounts: rt.accountPolicies,
    maxBodyBytes: rt.config.maxBodyBytes,
    maxEventBytes: rt.config.maxEventBytes,
    keys: rt.orderedKeys,
    logHead: rt.logHead,
    filters: rt.filters,
    operational: operationalEvents(rt),
    // Counted under the prefix the operational events are published with: one setting for both.
    usage: { meter: (account, at, counts) => rt.counters.meter(account, at, counts), operationalEventPrefix: rt.config.operationalEventPrefix },
    // The batcher (runtime/delivery-deps.ts batcherDeps) and replay read the journal.
    batchesByReference: true,
  };
}

const builtOperational = new WeakMap<Runtime, OperationalEvents>();

/**
 * Herald's operational events (docs/operational-events.md), one per runtime (its rate limit is
 * the instance's): published into their account through ingest's core, without its quota.
 */
export function operationalEvents(rt: Runtime): OperationalEvents {
  let built = builtOperational.get(rt);
  if (!built) {
    built = new OperationalEvents({
      admit: (account, events) => {
        const { quotas: _quotas, operational: _operational, ...deps } = ingestDeps(rt, { account });
        return admitNotices({ ...deps, account }, events);
      },
      directory: rt.directory,
      clock: rt.clock,
      log: rt.log,
      prefix: rt.config.operationalEventPrefix,
      ...(rt.config.operationalEventsAccount === undefined ? {} : { operatorAccount: rt.config.operationalEventsAccount }),
      limit: new NoticeLimit(rt.config.operationalEventsIntervalMs),
    });
    builtOperational.set(rt, built);
  }
  return built;
}

/** What `route` needs, from a runtime. */
export function routeDeps(rt: Runtime): RouteDeps {
  return {
    bus: rt.bus,
    lanes: rt.lanes,
    batcherWake: rt.batcherWake,
    coalescer: rt.coalescer,
    directory: rt.directory,
    log: rt.log,
    names: rt.names,
    deadLetterTopic: rt.topology.topics.deadLetter.name,
    keys: rt.orderedKeys,
    clock: rt.clock,
    logHead: rt.logHead,
    accounts: rt.accountPolicies,
    filters: rt.filters,
  };
}

/** What the reconciler needs, from a runtime. */
export function reconcileDeps(rt: Runtime): ReconcileDeps {
  return {
    intake: rt.intake,
    deliveries: rt.deliveries,
    directory: rt.directory,
    bus: rt.bus,
    deadLetterTopic: rt.topology.topics.deadLetter.name,
    clock: rt.clock,
    log: rt.log,
    graceMs: rt.config.reconcileAfterMs,
    batchLimit: RECONCILE_BATCH,
    rateLeases: rt.rateLeases,
    laneMarks: rt.laneMarks,
    lanesOf: (destination) => [...new Set([laneTopicOf(destination, 'first', rt.names), laneTopicOf(destination, 'retry', rt.names)])],
    state: rt.reconciler,
    logHead: rt.logHead,
    catalogue: rt.eventTypeCatalogue,
    filters: rt.filters,
    metrics: rt.telemetry.metrics,
    operational: operationalEvents(rt),
  };
}
