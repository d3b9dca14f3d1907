import { fromPubSubMessage, malformedAttributes, PushDelivery } from '../../domain/events/cloudevents-pubsub';
import { intakeOf } from '../../domain/intake/lane-message';
import { TopologyNames } from '../../topology';
import { Clock, Logger } from '../../ports/clock';
import { LaneProvisioner, MessageBus } from '../../ports/messaging';
import { OrderedKeyStore } from '../../ports/ordered-keys';
import { admitOrdered, OrderedDeps, takesInOrder } from '../ordering/ordered-delivery';
import { fanOut, LaneDeps } from '../lanes/lanes';
import { DestinationDirectory } from '../destinations/destination-directory';
import { rejectToDeadLetter } from '../lanes/dead-letter';
import { ACCOUNT_EXTENSION, ACCOUNT_ID, eventAccount, withAccount } from '../../domain/access/account';
import { AccountPolicies } from '../access/account-policies';
import { DestinationFilters, UNCOUNTED_FILTERS } from '../destinations/destination-filters';
import { receiversOf } from '../../domain/operational/operational-events';

export interface RouteDeps {
  bus: MessageBus;
  lanes: LaneProvisioner;
  directory: DestinationDirectory;
  log: Logger;
  names: TopologyNames;
  /** Wakes a batcher when the events it routes reach the batch lane and none runs (app/lanes/batcher-wake.ts). */
  batcherWake?: LaneDeps['batcherWake'];
  /** Gathers a busy destination's events into bundles (app/lanes/lane-coalescer.ts). */
  coalescer?: LaneDeps['coalescer'];
  deadLetterTopic: string;
  /** Ordered destinations' keys (app/ordering/ordered-delivery.ts); absent: every event is fanned out unordered. */
  keys?: OrderedKeyStore;
  clock?: Clock;
  logHead?: OrderedDeps['logHead'];
  /** Which accounts exist, cached (absent: not checked): an event of an account that does not is a dead letter. */
  accounts?: Pick<AccountPolicies, 'missing'>;
  /** The destinations' filters, compiled and counted (absent: applied, not counted). */
  filters?: DestinationFilters;
}

export type RouteOutcome =
  | { kind: 'routed'; destinations: string[] }
  | { kind: 'unmatched' }
  | { kind: 'invalid'; issues: { path: string; message: string }[] };

/**
 * Fans one event out: a copy onto the lane of every destination whose event types match.
 * Throws when a publish fails, so the push is not acked and Pub/Sub brings the event again
 * (lanes already published then see a duplicate, which `deliver` recognises).
 */
export async function routeEvent(deps: RouteDeps, push: PushDelivery): Promise<RouteOutcome> {
  const parsed = fromPubSubMessage(push.message, push.publishTime);
  // Any attribute, Herald's own included (herald-intake is carried on): none may hold what no publish or write can take.
  const malformed = malformedAttributes(push.message).filter((m) => parsed.ok || !parsed.issues.some((i) => i.path === m.path));
  if (!parsed.ok || malformed.length > 0) {
    const issues = [...(parsed.ok ? [] : parsed.issues), ...malformed];
    await rejectToDeadLetter(deps.bus, deps.deadLetterTopic, push, 'invalid-event', JSON.stringify(issues));
    deps.log.warn('invalid event on the events topic: sent to the dead-letter topic', { messageId: push.messageId, issues });
    return { kind: 'invalid', issues };
  }
  // A producer publishing straight to the topic names the account as a message attribute (or as the CloudEvents extension).
  const named = push.message.attributes[ACCOUNT_EXTENSION];
  const conflict = named !== undefined && parsed.value.attributes[ACCOUNT_EXTENSION] !== undefined && named !== parsed.value.attributes[ACCOUNT_EXTENSION];
  if ((named !== undefined && !ACCOUNT_ID.test(named)) || conflict) {
    const issues = [{ path: `attributes.${ACCOUNT_EXTENSION}`, message: conflict ? 'the heraldaccount attribute and the ce-heraldaccount extension name different accounts' : 'heraldaccount must be an account id: 1-63 lowercase letters, digits and hyphens' }];
    await rejectToDeadLetter(deps.bus, deps.deadLetterTopic, push, 'invalid-event', JSON.stringify(issues));
    deps.log.warn('invalid event on the events topic: sent to the dead-letter topic', { messageId: push.messageId, issues });
    return { kind: 'invalid', issues };
  }
  const event = named !== undefined ? withAccount(parsed.value, named) : parsed.value;
  const account = eventAccount(event.attributes);
  // Route cannot answer 400: an unknown account's event goes to the dead-letter topic, saying so, and makes nothing else.
  if (deps.accounts && (await deps.accounts.missing([account])).length > 0) {
    const issues = [{ path: `attributes.${ACCOUNT_EXTENSION}`, message: `no account ${JSON.stringify(account)}: create it (POST /admin/accounts) or correct heraldaccount, then publish the event again` }];
    await rejectToDeadLetter(deps.bus, deps.deadLetterTopic, push, 'unknown-account', JSON.stringify(issues));
    deps.log.warn('event of an account that does not exist on the events topic: sent to the dead-letter topic', { messageId: push.messageId, account, eventId: event.attributes.id });
    return { kind: 'invalid', issues };
  }
  const matched = receiversOf(event, await deps.directory.matching(event.attributes.type, account));
  const targets = (deps.filters ?? UNCOUNTED_FILTERS).sift(matched, event);
  const ids = { eventId: event.attributes.id, eventSource: event.attributes.source, eventType: event.attributes.type };
  if (targets.length === 0) {
    deps.log.info(matched.length === 0 ? 'no destination subscribes to this event type' : 'the filters of the destinations that subscribe to this event type dropped it', ids);
    return { kind: 'unmatched' };
  }
  const intake = intakeOf(push.message);
  const inOrder = deps.keys && deps.clock ? targets.filter((d) => takesInOrder(d, event)) : [];
  const item = { event, publishedAt: push.publishTime.toISOString(), ...(intake !== undefined ? { intake } : {}) };
  await Promise.all([
    fanOut(deps, event, targets.filter((d) => !inOrder.includes(d)), { publishedAt: push.publishTime, ...(intake !== undefined ? { intake } : {}) }),
    ...inOrder.map((d) => admitOrdered({ ...deps, keys: deps.keys!, clock: deps.clock! }, d, [item])),
  ]);
  deps.log.debug('event routed', { ...ids, destinations: targets.map((d) => d.id) });
  return { kind: 'routed', destinations: targets.map((d) => d.id) };
}
