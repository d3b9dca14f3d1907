import { badId, notFound } from '../../shared/app/admin/destinations-admin';
import { PortalRefusal } from '../../shared/app/admin/portal-admin';
import { Outcome } from '../../shared/app/support/outcome';
import { RouteDoc } from './openapi';
import { patternOf } from './route-pattern';
import { Caller, seesDestination } from '../../shared/domain/access/account';
import { destinationSpecSchema } from '../../shared/domain/destinations/destination';
import { DESTINATION_ID, internalDestinationId, splitDestinationId } from '../../shared/domain/ids';
import { ExchangeLimiter } from '../../shared/domain/access/portal-exchange-limit';
import { NarrowedWrite, narrowedWrite } from '../../shared/domain/access/portal-narrowing';
import { AdminApiDeps } from '../../shared/runtime/admin-deps';

/** What every admin route is, and what the routes share. */

/** What a route runs with: every admin dependency, who is calling, and the account the request is about. */
export type Ctx = AdminApiDeps & {
  caller: Caller;
  account: string;
  /** The account a replay is confined to; undefined for the admin token on the bare /replays paths (every account). */
  replayScope: string | undefined;
  /** Signs portal links and sessions (domain/access/portal.ts). */
  portalKey: Buffer;
  /** This instance's buckets for the public portal link exchange. */
  portalExchanges: ExchangeLimiter;
  /** Where the console is served to users (HERALD_CONSOLE_URL, else HERALD_PUSH_BASE_URL + /admin/console); undefined when neither is set. */
  consoleUrl: string | undefined;
};

/** What a route answers: an outcome of the app layer, which index.ts turns into its status (functions/http.ts). */
export type AdminResult = Outcome<unknown> | PortalRefusal;

/** A route as written: its pattern is derived from its path (matchable). */
export type RouteSpec = RouteDoc & {
  /** The first path parameter is an account id: a caller that does not reach it gets 404, before anything else. */
  accountParam?: boolean;
  /** Anyone may call it, without a bearer token (the portal link exchange: the link is the credential). */
  public?: boolean;
  /** The answer as CSV, sent instead of JSON when the request's Accept names text/csv. */
  csv?: (body: unknown) => string;
  /** `body(true)`: the body may be empty (undefined then). `query` is the parsed query string (a repeated parameter is an array). */
  run: (ctx: Ctx, params: string[], body: (optional?: boolean) => unknown, query: Record<string, unknown>) => Promise<AdminResult>;
};

/** A route as the admin function matches requests against it. */
export type Route = RouteSpec & { pattern: RegExp };

export function matchable(spec: RouteSpec): Route {
  return { ...spec, pattern: patternOf(spec.path) };
}

export const NOT_FOUND = { 404: 'no such destination' } as const;
export const BAD_ID = { 400: 'invalid id or body: every problem named' } as const;
export const NO_ACCOUNT = { 404: 'no such account (or not yours)' } as const;

/**
 * A destination route's id, checked, then named as Herald names it inside (the account's own
 * id, or `<account>_<id>`). A portal session narrowed to some destinations finds no other: 404,
 * exactly as for one that does not exist.
 */
export function inAccount<T>(ctx: Ctx, id: string, run: (internalId: string) => Promise<Outcome<T>>): Promise<Outcome<T>> {
  if (!DESTINATION_ID.test(id)) return Promise.resolve(badId(id));
  const internal = internalDestinationId(ctx.account, id);
  return seesDestination(ctx.caller, id) ? run(internal) : Promise.resolve(notFound(internal));
}

/** A narrowed portal session's write refused inside the store's transaction (narrowed, below): the destination changed since the route looked. */
class NarrowedWriteRefused extends Error {
  constructor(readonly refusal: Extract<NarrowedWrite, { ok: false }>) {
    super(refusal.error);
  }
}

const refusedWrite = (refusal: Extract<NarrowedWrite, { ok: false }>): Outcome<never> => ({ kind: 'forbidden', body: { error: refusal.error, issues: refusal.issues } });

/**
 * PUT of destination `id` (internally `internalId`): a narrowed portal session may not create
 * one nor widen its eventTypes (domain/access/portal-narrowing.ts). Looked at first, so nothing (a
 * dedicated lane) is made for a write that is refused; and again inside the write (narrowed's
 * store), so a change in between cannot slip through. A spec that does not parse is left to
 * `put`, which names its problems.
 */
export async function narrowedPut<T>(ctx: Ctx, id: string, internalId: string, spec: unknown, put: (spec: unknown) => Promise<Outcome<T>>): Promise<Outcome<T>> {
  const parsed = destinationSpecSchema.safeParse(spec);
  if (parsed.success && ctx.caller.kind === 'portal' && ctx.caller.destinations !== undefined) {
    const verdict = narrowedWrite(ctx.caller, id, await ctx.destinations.get(internalId), parsed.data.eventTypes ?? []);
    if (!verdict.ok) return refusedWrite(verdict);
  }
  try {
    return await put(spec);
  } catch (e) {
    if (e instanceof NarrowedWriteRefused) return refusedWrite(e.refusal);
    throw e;
  }
}

/**
 * What a portal session narrowed to some destinations sees of a destination store: only those
 * of its account; and every write to one is held to narrowedWrite, in the write's own transaction.
 */
export function narrowed(ctx: Ctx): Ctx {
  const { caller } = ctx;
  if (caller.kind !== 'portal' || caller.destinations === undefined) return ctx;
  const hidden = (id: string) => {
    const own = splitDestinationId(id);
    return own.account === caller.account && !seesDestination(caller, own.id);
  };
  const store = ctx.destinations;
  // Methods named one by one: the store is a class instance, whose methods a spread would not copy.
  const destinations: typeof store = {
    get: async (id) => (hidden(id) ? undefined : store.get(id)),
    list: async () => (await store.list()).filter((d) => !hidden(d.id)),
    listAccount: async (account) => (await store.listAccount(account)).filter((d) => !hidden(d.id)),
    // Only a create counts (the quota), and a narrowed session creates nothing (inAccount: 404).
    countAccount: (account) => store.countAccount(account),
    put: (d) => store.put(d),
    delete: (id) => store.delete(id),
    update: (id, decide) =>
      store.update(id, (current) => {
        const next = decide(current);
        const verdict = next === undefined ? undefined : narrowedWrite(caller, splitDestinationId(id).id, current, next.eventTypes);
        if (verdict && !verdict.ok) throw new NarrowedWriteRefused(verdict);
        return next;
      }),
  };
  return { ...ctx, destinations };
}

/** The destinations a narrowed portal session sees, or undefined for every one of the account's. */
export function portalDestinations(caller: Caller): readonly string[] | undefined {
  return caller.kind === 'portal' ? caller.destinations : undefined;
}

/** Whether a delivery id is of a destination the caller sees (an id without a destination is judged by getDelivery: 400). */
export function deliveryInSight(caller: Caller, id: string): boolean {
  const dot = id.indexOf('.');
  return dot <= 0 || seesDestination(caller, splitDestinationId(id.slice(0, dot)).id);
}

/** A narrowed portal session's replays: those of one of its destinations only. */
export function replayInSight(caller: Caller, request: { destination?: string }): boolean {
  const only = portalDestinations(caller);
  return only === undefined || (request.destination !== undefined && only.includes(request.destination));
}

/** An account-scoped route again under `/accounts/{accountId}`: the account comes from the path. */
export function underAccount(route: RouteSpec): RouteSpec {
  return {
    ...route,
    path: `/accounts/{accountId}${route.path}`,
    accountParam: true,
    responses: { ...route.responses, ...NO_ACCOUNT },
    run: (d, [, ...params], body, query) => route.run(d, params, body, query),
  };
}
