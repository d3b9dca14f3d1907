import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { extname, join, resolve, sep } from 'node:path';
import type { Response } from 'express';
import { getDelivery, listDeliveries } from '../shared/app/deliveries-admin';
import { AdminDeps, AdminResult, badId, getDestination, listDestinations, notFound, putDestination } from '../shared/app/destinations-admin';
import { deleteDestination, deleteDestinationQuerySchema, DeletionDeps } from '../shared/app/destination-deletion';
import {
  accountListQuerySchema,
  AccountsAdminDeps,
  createAccount,
  createKey,
  deleteAccount,
  findAccount,
  getAccount,
  getSettings,
  listAccounts,
  listKeys,
  noAccount,
  revokeKey,
  setSettings,
  updateAccount,
} from '../shared/app/accounts-admin';
import { accountDeliveriesQuerySchema, accountRedeliverSchema, listAccountDeliveries, postAccountRedeliver } from '../shared/app/account-deliveries-admin';
import { accountCreateSchema, accountPatchSchema, accountSettingsSchema, actorOf, Caller, DEFAULT_ACCOUNT, FAILURE_POLICY_SETTING, hasScope, keyCreateSchema, OPERATOR, scopeFor, seesDestination } from '../shared/domain/account';
import { portalKeyOf, portalLinkSchema, portalScopes, portalSecretOf, portalSessionSchema, SESSION_PREFIX, verifyPortalToken } from '../shared/domain/portal';
import { endPortalSessions, exchangePortalLink, listPortalLinks, listPortalSessions, mintPortalLink, PortalRefusal, revokePortalLink, revokePortalSession } from '../shared/app/portal-admin';
import { PortalVerifier } from '../shared/app/portal-verifier';
import { getAccountStats, statsQuerySchema } from '../shared/app/stats-admin';
import { listEventTypes } from '../shared/app/event-types-admin';
import { EventTypeStore, PortalStore } from '../shared/ports';
import { STORE_BUSY_RETRY_AFTER_S, storeBusyMessage } from '../shared/app/store-busy';
import { DESTINATION_ID, internalDestinationId, splitDestinationId } from '../shared/domain/ids';
import { keyCaller } from '../shared/app/key-verifier';
import { bearerOf, matchesDigest } from '../shared/app/push-auth';
import { Runtime } from '../shared/runtime';
import { postRotateSecret } from '../shared/app/secret-rotation-admin';
import { parseJsonBytes } from '../shared/domain/json-body';
import { SuspensionDeps } from '../shared/app/suspension';
import { postReactivate, postRedeliver, postSuspend, suspendBodySchema } from '../shared/app/suspension-admin';
import { getReplay, listReplays, postReplay, replayListQuerySchema, ReplaysAdminDeps } from '../shared/app/replays-admin';
import { openApiDocument, RouteDoc } from '../shared/app/openapi';
import { deliveriesQuerySchema } from '../shared/app/deliveries-admin';
import { redeliverBodySchema } from '../shared/app/suspension-admin';
import { destinationSpecSchema } from '../shared/domain/destination';
import { rotateSecretSchema } from '../shared/domain/secret-rotation';
import { replayRequestSchema } from '../shared/domain/replay';

/** Bodies PUT /admin/destinations/{id} accepts (the OpenAPI examples; a test holds them to the schema). */
const DESTINATION_EXAMPLES: unknown[] = [
  { url: 'https://hooks.example.com/herald', eventTypes: ['com.example.*'] },
  { topic: 'projects/acme-audit/topics/audit', policy: 'eventarc', failureMode: 'queue' },
  {
    url: 'https://hooks.example.com/orders',
    policy: { retryOn: { statuses: ['5xx', 408], timeouts: true, networkErrors: true }, backoff: { kind: 'exponential', initialMs: 10000, factor: 2, capMs: 300000 }, maxAttempts: 5 },
    rate: { max: 20 },
    technicalEmail: 'oncall@example.com',
  },
];
import { replaysAdminDeps, suspensionDeps } from '../shared/runtime';
import { guarded, HeraldRequest, rawBodyOf, sendJson } from './http';
import { runtime } from './runtime';

/** What a route runs with: every admin dependency, who is calling, and the account the request is about. */
type Ctx = AdminDeps & SuspensionDeps & ReplaysAdminDeps & AccountsAdminDeps & Pick<DeletionDeps, 'deadLetterTopic'> & {
  caller: Caller;
  account: string;
  /** The account a replay is confined to; undefined for the admin token on the bare /replays paths (every account). */
  replayScope: string | undefined;
  /** Signs portal links and sessions (domain/portal.ts). */
  portalKey: Buffer;
  portals: PortalStore;
  portalAccess: PortalVerifier;
  /** Where the console is, as the caller reaches this function: `<origin><mount>/console`. */
  consoleBase: string;
  eventTypes: Pick<EventTypeStore, 'list'>;
  rateBucketMs: number;
  timeScale: number;
};

type Route = RouteDoc & {
  pattern: RegExp;
  /** The first path parameter is an account id: a caller that does not reach it gets 404, before anything else. */
  accountParam?: boolean;
  /** Anyone may call it, without a bearer token (the portal link exchange: the link is the credential). */
  public?: boolean;
  /** `body(true)`: the body may be empty (undefined then). `query` is the parsed query string (a repeated parameter is an array). */
  run: (ctx: Ctx, params: string[], body: (optional?: boolean) => unknown, query: Record<string, unknown>) => Promise<AdminResult<unknown> | PortalRefusal>;
};

const NOT_FOUND = { 404: 'no such destination' } as const;
const BAD_ID = { 400: 'invalid id or body: every problem named' } as const;
const NO_ACCOUNT = { 404: 'no such account (or not yours)' } as const;

/**
 * A destination route's id, checked, then named as Herald names it inside (the account's own
 * id, or `<account>_<id>`). A portal session narrowed to some destinations finds no other: 404,
 * exactly as for one that does not exist.
 */
function inAccount<T>(ctx: Ctx, id: string, run: (internalId: string) => Promise<AdminResult<T>>): Promise<AdminResult<T>> {
  if (!DESTINATION_ID.test(id)) return Promise.resolve(badId(id));
  const internal = internalDestinationId(ctx.account, id);
  return seesDestination(ctx.caller, id) ? run(internal) : Promise.resolve(notFound(internal));
}

/** What a portal session narrowed to some destinations sees of a destination store: only those of its account. */
function narrowed(ctx: Ctx): Ctx {
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
    put: (d) => store.put(d),
    delete: (id) => store.delete(id),
    update: (id, decide) => store.update(id, decide),
  };
  return { ...ctx, destinations };
}

/** The destinations a narrowed portal session sees, or undefined for every one of the account's. */
function portalDestinations(caller: Caller): readonly string[] | undefined {
  return caller.kind === 'portal' ? caller.destinations : undefined;
}

/** Whether a delivery id is of a destination the caller sees (an id without a destination is judged by getDelivery: 400). */
function deliveryInSight(caller: Caller, id: string): boolean {
  const dot = id.indexOf('.');
  return dot <= 0 || seesDestination(caller, splitDestinationId(id.slice(0, dot)).id);
}

/** A narrowed portal session's replays: those of one of its destinations only. */
function replayInSight(caller: Caller, request: { destination?: string }): boolean {
  const only = portalDestinations(caller);
  return only === undefined || (request.destination !== undefined && only.includes(request.destination));
}

/**
 * Destinations and what hangs off them, in the caller's account: written once and served
 * both as `/destinations/…` (a key's own account; `default` for the admin token) and as
 * `/accounts/{accountId}/destinations/…`.
 */
const ACCOUNT_SCOPED: Route[] = [
  {
    method: 'GET',
    path: '/destinations',
    summary: "List the account's destinations",
    responses: { 200: 'the destinations, with status and stats' },
    pattern: /^\/destinations\/?$/,
    run: (d) => listDestinations(d, d.account),
  },
  {
    method: 'PUT',
    path: '/destinations/{id}',
    summary: 'Create or replace a destination (201 shows its signing secret, once)',
    body: { schema: destinationSpecSchema, required: true, examples: DESTINATION_EXAMPLES },
    responses: { 200: 'replaced', 201: 'created, with its whsec_ secret', ...BAD_ID },
    pattern: /^\/destinations\/([^/]+)$/,
    run: (d, [id], body) => inAccount(d, id!, (iid) => putDestination(d, iid, body())),
  },
  { method: 'GET', path: '/destinations/{id}', summary: 'A destination: spec, status, suspension, stats, rate', responses: { 200: 'the destination', ...BAD_ID, ...NOT_FOUND }, pattern: /^\/destinations\/([^/]+)$/, run: (d, [id]) => inAccount(d, id!, (iid) => getDestination(d, iid)) },
  {
    method: 'DELETE',
    path: '/destinations/{id}',
    summary: 'Delete a destination and its lane; refused while it has deliveries to send, unless deliveries=dead makes them DEAD with dead letters',
    query: deleteDestinationQuerySchema,
    responses: {
      204: 'deleted: nothing was left to send',
      200: 'deleted with deliveries=dead: how many PENDING, IN_FLIGHT and QUEUED deliveries became DEAD (byStatus), each with its dead letter',
      ...BAD_ID,
      ...NOT_FOUND,
      409: 'it still has PENDING, IN_FLIGHT or QUEUED deliveries: how many (deliveries), and the ways out',
    },
    pattern: /^\/destinations\/([^/]+)$/,
    run: (d, [id], _body, query) => inAccount(d, id!, (iid) => deleteDestination(d, iid, query)),
  },
  {
    method: 'POST',
    path: '/destinations/{id}/reactivate',
    summary: 'Reactivate a suspended destination; its QUEUED deliveries flow again',
    responses: { 200: 'reactivated, with how many deliveries were redelivered', ...BAD_ID, ...NOT_FOUND, 409: 'not suspended' },
    pattern: /^\/destinations\/([^/]+)\/reactivate\/?$/,
    run: (d, [id]) => inAccount(d, id!, (iid) => postReactivate(d, iid)),
  },
  {
    method: 'POST',
    path: '/destinations/{id}/suspend',
    summary: 'Suspend an active destination by hand: nothing is sent to it, its events are QUEUED until it is reactivated',
    body: { schema: suspendBodySchema, required: false, examples: [{}, { reason: 'receiver maintenance until 14:00 UTC' }] },
    responses: { 200: 'suspended: the destination, its suspension with cause manual and who did it (by)', ...BAD_ID, ...NOT_FOUND, 409: 'already suspended' },
    pattern: /^\/destinations\/([^/]+)\/suspend\/?$/,
    run: (d, [id], body) => inAccount(d, id!, (iid) => postSuspend(d, iid, body(true), actorOf(d.caller))),
  },
  {
    method: 'POST',
    path: '/destinations/{id}/redeliver',
    summary: 'Send QUEUED (default) or DEAD deliveries again',
    body: { schema: redeliverBodySchema, required: false, examples: [{}, { status: 'queued' }, { status: 'dead' }] },
    responses: { 202: 'those deliveries are PENDING again', ...BAD_ID, ...NOT_FOUND, 409: 'the destination is suspended: reactivate it' },
    pattern: /^\/destinations\/([^/]+)\/redeliver\/?$/,
    run: (d, [id], body) => inAccount(d, id!, (iid) => postRedeliver(d, iid, body(true))),
  },
  {
    method: 'POST',
    path: '/destinations/{id}/rotate-secret',
    summary: 'Rotate the signing secret; the old one keeps signing for the grace period',
    body: { schema: rotateSecretSchema, required: false, examples: [{}, { graceSeconds: 3600 }, { secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', graceSeconds: 0 }] },
    responses: { 200: 'the destination with its new secret (shown once)', ...BAD_ID, ...NOT_FOUND, 409: 'a Pub/Sub-topic destination signs nothing' },
    pattern: /^\/destinations\/([^/]+)\/rotate-secret\/?$/,
    run: (d, [id], body) => inAccount(d, id!, (iid) => postRotateSecret(d, iid, body(true))),
  },
  {
    method: 'GET',
    path: '/destinations/{id}/deliveries',
    summary: "A destination's deliveries, a page at a time",
    query: deliveriesQuerySchema,
    responses: { 200: 'deliveries and nextCursor', ...BAD_ID, ...NOT_FOUND },
    pattern: /^\/destinations\/([^/]+)\/deliveries\/?$/,
    run: (d, [id], _body, query) => inAccount(d, id!, (iid) => listDeliveries(d, iid, query)),
  },
  {
    method: 'GET',
    path: '/deliveries',
    summary: "The account's QUEUED (default) or DEAD deliveries, to one receiver URL if given, each with its event (seed 003)",
    query: accountDeliveriesQuerySchema,
    responses: { 200: 'deliveries with their events, and nextCursor', 400: 'invalid query: every problem named' },
    pattern: /^\/deliveries\/?$/,
    run: (d, _params, _body, query) => listAccountDeliveries(d, d.account, query),
  },
  {
    method: 'POST',
    path: '/deliveries/redeliver',
    summary: "Send the account's QUEUED (default) or DEAD deliveries again, to one receiver URL if given (seed 003), or the deliveries named in ids",
    body: { schema: accountRedeliverSchema, required: false, examples: [{}, { status: 'queued', url: 'https://events.myservice.com/receiver' }, { ids: ['acme_orders.0b6f2c1e9a4d7f3b5c8e1a2d4f6b8c0e'] }] },
    responses: { 202: 'how many are PENDING again, per destination (or, with ids, per id); suspended destinations named and left queued', 400: 'invalid body' },
    pattern: /^\/deliveries\/redeliver\/?$/,
    run: (d, _params, body) => postAccountRedeliver(d, d.account, body(true), (id) => seesDestination(d.caller, id)),
  },
  {
    method: 'GET',
    path: '/deliveries/{id}',
    summary: 'One delivery record',
    responses: { 200: 'the delivery', ...BAD_ID, 404: 'no such delivery' },
    pattern: /^\/deliveries\/([^/]+)$/,
    run: (d, [id]) => (deliveryInSight(d.caller, id!) ? getDelivery(d, id!, d.account) : Promise.resolve({ status: 404, body: { error: `no delivery ${JSON.stringify(id)}; list a destination's deliveries with GET /admin/destinations/{id}/deliveries` } })),
  },
  {
    method: 'GET',
    path: '/stats',
    summary: "The account's attempts over the last hour or day (the console's overview), or one destination's (`destination`), from counters: never a scan",
    query: statsQuerySchema,
    responses: { 200: 'series of attempts, successes, failures and latency p50/p99; success rate; latency p50/p99 over the window; queued and dead counts', 400: 'invalid query', ...NOT_FOUND },
    pattern: /^\/stats\/?$/,
    run: (d, _params, _body, query) => getAccountStats(d, d.caller, d.account, query),
  },
  {
    method: 'GET',
    path: '/event-types',
    summary: "The event types the account published, each with its latest event as a sample and the destinations that take it",
    responses: { 200: 'event types, by type: type, lastSeenAt, sample (CloudEvents JSON, cut at 8 KB), destinations' },
    pattern: /^\/event-types\/?$/,
    // A narrowed portal session sees only the types one of its destinations takes.
    run: (d) => listEventTypes(d, d.account, portalDestinations(d.caller) !== undefined),
  },
];

/** Accounts, their settings (seed 003) and keys: the account id is in the path. */
const ACCOUNT_ROUTES: Route[] = [
  {
    method: 'POST',
    path: '/accounts',
    summary: 'Create an account (operator only)',
    body: { schema: accountCreateSchema, required: true, examples: [{ name: 'Acme Corp' }, { id: 'acme', name: 'Acme Corp', technicalEmail: 'ops@acme.example' }] },
    responses: { 201: 'the account', 400: 'invalid body', 403: 'an account key cannot', 409: 'the id is taken, or was a deleted account\'s (never reused)' },
    pattern: /^\/accounts\/?$/,
    run: (d, _params, body) => createAccount(d, d.caller, body()),
  },
  { method: 'GET', path: '/accounts', summary: 'List accounts, a page at a time (a key sees its own)', query: accountListQuerySchema, responses: { 200: 'accounts and nextCursor', 400: 'invalid query' }, pattern: /^\/accounts\/?$/, run: (d, _params, _body, query) => listAccounts(d, d.caller, query) },
  { method: 'GET', path: '/accounts/{accountId}', summary: 'An account', accountParam: true, responses: { 200: 'the account', ...NO_ACCOUNT }, pattern: /^\/accounts\/([^/]+)$/, run: (d, [id]) => getAccount(d, d.caller, id!) },
  {
    method: 'PATCH',
    path: '/accounts/{accountId}',
    summary: "Change an account's name or technical email (operator only)",
    accountParam: true,
    body: { schema: accountPatchSchema, required: true, examples: [{ name: 'Acme Inc' }, { technicalEmail: null }] },
    responses: { 200: 'the account', 400: 'invalid body', 403: 'an account key cannot', ...NO_ACCOUNT },
    pattern: /^\/accounts\/([^/]+)$/,
    run: (d, [id], body) => updateAccount(d, d.caller, id!, body()),
  },
  { method: 'DELETE', path: '/accounts/{accountId}', summary: 'Delete an account without destinations, with everything stored under it: keys, deliveries, samples, counters, replays (operator only; its id is never reused)', accountParam: true, responses: { 204: 'deleted', 403: 'an account key cannot', ...NO_ACCOUNT, 409: 'it still has destinations, or it is default' }, pattern: /^\/accounts\/([^/]+)$/, run: (d, [id]) => deleteAccount(d, d.caller, id!) },
  { method: 'GET', path: '/accounts/{accountId}/settings', summary: "The account's settings (seed 003)", accountParam: true, responses: { 200: 'the settings; none set means retry', ...NO_ACCOUNT }, pattern: /^\/accounts\/([^/]+)\/settings\/?$/, run: (d, [id]) => getSettings(d, d.caller, id!) },
  ...(['POST', 'PATCH'] as const).map(
    (method): Route => ({
      method,
      path: '/accounts/{accountId}/settings',
      summary: method === 'POST' ? 'Set the settings (seed 003): what is left out returns to its default' : 'Change the settings named (seed 003)',
      accountParam: true,
      body: { schema: accountSettingsSchema, required: true, examples: [{ [FAILURE_POLICY_SETTING]: 'retry' }, { [FAILURE_POLICY_SETTING]: 'queue' }] },
      responses: { 200: 'the settings', 400: 'invalid body', ...NO_ACCOUNT },
      pattern: /^\/accounts\/([^/]+)\/settings\/?$/,
      run: (d, [id], body) => setSettings(d, d.caller, id!, body(), method === 'POST' ? 'replace' : 'merge'),
    }),
  ),
  {
    method: 'POST',
    path: '/accounts/{accountId}/keys',
    summary: 'Create an account key (shown once)',
    accountParam: true,
    body: { schema: keyCreateSchema(new Date(0)), required: true, examples: [{ name: 'ci' }, { name: 'publisher', scopes: ['publish'], expiresAt: '2099-01-01T00:00:00Z' }] },
    responses: { 201: 'the key record and the key itself, this once', 400: 'invalid body', 403: 'a key granting a scope it lacks, or an expiry after its own (the scope or expiry named)', ...NO_ACCOUNT },
    pattern: /^\/accounts\/([^/]+)\/keys\/?$/,
    run: (d, [id], body) => createKey(d, d.caller, id!, body()),
  },
  { method: 'GET', path: '/accounts/{accountId}/keys', summary: "The account's keys (never the keys themselves)", accountParam: true, responses: { 200: 'keys', ...NO_ACCOUNT }, pattern: /^\/accounts\/([^/]+)\/keys\/?$/, run: (d, [id]) => listKeys(d, d.caller, id!) },
  {
    method: 'POST',
    path: '/accounts/{accountId}/portal-links',
    summary: 'Mint a customer portal link for the account: signed, short-lived, the token in the URL fragment (docs/console.md)',
    accountParam: true,
    body: { schema: portalLinkSchema, required: true, examples: [{ ttlSeconds: 3600 }, { ttlSeconds: 900, readOnly: true, destinations: ['orders'], returnUrl: 'https://app.example.com/settings/webhooks' }] },
    responses: { 201: 'the link ({"id", "url", "expiresAt"}); revoke it with DELETE …/portal-links/{linkId}', 400: 'invalid body: every problem named', 403: 'a portal session cannot', ...NO_ACCOUNT },
    pattern: /^\/accounts\/([^/]+)\/portal-links\/?$/,
    run: (d, [id], body) => mintPortalLink(d, d.caller, id!, body(), d.consoleBase),
  },
  {
    method: 'GET',
    path: '/accounts/{accountId}/portal-links',
    summary: "The account's live portal links, newest first, each with its live sessions (a portal session cannot)",
    accountParam: true,
    responses: { 200: 'links: id, mintedBy (admin or a key id), readOnly, destinations, createdAt, expiresAt, sessions', 403: 'a portal session cannot', ...NO_ACCOUNT },
    pattern: /^\/accounts\/([^/]+)\/portal-links\/?$/,
    run: (d, [id]) => listPortalLinks(d, d.caller, id!),
  },
  {
    method: 'DELETE',
    path: '/accounts/{accountId}/portal-links/{linkId}',
    summary: 'Revoke a portal link and every session opened from it: refused everywhere within 5 s',
    accountParam: true,
    responses: { 204: 'revoked (also when it already was)', 403: 'a portal session cannot', 404: 'no such account or link' },
    pattern: /^\/accounts\/([^/]+)\/portal-links\/([^/]+)$/,
    run: (d, [id, linkId]) => revokePortalLink(d, d.caller, id!, linkId!),
  },
  {
    method: 'GET',
    path: '/accounts/{accountId}/portal-sessions',
    summary: "The account's live portal sessions, newest first, each with its link's rights (a portal session cannot)",
    accountParam: true,
    responses: { 200: 'sessions: id, linkId, mintedBy, readOnly, destinations, createdAt, expiresAt', 403: 'a portal session cannot', ...NO_ACCOUNT },
    pattern: /^\/accounts\/([^/]+)\/portal-sessions\/?$/,
    run: (d, [id]) => listPortalSessions(d, d.caller, id!),
  },
  {
    method: 'POST',
    path: '/accounts/{accountId}/portal-sessions/revoke',
    summary: "End every portal session of the account, and every link minted so far: refused everywhere within 5 s (the operator, or a key with write)",
    accountParam: true,
    responses: { 200: 'endedAt, and how many live links and sessions it revoked', 403: 'a portal session cannot', ...NO_ACCOUNT },
    pattern: /^\/accounts\/([^/]+)\/portal-sessions\/revoke\/?$/,
    run: (d, [id]) => endPortalSessions(d, d.caller, id!),
  },
  {
    method: 'DELETE',
    path: '/accounts/{accountId}/portal-sessions/{sessionId}',
    summary: 'Revoke one portal session: refused everywhere within 5 s (its link may open another)',
    accountParam: true,
    responses: { 204: 'revoked (also when it already was)', 403: 'a portal session cannot', 404: 'no such account or session' },
    pattern: /^\/accounts\/([^/]+)\/portal-sessions\/([^/]+)$/,
    run: (d, [id, sessionId]) => revokePortalSession(d, d.caller, id!, sessionId!),
  },
  { method: 'DELETE', path: '/accounts/{accountId}/keys/{keyId}', summary: 'Revoke a key: refused everywhere within 5 s', accountParam: true, responses: { 204: 'revoked', 404: 'no such account or key' }, pattern: /^\/accounts\/([^/]+)\/keys\/([^/]+)$/, run: (d, [id, keyId]) => revokeKey(d, d.caller, id!, keyId!) },
];

/** The customer portal's door: a portal link exchanged for a session, with no bearer token (the link is the credential). */
const PORTAL_ROUTES: Route[] = [
  {
    method: 'POST',
    path: '/portal/sessions',
    summary: 'Exchange a portal link token for a portal session (no Authorization header: the link is the credential)',
    public: true,
    body: { schema: portalSessionSchema, required: true, examples: [{ token: 'hpl_eyJpZCI6Ii4uLiJ9.c2lnbmF0dXJl' }] },
    responses: { 200: 'the session: sessionToken (hps_…, a bearer token for this API), account, readOnly, destinations, expiresAt, returnUrl, theme', 400: 'invalid body', 401: 'the link expired (with returnUrl) or is not valid' },
    pattern: /^\/portal\/sessions\/?$/,
    run: (d, _params, body) => exchangePortalLink(d, body()),
  },
];

/**
 * Replays of dead letters. With an account (a key's own, or the path's) a replay sees only that
 * account's destinations; the admin token on the bare paths works across every account.
 */
const REPLAY_ROUTES: Route[] = [
  {
    method: 'POST',
    path: '/replays',
    summary: "Replay dead letters: the account's (a key, or under /accounts/{id}), or every account's (the admin token); one replay at a time",
    body: { schema: replayRequestSchema, required: true, examples: [{}, { destination: 'orders', since: '2026-11-24T00:00:00Z', eventTypes: ['com.example.*'], limit: 100 }, { destination: 'orders', dryRun: true }] },
    responses: { 202: 'queued: follow the report', ...BAD_ID, 409: 'another replay is running, or the id is taken', 503: 'the replay topic refused it; nothing replayed' },
    pattern: /^\/replays\/?$/,
    run: async (d, _params, body) => {
      const request = body();
      const only = portalDestinations(d.caller);
      if (only !== undefined && !replayInSight(d.caller, (request ?? {}) as { destination?: string })) {
        return { status: 403, body: { error: `this portal session sees only the destinations ${only.join(', ')}: name one of them in "destination"`, issues: [{ path: 'destination', message: `must be one of ${only.join(', ')}` }] } };
      }
      return postReplay(d, request, d.replayScope);
    },
  },
  {
    method: 'GET',
    path: '/replays',
    summary: 'Recent replays, newest first (an account sees its own)',
    query: replayListQuerySchema,
    responses: { 200: 'replay summaries', ...BAD_ID },
    pattern: /^\/replays\/?$/,
    run: async (d, _params, _body, query) => {
      const result = await listReplays(d, query, d.replayScope);
      return result.status === 200 && 'body' in result ? { ...result, body: { replays: result.body.replays.filter((r) => replayInSight(d.caller, r.request)) } } : result;
    },
  },
  {
    method: 'GET',
    path: '/replays/{id}',
    summary: "A replay's report",
    responses: { 200: 'the report', ...BAD_ID, 404: 'no such replay (or not yours)' },
    pattern: /^\/replays\/([^/]+)$/,
    run: async (d, [id]) => {
      const result = await getReplay(d, id!, d.replayScope);
      if (result.status !== 200 || !('body' in result) || replayInSight(d.caller, result.body.request)) return result;
      return { status: 404, body: { error: `no replay ${JSON.stringify(id)}; list them with GET /admin/replays` } };
    },
  },
];

/** An account-scoped route again under `/accounts/{accountId}`: the account comes from the path. */
function underAccount(route: Route): Route {
  return {
    ...route,
    path: `/accounts/{accountId}${route.path}`,
    accountParam: true,
    pattern: new RegExp(`^\\/accounts\\/([^/]+)${route.pattern.source.slice(1)}`),
    responses: { ...route.responses, ...NO_ACCOUNT },
    run: (d, [, ...params], body, query) => route.run(d, params, body, query),
  };
}

/** Every admin route with its documentation (/openapi.json is generated from these). */
export const ROUTES: Route[] = [...ACCOUNT_SCOPED, ...ACCOUNT_SCOPED.map(underAccount), ...ACCOUNT_ROUTES, ...PORTAL_ROUTES, ...REPLAY_ROUTES, ...REPLAY_ROUTES.map(underAccount)];

/** Herald's package root: beside functions/ in the sources, one level up from dist/functions/ when built. */
function packageRoot(): string | undefined {
  for (const dir of [join(__dirname, '..'), join(__dirname, '..', '..')]) {
    const file = join(dir, 'package.json');
    if (!existsSync(file)) continue;
    const manifest = JSON.parse(readFileSync(file, 'utf8')) as { name?: string };
    if (manifest.name === 'herald') return dir;
  }
  return undefined;
}

/** Herald's version, from its package.json. */
function packageVersion(): string {
  const root = packageRoot();
  const manifest = root === undefined ? {} : (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version?: string });
  return manifest.version ?? '0.0.0';
}
/** Built once: it only changes with the code. */
let openApi: string | undefined;

class BadJson extends Error {
  constructor(
    message: string,
    readonly issues: { path: string; message: string }[] = [{ path: 'body', message }],
  ) {
    super(message);
  }
}

function parseJsonBody(req: HeraldRequest, optional = false): unknown {
  const raw = rawBodyOf(req);
  if (raw.length === 0) {
    if (optional) return undefined;
    throw new BadJson('the request needs a JSON body');
  }
  const parsed = parseJsonBytes(raw);
  if (!parsed.ok) throw new BadJson(parsed.message, parsed.problem === 'surrogate' ? parsed.issues : undefined);
  return parsed.value;
}

// ---------------------------------------------------------------- the console (static files)

const CONSOLE_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.webmanifest': 'application/manifest+json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.ttf': 'font/ttf',
};

/** A built asset whose name carries its content hash (`index-3f9a1c2b.js`): it never changes, so it may be cached for good. */
const HASHED_ASSET = /[.-][A-Za-z0-9_]{8,}\.[a-z0-9]+$/;

/**
 * Where the console's built files are: HERALD_CONSOLE_DIR, else console/dist in the sources
 * (npm run build:console), else dist/console in a deployed package (the Pulumi program builds
 * it there, inside the one directory it uploads).
 */
function consoleDirOf(rt: Runtime): string | undefined {
  if (rt.config.consoleDir !== undefined) return resolve(rt.config.consoleDir);
  const root = packageRoot();
  if (root === undefined) return undefined;
  const candidates = [join(root, 'console', 'dist'), join(root, 'dist', 'console')];
  return candidates.find((dir) => existsSync(join(dir, 'index.html'))) ?? candidates[0];
}

function consoleHeaders(res: Response, rt: Runtime): void {
  res.set({
    'content-security-policy': `default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: https:; connect-src 'self'; base-uri 'none'; form-action 'self'; object-src 'none'; frame-ancestors ${rt.config.consoleFrameAncestors}`,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
  });
}

/** The file a console path names inside `dir`, or undefined when it would leave it (`..`, an encoded slash or NUL, a symlink out). */
function consoleFile(dir: string, path: string): string | undefined {
  let relative: string;
  try {
    relative = decodeURIComponent(path.slice('/console'.length));
  } catch {
    return undefined;
  }
  const segments = relative.split('/').filter((s) => s !== '');
  if (segments.some((s) => s === '..' || s === '.' || s.includes('\\') || s.includes('\0'))) return undefined;
  const file = resolve(dir, ...segments);
  return file === dir || file.startsWith(dir + sep) ? file : undefined;
}

/**
 * GET /console and /console/*: the console's built files, no credential needed (they hold
 * no data; the API they call checks every request). `/console` redirects to `/console/`; a
 * path without an extension that names no file is a route of the console's own: index.html.
 */
function serveConsole(req: HeraldRequest, res: Response, rt: Runtime): void {
  consoleHeaders(res, rt);
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.set('allow', 'GET, HEAD');
    sendJson(res, 405, { error: `method ${req.method} not allowed on ${req.path}; the console is read with GET` });
    return;
  }
  // Its files are named relative to `…/console/`: without the slash, `app.js` would resolve beside it. The fragment (a portal link) survives a redirect.
  if (req.path === '/console') {
    const search = req.originalUrl.indexOf('?');
    res.status(308).set({ location: `console/${search >= 0 ? req.originalUrl.slice(search) : ''}`, 'cache-control': 'no-cache' }).end();
    return;
  }
  const dir = consoleDirOf(rt);
  const index = dir === undefined ? undefined : join(dir, 'index.html');
  if (dir === undefined || index === undefined || !existsSync(index)) {
    sendJson(res, 503, { error: `the console is not built (no ${dir ?? 'console/dist'}/index.html): run \`npm run build:console\`, then reload` });
    return;
  }
  const file = consoleFile(dir, req.path);
  if (file === undefined) {
    sendJson(res, 400, { error: `invalid console path ${JSON.stringify(req.path)}: it leaves the console's directory` });
    return;
  }
  let target = file;
  let stat = statSync(target, { throwIfNoEntry: false });
  if (stat?.isDirectory()) {
    target = join(target, 'index.html');
    stat = statSync(target, { throwIfNoEntry: false });
  }
  if (!stat?.isFile()) {
    if (extname(file) !== '') {
      sendJson(res, 404, { error: `no console file ${JSON.stringify(req.path)}` });
      return;
    }
    target = index;
  }
  // A symbolic link inside the directory must not lead out of it.
  const realDir = realpathSync(dir);
  const real = realpathSync(target);
  if (real !== realDir && !real.startsWith(realDir + sep)) {
    sendJson(res, 400, { error: `invalid console path ${JSON.stringify(req.path)}: it leaves the console's directory` });
    return;
  }
  const type = CONSOLE_TYPES[extname(target).toLowerCase()] ?? 'application/octet-stream';
  const html = type.startsWith('text/html');
  res.status(200).set({ 'content-type': type, 'cache-control': html || !HASHED_ASSET.test(target) ? 'no-cache' : 'public, max-age=31536000, immutable' });
  res.send(readFileSync(real));
}

// ---------------------------------------------------------------- callers

/** A public route's caller: reaches no account and holds no scope (a public route needs neither). */
const NOBODY: Caller = { kind: 'portal', account: '', sessionId: 'anonymous', scopes: [] };

/** The portal signing key of a runtime: derived once (every instance derives the same). */
const portalKeys = new WeakMap<Runtime, Buffer>();
function portalKeyFor(rt: Runtime): Buffer {
  let key = portalKeys.get(rt);
  if (!key) {
    key = portalKeyOf(portalSecretOf(rt.config.secretsKey, rt.credentials.admin));
    portalKeys.set(rt, key);
  }
  return key;
}


const FORWARDED_PROTO = /^https?$/;
const HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;
const PREFIX = /^(?:\/[A-Za-z0-9._~-]+)*$/;

/**
 * Where the console is for whoever made this request: its origin (X-Forwarded-Proto and
 * X-Forwarded-Host when a proxy set them, else the Host header) and the admin function's
 * mount: X-Forwarded-Prefix when given, else `/admin`, the function's path both in local
 * mode (http://127.0.0.1:PORT/admin) and at its Cloud Functions URL
 * (https://REGION-PROJECT.cloudfunctions.net/admin); nothing at a Cloud Run URL of its own (*.run.app).
 */
export function consoleBaseOf(headers: { get(name: string): string | undefined }, protocol: string, fallback: string | undefined): string {
  const first = (name: string) => headers.get(name)?.split(',')[0]?.trim() || undefined;
  const proto = first('x-forwarded-proto') ?? protocol;
  const host = first('x-forwarded-host') ?? headers.get('host');
  if (!FORWARDED_PROTO.test(proto) || host === undefined || !HOST.test(host)) return `${(fallback ?? 'http://127.0.0.1:8080').replace(/\/$/, '')}/admin/console`;
  const forwardedPrefix = first('x-forwarded-prefix');
  const prefix = forwardedPrefix !== undefined && PREFIX.test(forwardedPrefix.replace(/\/$/, '')) ? forwardedPrefix.replace(/\/$/, '') : /\.run\.app(?::\d+)?$/.test(host) ? '' : '/admin';
  return `${proto}://${host}${prefix}/console`;
}

/**
 * Who is calling: the admin token is the operator; an account key (`hk_…`) acts for its
 * account; a portal session (`hps_…`) for its account, as its link said. Anything else is
 * refused with 401, and says which credential to send.
 */
async function callerOf(req: HeraldRequest, res: Response, rt: Runtime): Promise<Caller | undefined> {
  const token = bearerOf(req.get('authorization'));
  if (matchesDigest(token, rt.credentials.admin)) return OPERATOR;
  if (token?.startsWith(SESSION_PREFIX)) {
    const session = verifyPortalToken(portalKeyFor(rt), SESSION_PREFIX, token, rt.clock.now());
    const sid = session.ok ? session.claims.sid : undefined;
    // The signature proves Herald minted it; its records (read at most every few seconds) say whether what granted it still stands.
    const access = session.ok && sid !== undefined ? await rt.portalAccess.session({ ...session.claims, sid }) : undefined;
    if (session.ok && sid !== undefined && access?.ok) {
      const { account, destinations } = session.claims;
      return { kind: 'portal', account, sessionId: sid, scopes: portalScopes(session.claims), ...(destinations !== undefined ? { destinations } : {}) };
    }
    res.set('www-authenticate', 'Bearer');
    const expired = (!session.ok && session.reason === 'expired') || (access !== undefined && !access.ok && access.reason === 'expired');
    const ended = access !== undefined && !access.ok && access.reason === 'revoked' ? access.why : undefined;
    sendJson(res, 401, {
      error: expired ? 'the portal session has expired: open a new portal link' : ended !== undefined ? `the portal session has ended (${ended}): open the portal again from where you got the link` : 'the portal session is not valid: open the portal link again',
      reason: expired ? 'expired' : ended !== undefined ? 'revoked' : 'invalid',
    });
    return undefined;
  }
  const verdict = token !== undefined ? await rt.keys.verify(token) : undefined;
  if (verdict?.ok) return keyCaller(verdict.key);
  res.set('www-authenticate', 'Bearer');
  const why = verdict && verdict.reason !== 'unknown' ? `the account key is ${verdict.reason}; ask for a new one` : 'send Authorization: Bearer <admin token or account key>';
  sendJson(res, 401, { error: `missing or invalid bearer token: ${why}` });
  return undefined;
}

/**
 * A store that could not take the request now (contention on one record, a lock timeout,
 * Firestore overloaded) is a 503 with Retry-After that says to send it again, never a 500.
 */
function answeringStoreBusy(handler: (req: HeraldRequest, res: Response) => Promise<void>) {
  return async (req: HeraldRequest, res: Response): Promise<void> => {
    try {
      await handler(req, res);
    } catch (e) {
      const busy = storeBusyMessage(e);
      if (busy === undefined || res.headersSent) throw e;
      runtime().log.warn(`admin: ${req.method} ${req.path} answered 503: ${busy}`, { error: (e as Error).message });
      res.set('retry-after', String(STORE_BUSY_RETRY_AFTER_S));
      sendJson(res, 503, { error: busy });
    }
  };
}

/** The operators' and accounts' API: accounts, keys, destinations, deliveries, reactivation and replays. */
export const adminHandler = guarded(
  () => runtime().log,
  'admin',
  answeringStoreBusy(async (req: HeraldRequest, res: Response) => {
    const rt = runtime();
    const path = req.path;
    // The API's description holds no data: anyone (a code generator, a browser) may read it.
    if (req.method === 'GET' && path === '/openapi.json') {
      openApi ??= JSON.stringify(openApiDocument(ROUTES, packageVersion()));
      res.status(200).set('content-type', 'application/json; charset=utf-8').send(openApi);
      return;
    }
    if (path === '/console' || path.startsWith('/console/')) {
      serveConsole(req, res, rt);
      return;
    }
    const publicRoute = ROUTES.find((r) => r.public && r.method === req.method && r.pattern.test(path));
    const caller = publicRoute ? NOBODY : await callerOf(req, res, rt);
    if (!caller) return;
    const matching = ROUTES.filter((r) => r.pattern.test(path));
    if (matching.length === 0) {
      sendJson(res, 404, { error: `no admin route ${req.method} ${path}; see the README for the admin API` });
      return;
    }
    const route = matching.find((r) => r.method === req.method);
    if (!route) {
      res.set('allow', matching.map((r) => r.method).join(', '));
      sendJson(res, 405, { error: `method ${req.method} not allowed on ${path}; use ${matching.map((r) => r.method).join(' or ')}` });
      return;
    }
    // Express has already refused a path that does not decode (jsonBodyErrors answers 400).
    const params = (route.pattern.exec(path) ?? []).slice(1).map((p) => decodeURIComponent(p));
    const deps = { ...suspensionDeps(rt), ...replaysAdminDeps(rt), deadLetterTopic: rt.topology.topics.deadLetter.name, lanes: rt.lanes, rateLeases: rt.rateLeases, allowLoopback: rt.config.allowLoopback, resolver: rt.resolver, herald: { projectId: rt.config.projectId, prefix: rt.names.prefix }, accounts: rt.accounts, keys: rt.keys, accountData: rt.accountData, portals: rt.portals, portalAccess: rt.portalAccess, quotasOf: (account: string) => rt.accountPolicies.quotasOf(account), quotaDefaults: { publishPerSecond: rt.config.accountPublishQuota, destinations: rt.config.accountDestinationQuota } };
    // Another account's anything does not exist for a key: 404 before scopes, so a key learns nothing of it.
    if (route.accountParam && !(await findAccount(deps, caller, params[0]!))) {
      const missing = noAccount(params[0]!);
      sendJson(res, missing.status, 'body' in missing ? missing.body : undefined);
      return;
    }
    if (caller.kind !== 'operator' && !route.public) {
      const scope = scopeFor(req.method);
      if (!hasScope(caller, scope)) {
        const why = caller.kind === 'key' ? `this key lacks the "${scope}" scope; create a key with it (POST /admin/accounts/${caller.account}/keys)` : 'this portal session is read-only: it can look but not change anything';
        sendJson(res, 403, { error: why });
        return;
      }
    }
    const account = route.accountParam ? params[0]! : caller.kind !== 'operator' ? caller.account : DEFAULT_ACCOUNT;
    try {
      let fields: string[] = [];
      const body = (optional?: boolean) => {
        const parsed = parseJsonBody(req, optional);
        fields = parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? Object.keys(parsed) : [];
        return parsed;
      };
      const replayScope = route.accountParam || caller.kind !== 'operator' ? account : undefined;
      const ctx: Ctx = {
        ...deps,
        caller,
        account,
        replayScope,
        portalKey: portalKeyFor(rt),
        consoleBase: consoleBaseOf({ get: (name) => req.get(name) }, req.protocol, rt.config.pushBaseUrl),
        eventTypes: rt.eventTypes,
        rateBucketMs: rt.rates.options.bucketMs,
        timeScale: rt.config.timeScale,
      };
      const result = await route.run(narrowed(ctx), params, body, { ...(req.query as Record<string, unknown>) });
      // The audit trail: every change, who made it, in which account, and which fields it set (never their values: secrets).
      // A public route changes nothing of anyone's (the portal exchange logs the session it opens).
      if (req.method !== 'GET' && result.status < 400 && !route.public) {
        rt.log.info(`audit: ${route.method} /admin${route.path}`, { audit: true, actor: actorOf(caller), account, route: `${route.method} ${route.path}`, ids: params, fields, status: result.status });
      }
      sendJson(res, result.status, 'body' in result ? result.body : undefined);
    } catch (e) {
      if (e instanceof BadJson) {
        sendJson(res, 400, { error: e.message, issues: e.issues });
        return;
      }
      const refused = storeRefusalMessage(e);
      if (refused === undefined) throw e;
      rt.log.warn(`admin: ${req.method} ${req.path} answered 400: Firestore refused a value of the request`, { error: (e as Error).message });
      sendJson(res, 400, { error: refused });
    }
  }),
);

/**
 * Firestore's INVALID_ARGUMENT: a value Herald passed on (an id it reserves, such as `__x__`, a
 * string it cannot store) that the edge let through. The request's fault, answered at once as
 * a 400 rather than a 500 that says to retry; its detail only without any Firestore path.
 */
function storeRefusalMessage(e: unknown): string | undefined {
  const { code, details } = (e ?? {}) as { code?: unknown; details?: unknown };
  // An expired transaction is INVALID_ARGUMENT too, and no fault of the request's.
  if (code !== 3 || /transaction has expired/i.test(String(details))) return undefined;
  const detail = typeof details === 'string' && details.length > 0 && details.length <= 200 && !details.includes('projects/') ? `: ${details}` : '';
  return `the request holds a value Herald cannot store (Firestore refused it as INVALID_ARGUMENT${detail}); check the ids and strings it sends`;
}
