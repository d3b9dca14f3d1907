import { AdminResult, badId, notFound } from '../../shared/app/admin/destinations-admin';
import { PortalRefusal } from '../../shared/app/admin/portal-admin';
import { RouteDoc } from '../../shared/app/admin/openapi';
import { Caller, seesDestination } from '../../shared/domain/account';
import { DESTINATION_ID, internalDestinationId, splitDestinationId } from '../../shared/domain/ids';
import { AdminApiDeps } from '../../shared/runtime';

/** What every admin route is, and what the routes share. */

/** What a route runs with: every admin dependency, who is calling, and the account the request is about. */
export type Ctx = AdminApiDeps & {
  caller: Caller;
  account: string;
  /** The account a replay is confined to; undefined for the admin token on the bare /replays paths (every account). */
  replayScope: string | undefined;
  /** Signs portal links and sessions (domain/portal.ts). */
  portalKey: Buffer;
  /** Where the console is, as the caller reaches this function: `<origin><mount>/console`. */
  consoleBase: string;
};

export type Route = RouteDoc & {
  pattern: RegExp;
  /** The first path parameter is an account id: a caller that does not reach it gets 404, before anything else. */
  accountParam?: boolean;
  /** Anyone may call it, without a bearer token (the portal link exchange: the link is the credential). */
  public?: boolean;
  /** `body(true)`: the body may be empty (undefined then). `query` is the parsed query string (a repeated parameter is an array). */
  run: (ctx: Ctx, params: string[], body: (optional?: boolean) => unknown, query: Record<string, unknown>) => Promise<AdminResult<unknown> | PortalRefusal>;
};

export const NOT_FOUND = { 404: 'no such destination' } as const;
export const BAD_ID = { 400: 'invalid id or body: every problem named' } as const;
export const NO_ACCOUNT = { 404: 'no such account (or not yours)' } as const;

/**
 * A destination route's id, checked, then named as Herald names it inside (the account's own
 * id, or `<account>_<id>`). A portal session narrowed to some destinations finds no other: 404,
 * exactly as for one that does not exist.
 */
export function inAccount<T>(ctx: Ctx, id: string, run: (internalId: string) => Promise<AdminResult<T>>): Promise<AdminResult<T>> {
  if (!DESTINATION_ID.test(id)) return Promise.resolve(badId(id));
  const internal = internalDestinationId(ctx.account, id);
  return seesDestination(ctx.caller, id) ? run(internal) : Promise.resolve(notFound(internal));
}

/** What a portal session narrowed to some destinations sees of a destination store: only those of its account. */
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
    update: (id, decide) => store.update(id, decide),
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
export function underAccount(route: Route): Route {
  return {
    ...route,
    path: `/accounts/{accountId}${route.path}`,
    accountParam: true,
    pattern: new RegExp(`^\\/accounts\\/([^/]+)${route.pattern.source.slice(1)}`),
    responses: { ...route.responses, ...NO_ACCOUNT },
    run: (d, [, ...params], body, query) => route.run(d, params, body, query),
  };
}
