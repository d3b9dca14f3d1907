import { IngestDeps } from '../app/intake/ingest';
import { ReconcileDeps } from '../app/intake/reconcile-deps';
import { RouteDeps } from '../app/intake/route';
import { RECONCILE_BATCH } from '../config';
import { laneTopicOf } from '../topology';
import { Runtime } from './runtime';

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
    usage: rt.counters,
  };
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
    metrics: rt.telemetry.metrics,
  };
}
