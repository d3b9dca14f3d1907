import { BatcherDeps } from '../app/delivery/batcher';
import { DeliverDeps } from '../app/delivery/deliver';
import { SuspensionDeps } from '../app/delivery/suspend-and-reactivate';
import { MAX_RATE_WAIT_MS } from '../config';
import { UnrecordedSends } from '../domain/delivery/unrecorded-sends';
import { batchLaneNames } from '../topology';
import { Runtime } from './runtime';
import { operationalEvents } from './intake-deps';

/** What deliver, the batcher and the suspension check need, from a runtime. */

const builtDeliverDeps = new WeakMap<Runtime, DeliverDeps>();

/** What `deliver` needs, from a runtime: built once per runtime, not per push. */
export function deliverDeps(rt: Runtime): DeliverDeps {
  let deps = builtDeliverDeps.get(rt);
  if (!deps) {
    deps = buildDeliverDeps(rt);
    builtDeliverDeps.set(rt, deps);
  }
  return deps;
}

function buildDeliverDeps(rt: Runtime): DeliverDeps {
  return {
    bus: rt.bus,
    lanes: rt.lanes,
    coalescer: rt.coalescer,
    deadLetterTopic: rt.topology.topics.deadLetter.name,
    directory: rt.directory,
    destinations: rt.destinations,
    deliveries: rt.deliveries,
    counters: rt.counters,
    logHead: rt.logHead,
    limiter: rt.limiter,
    maxRateWaitMs: MAX_RATE_WAIT_MS,
    sharedLaneWaitMs: rt.config.sharedLaneWaitMs,
    slow: rt.slow,
    names: rt.names,
    notificationsTopic: rt.topology.topics.notifications.name,
    http: rt.http,
    tokens: rt.tokens,
    topics: rt.topics,
    clock: rt.clock,
    log: rt.log,
    policy: { presetTimeoutMs: rt.config.deliveryTimeoutMs, timeScale: rt.config.timeScale },
    failurePolicy: (account) => rt.accountPolicies.policyOf(account),
    allowedTopics: (account) => rt.accountPolicies.allowedTopicsOf(account),
    unrecorded: new UnrecordedSends(),
    keys: rt.orderedKeys,
    laneBacklog: rt.laneBacklog,
    metrics: rt.telemetry.metrics,
    operational: operationalEvents(rt),
    reconcileGraceMs: rt.config.reconcileAfterMs,
  };
}

/** What the batcher needs, from a runtime: deliver's deps and the batch lane. */
export function batcherDeps(rt: Runtime): BatcherDeps {
  return { deliver: deliverDeps(rt), queue: rt.batchLane, subscription: batchLaneNames(rt.names).subscription, log: rt.log, lease: rt.batcherLease, journal: rt.intake };
}

/** What suspension, reactivation and the threshold check need, from a runtime. */
export function suspensionDeps(rt: Runtime): SuspensionDeps {
  return {
    destinations: rt.destinations,
    deliveries: rt.deliveries,
    directory: rt.directory,
    counters: rt.counters,
    bus: rt.bus,
    notificationsTopic: rt.topology.topics.notifications.name,
    clock: rt.clock,
    log: rt.log,
    policy: { presetTimeoutMs: rt.config.deliveryTimeoutMs, timeScale: rt.config.timeScale },
    metrics: rt.telemetry.metrics,
    operational: operationalEvents(rt),
    failingFractions: rt.config.operationalFailingFractions,
  };
}
