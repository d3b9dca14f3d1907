import { AccountPurgeDeps } from '../app/access/account-purge';
import { PortalVerifier } from '../app/access/portal-verifier';
import { AccountsAdminDeps } from '../app/admin/accounts-admin';
import { DeletionDeps } from '../app/admin/destination-deletion';
import { HealthAdminDeps } from '../app/admin/health-admin';
import { AdminDeps } from '../app/admin/destinations-admin';
import { OrderedKeysDeps } from '../app/admin/ordered-keys-admin';
import { ReplaysAdminDeps } from '../app/admin/replays-admin';
import { SuspensionDeps } from '../app/delivery/suspend-and-reactivate';
import { DeliveryLogHead } from '../app/destinations/delivery-log-head';
import { PortalStore } from '../ports/accounts';
import { EventTypeStore } from '../ports/destinations';
import { suspensionDeps } from './delivery-deps';
import { replaysAdminDeps } from './retry-deps';
import { Runtime } from './runtime';

/** What the admin API and an account's purge need, from a runtime. */

/** What the scheduled purge of deleted accounts needs, from a runtime. */
export function accountPurgeDeps(rt: Runtime): AccountPurgeDeps {
  return { accounts: rt.accounts, accountData: rt.accountData, clock: rt.clock, log: rt.log };
}

/** What the admin API's routes share, whoever calls (the caller and the account they act in come with each request). */
export type AdminApiDeps = AdminDeps &
  SuspensionDeps &
  ReplaysAdminDeps &
  AccountsAdminDeps &
  HealthAdminDeps &
  Pick<DeletionDeps, 'deadLetterTopic'> & {
    portals: PortalStore;
    portalAccess: PortalVerifier;
    eventTypes: Pick<EventTypeStore, 'list'>;
    logHead: DeliveryLogHead;
    counterBucketMs: number;
    timeScale: number;
  } & Pick<OrderedKeysDeps, 'orderedKeys' | 'names'>;

/** What the admin API needs, from a runtime. */
export function adminApiDeps(rt: Runtime): AdminApiDeps {
  return {
    ...suspensionDeps(rt),
    ...replaysAdminDeps(rt),
    deadLetterTopic: rt.topology.topics.deadLetter.name,
    lanes: rt.lanes,
    rateLeases: rt.rateLeases,
    addressRules: rt.addressRules,
    resolver: rt.resolver,
    topicAccess: { names: rt.names, allowedTopicsNow: (account: string) => rt.accountPolicies.allowedTopicsNow(account) },
    defaultAccountTopics: rt.config.defaultAccountTopics ?? [],
    accounts: rt.accounts,
    keys: rt.keys,
    accountData: rt.accountData,
    portals: rt.portals,
    portalAccess: rt.portalAccess,
    quotasOf: (account: string) => rt.accountPolicies.quotasOf(account),
    quotaDefaults: { publishPerSecond: rt.config.accountPublishQuota, destinations: rt.config.accountDestinationQuota },
    eventTypes: rt.eventTypes,
    logHead: rt.logHead,
    orderedKeys: rt.orderedKeys,
    names: rt.names,
    counterBucketMs: rt.counters.options.bucketMs,
    timeScale: rt.config.timeScale,
    health: rt.health,
  };
}
