import type { AccountQuotas } from '../../domain/access/account';
import type { AddressRules } from '../../domain/access/address-policy';
import { INTERNAL_DESTINATION_ID, splitDestinationId } from '../../domain/ids';
import { applySpec, rateBoundsOf, destinationSpecSchema, Destination, DestinationView, ResetSetting, resetSettings, viewOf } from '../../domain/destinations/destination';
import { issuesFromZod } from '../../domain/events/event';
import { LastError } from '../../domain/retry/delivery';
import { topicRefusal } from '../../domain/access/topic-allow-list';
import { TopologyNames } from '../../topology';
import { Clock, Logger } from '../../ports/clock';
import { DeliveryStore } from '../../ports/deliveries';
import { DestinationStore } from '../../ports/destinations';
import { HostResolver } from '../../ports/http';
import { LaneNotDeclaredError, LaneProvisioner } from '../../ports/messaging';
import { RateLeaseStore } from '../../ports/rate';
import { checkWebhookTarget } from '../destinations/target-guard';
import { clampRate, INITIAL_RATE } from '../../domain/rate/rate-doc';
import { DestinationDirectory } from '../destinations/destination-directory';
import { DestinationCounters } from '../destinations/destination-counters';
import { Outcome } from '../support/outcome';

export interface AdminDeps {
  destinations: DestinationStore;
  deliveries: DeliveryStore;
  directory: DestinationDirectory;
  lanes: LaneProvisioner;
  counters: DestinationCounters;
  rateLeases: RateLeaseStore;
  clock: Clock;
  log: Logger;
  /** The SSRF rules a webhook URL is held to at registration. */
  addressRules: AddressRules;
  /** DNS for the SSRF check of webhook URLs at registration. */
  resolver: HostResolver;
  /**
   * What a topic destination is checked against: its account's allowedTopics, read past the
   * cache (a list the operator just changed applies at once), and Herald's own topic names.
   * Absent: no topic is allowed.
   */
  topicAccess?: { names: TopologyNames; allowedTopicsNow(account: string): Promise<readonly string[]> };
  /** The quotas that apply to an account (absent: none). */
  quotasOf?: (account: string) => Promise<AccountQuotas>;
}

/** Invalid: an id that cannot be a destination's (shared by every admin route under /destinations/{id}). */
export const badId = (id: string): Outcome<never> => ({
  kind: 'invalid',
  body: { error: `invalid destination id ${JSON.stringify(id)}`, issues: [{ path: 'id', message: 'use 1-63 lowercase letters, digits and hyphens, starting and ending with a letter or digit' }] },
});

/** Not found: a destination that does not exist. */
export const notFound = (id: string): Outcome<never> => ({
  kind: 'not-found',
  body: { error: `no destination ${JSON.stringify(id)}; list them with GET /admin/destinations` },
});

export async function putDestination(deps: AdminDeps, id: string, body: unknown): Promise<Outcome<DestinationView & { secret?: string; reset?: ResetSetting[] }>> {
  if (!INTERNAL_DESTINATION_ID.test(id)) return badId(id);
  const parsed = destinationSpecSchema.safeParse(body);
  if (!parsed.success) return { kind: 'invalid', body: { error: 'invalid destination spec', issues: issuesFromZod(parsed.error) } };
  const spec = parsed.data;
  if (spec.topic !== undefined) {
    const refused = await topicProblem(deps, id, spec.topic);
    if (refused) return refused;
  }
  const urlProblem = spec.url !== undefined ? await checkWebhookTarget(spec.url, deps.addressRules, deps.resolver) : undefined;
  if (urlProblem) {
    const error = urlProblem.kind === 'invalid' ? 'invalid destination spec' : 'the destination URL could not be checked';
    return { kind: urlProblem.kind, body: { error, issues: [{ path: 'url', message: urlProblem.message }] } };
  }
  // The token endpoint is reached from Herald's network as the webhook is: the same SSRF guard.
  const tokenUrl = spec.auth?.type === 'oauth2ClientCredentials' ? spec.auth.tokenUrl : undefined;
  const tokenProblem = tokenUrl !== undefined ? await checkWebhookTarget(tokenUrl, deps.addressRules, deps.resolver) : undefined;
  if (tokenProblem) {
    const error = tokenProblem.kind === 'invalid' ? 'invalid destination spec' : 'the token URL could not be checked';
    return { kind: tokenProblem.kind, body: { error, issues: [{ path: 'auth.tokenUrl', message: tokenProblem.message.replace(/^url\b/, 'auth.tokenUrl') }] } };
  }

  const overQuota = await destinationQuotaProblem(deps, id);
  if (overQuota) return { kind: 'conflict', body: { error: overQuota } };

  // A dedicated lane exists before the destination is visible to routing, so no event finds it missing.
  if (spec.lane === 'dedicated') {
    try {
      await deps.lanes.ensureLane(id);
    } catch (e) {
      if (e instanceof LaneNotDeclaredError) return { kind: 'conflict', body: { error: e.message, issues: [{ path: 'lane', message: 'no dedicated lane is declared for this destination' }] } };
      throw e;
    }
  }
  // Read and written in one transaction: a suspension written meanwhile is kept, not overwritten.
  const now = deps.clock.now();
  let created = false;
  let reset: ResetSetting[] = [];
  const destination = (await deps.destinations.update(id, (existing) => {
    created = existing === undefined;
    const next = applySpec(id, spec, existing, now);
    reset = resetSettings(existing, next, spec);
    return next;
  }))!;
  deps.directory.changed(id, destination);
  deps.log.info(created ? 'destination created' : 'destination updated', { destinationId: id, ...(destination.topic !== undefined ? { topic: destination.topic } : {}) });
  // The secret is shown once, when Herald generated or received it; never on a plain read.
  const showSecret = created || spec.secret !== undefined;
  const view = { ...viewOf(destination, now), ...(reset.length > 0 ? { reset } : {}) };
  return { kind: created ? 'created' : 'ok', body: showSecret ? { ...view, secret: destination.secret } : view };
}

/** The account's destinations, and no other account's (DestinationStore.listAccount). */
export function destinationsOfAccount(store: Pick<DestinationStore, 'listAccount'>, account: string): Promise<Destination[]> {
  return store.listAccount(account);
}

/**
 * A new destination past its account's quota: why, else undefined. Checked before the write,
 * so two creates at the same instant may pass it by one each; replacing one never counts.
 */
async function destinationQuotaProblem(deps: AdminDeps, id: string): Promise<string | undefined> {
  const { account } = splitDestinationId(id);
  const limit = deps.quotasOf ? (await deps.quotasOf(account)).destinations : undefined;
  if (limit === undefined || (await deps.destinations.get(id))) return undefined;
  const count = await deps.destinations.countAccount(account);
  if (count < limit) return undefined;
  return `account ${account} has ${count} destinations, its quota (${limit}): delete one it no longer needs, or ask the operator to raise quotas.destinations (PATCH /admin/accounts/${account})`;
}

/** The rolling hour of a destination, as `GET /admin/destinations/{id}` shows it. */
export interface DestinationStats {
  attempts1h: number;
  /** successes / (successes + failures) in the hour; absent with nothing counted. */
  successRate1h?: number;
  /** Newest first. */
  lastErrors: LastError[];
  /** The adaptive delivery rate now, events per second, and its bounds. */
  rate: number;
  rateBounds: { min: number; max: number };
  /** A Retry-After pause in force, until then. */
  pausedUntil?: string;
  /** Events of its eventTypes its filter took, dropped, and dropped because it erred, in the hour (0 without a filter). */
  filterPassed1h: number;
  filtered1h: number;
  filterErrors1h: number;
}

export async function getDestination(deps: AdminDeps, id: string): Promise<Outcome<DestinationView & { stats: DestinationStats }>> {
  if (!INTERNAL_DESTINATION_ID.test(id)) return badId(id);
  const destination = await deps.destinations.get(id);
  if (!destination) return notFound(id);
  const [hour, control] = await Promise.all([deps.counters.window(id), deps.rateLeases.peek(id)]);
  const bounds = rateBoundsOf(destination);
  const paused = control?.state.pausedUntil !== undefined && control.state.pausedUntil > deps.clock.now().getTime() ? { pausedUntil: new Date(control.state.pausedUntil).toISOString() } : {};
  const stats: DestinationStats = {
    attempts1h: hour.attempts,
    ...(hour.successRate === undefined ? {} : { successRate1h: hour.successRate }),
    lastErrors: hour.recentErrors,
    rate: Math.round(clampRate(control?.state.rate ?? INITIAL_RATE, bounds) * 10) / 10,
    rateBounds: { min: bounds.minPerSecond, max: bounds.maxPerSecond },
    filterPassed1h: hour.settled?.filterPassed ?? 0,
    filtered1h: hour.settled?.filtered ?? 0,
    filterErrors1h: hour.settled?.filterErrors ?? 0,
    ...paused,
  };
  return { kind: 'ok', body: { ...viewOf(destination, deps.clock.now()), stats } };
}

/**
 * A topic destination's topic, refused: invalid for a name like Herald's own (no list can
 * allow it), forbidden for one its account may not publish to, naming what the operator must do.
 */
async function topicProblem(deps: AdminDeps, id: string, topic: string): Promise<Outcome<never> | undefined> {
  const { account } = splitDestinationId(id);
  const names = deps.topicAccess?.names ?? { prefix: 'herald' };
  const allowed = deps.topicAccess ? await deps.topicAccess.allowedTopicsNow(account) : [];
  const refusal = topicRefusal(topic, account, allowed, names);
  if (refusal === undefined) return undefined;
  const issues = [{ path: 'topic', message: refusal.message }];
  return refusal.kind === 'own' ? { kind: 'invalid', body: { error: 'invalid destination spec', issues } } : { kind: 'forbidden', body: { error: refusal.message, issues } };
}

/** The destinations of one account. */
export async function listDestinations(deps: AdminDeps, account: string): Promise<Outcome<{ destinations: DestinationView[] }>> {
  const now = deps.clock.now();
  const views = (await destinationsOfAccount(deps.destinations, account)).map((d) => viewOf(d, now));
  return { kind: 'ok', body: { destinations: views } };
}
