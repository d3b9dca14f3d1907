import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Response } from 'express';
import { getDelivery, listDeliveries } from '../shared/app/deliveries-admin';
import { AdminDeps, AdminResult, badId, deleteDestination, getDestination, listDestinations, putDestination } from '../shared/app/destinations-admin';
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
import { accountCreateSchema, accountPatchSchema, accountSettingsSchema, actorOf, Caller, DEFAULT_ACCOUNT, FAILURE_POLICY_SETTING, hasScope, keyCreateSchema, OPERATOR, scopeFor } from '../shared/domain/account';
import { DESTINATION_ID, internalDestinationId } from '../shared/domain/ids';
import { keyCaller } from '../shared/app/key-verifier';
import { bearerOf, matchesDigest } from '../shared/app/push-auth';
import { Runtime } from '../shared/runtime';
import { postRotateSecret } from '../shared/app/secret-rotation-admin';
import { parseJsonBytes } from '../shared/domain/json-body';
import { SuspensionDeps } from '../shared/app/suspension';
import { postReactivate, postRedeliver } from '../shared/app/suspension-admin';
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
type Ctx = AdminDeps & SuspensionDeps & ReplaysAdminDeps & AccountsAdminDeps & {
  caller: Caller;
  account: string;
  /** The account a replay is confined to; undefined for the admin token on the bare /replays paths (every account). */
  replayScope: string | undefined;
};

type Route = RouteDoc & {
  pattern: RegExp;
  /** The first path parameter is an account id: a caller that does not reach it gets 404, before anything else. */
  accountParam?: boolean;
  /** `body(true)`: the body may be empty (undefined then). `query` is the parsed query string (a repeated parameter is an array). */
  run: (ctx: Ctx, params: string[], body: (optional?: boolean) => unknown, query: Record<string, unknown>) => Promise<AdminResult<unknown>>;
};

const NOT_FOUND = { 404: 'no such destination' } as const;
const BAD_ID = { 400: 'invalid id or body: every problem named' } as const;
const NO_ACCOUNT = { 404: 'no such account (or not yours)' } as const;

/** A destination route's id, checked, then named as Herald names it inside (the account's own id, or `<account>_<id>`). */
function inAccount<T>(ctx: Ctx, id: string, run: (internalId: string) => Promise<AdminResult<T>>): Promise<AdminResult<T>> {
  return DESTINATION_ID.test(id) ? run(internalDestinationId(ctx.account, id)) : Promise.resolve(badId(id));
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
  { method: 'DELETE', path: '/destinations/{id}', summary: 'Delete a destination and its lane', responses: { 204: 'deleted', ...BAD_ID, ...NOT_FOUND }, pattern: /^\/destinations\/([^/]+)$/, run: (d, [id]) => inAccount(d, id!, (iid) => deleteDestination(d, iid)) },
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
    summary: "Send the account's QUEUED (default) or DEAD deliveries again, to one receiver URL if given (seed 003)",
    body: { schema: accountRedeliverSchema, required: false, examples: [{}, { status: 'queued', url: 'https://events.myservice.com/receiver' }] },
    responses: { 202: 'how many are PENDING again, per destination; suspended destinations named and left queued', 400: 'invalid body' },
    pattern: /^\/deliveries\/redeliver\/?$/,
    run: (d, _params, body) => postAccountRedeliver(d, d.account, body(true)),
  },
  { method: 'GET', path: '/deliveries/{id}', summary: 'One delivery record', responses: { 200: 'the delivery', ...BAD_ID, 404: 'no such delivery' }, pattern: /^\/deliveries\/([^/]+)$/, run: (d, [id]) => getDelivery(d, id!, d.account) },
];

/** Accounts, their settings (seed 003) and keys: the account id is in the path. */
const ACCOUNT_ROUTES: Route[] = [
  {
    method: 'POST',
    path: '/accounts',
    summary: 'Create an account (operator only)',
    body: { schema: accountCreateSchema, required: true, examples: [{ name: 'Acme Corp' }, { id: 'acme', name: 'Acme Corp', technicalEmail: 'ops@acme.example' }] },
    responses: { 201: 'the account', 400: 'invalid body', 403: 'an account key cannot', 409: 'the id is taken' },
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
  { method: 'DELETE', path: '/accounts/{accountId}', summary: 'Delete an account without destinations, revoking its keys (operator only)', accountParam: true, responses: { 204: 'deleted', 403: 'an account key cannot', ...NO_ACCOUNT, 409: 'it still has destinations, or it is default' }, pattern: /^\/accounts\/([^/]+)$/, run: (d, [id]) => deleteAccount(d, d.caller, id!) },
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
    responses: { 201: 'the key record and the key itself, this once', 400: 'invalid body', ...NO_ACCOUNT },
    pattern: /^\/accounts\/([^/]+)\/keys\/?$/,
    run: (d, [id], body) => createKey(d, d.caller, id!, body()),
  },
  { method: 'GET', path: '/accounts/{accountId}/keys', summary: "The account's keys (never the keys themselves)", accountParam: true, responses: { 200: 'keys', ...NO_ACCOUNT }, pattern: /^\/accounts\/([^/]+)\/keys\/?$/, run: (d, [id]) => listKeys(d, d.caller, id!) },
  { method: 'DELETE', path: '/accounts/{accountId}/keys/{keyId}', summary: 'Revoke a key: refused everywhere within 5 s', accountParam: true, responses: { 204: 'revoked', 404: 'no such account or key' }, pattern: /^\/accounts\/([^/]+)\/keys\/([^/]+)$/, run: (d, [id, keyId]) => revokeKey(d, d.caller, id!, keyId!) },
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
    run: (d, _params, body) => postReplay(d, body(), d.replayScope),
  },
  { method: 'GET', path: '/replays', summary: 'Recent replays, newest first (an account sees its own)', query: replayListQuerySchema, responses: { 200: 'replay summaries', ...BAD_ID }, pattern: /^\/replays\/?$/, run: (d, _params, _body, query) => listReplays(d, query, d.replayScope) },
  { method: 'GET', path: '/replays/{id}', summary: "A replay's report", responses: { 200: 'the report', ...BAD_ID, 404: 'no such replay (or not yours)' }, pattern: /^\/replays\/([^/]+)$/, run: (d, [id]) => getReplay(d, id!, d.replayScope) },
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
export const ROUTES: Route[] = [...ACCOUNT_SCOPED, ...ACCOUNT_SCOPED.map(underAccount), ...ACCOUNT_ROUTES, ...REPLAY_ROUTES, ...REPLAY_ROUTES.map(underAccount)];

/** Herald's version, from its package.json: beside functions/ in the sources, one level up from dist/functions/ when built. */
function packageVersion(): string {
  for (const file of [join(__dirname, '..', 'package.json'), join(__dirname, '..', '..', 'package.json')]) {
    if (!existsSync(file)) continue;
    const manifest = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
    if (manifest.name === 'herald' && manifest.version) return manifest.version;
  }
  return '0.0.0';
}
/** Built once: it only changes with the code. */
let openApi: string | undefined;

class BadJson extends Error {}

function parseJsonBody(req: HeraldRequest, optional = false): unknown {
  const raw = rawBodyOf(req);
  if (raw.length === 0) {
    if (optional) return undefined;
    throw new BadJson('the request needs a JSON body');
  }
  const parsed = parseJsonBytes(raw);
  if (!parsed.ok) throw new BadJson(parsed.message);
  return parsed.value;
}

/**
 * Who is calling: the admin token is the operator; an account key (`hk_…`) acts for its
 * account. Anything else is refused with 401, and says which credential to send.
 */
async function callerOf(req: HeraldRequest, res: Response, rt: Runtime): Promise<Caller | undefined> {
  const token = bearerOf(req.get('authorization'));
  if (matchesDigest(token, rt.credentials.admin)) return OPERATOR;
  const verdict = token !== undefined ? await rt.keys.verify(token) : undefined;
  if (verdict?.ok) return keyCaller(verdict.key);
  res.set('www-authenticate', 'Bearer');
  const why = verdict && verdict.reason !== 'unknown' ? `the account key is ${verdict.reason}; ask for a new one` : 'send Authorization: Bearer <admin token or account key>';
  sendJson(res, 401, { error: `missing or invalid bearer token: ${why}` });
  return undefined;
}

/** The operators' and accounts' API: accounts, keys, destinations, deliveries, reactivation and replays. */
export const adminHandler = guarded(
  () => runtime().log,
  'admin',
  async (req: HeraldRequest, res: Response) => {
    const rt = runtime();
    const path = req.path;
    // The API's description holds no data: anyone (a code generator, a browser) may read it.
    if (req.method === 'GET' && path === '/openapi.json') {
      openApi ??= JSON.stringify(openApiDocument(ROUTES, packageVersion()));
      res.status(200).set('content-type', 'application/json; charset=utf-8').send(openApi);
      return;
    }
    const caller = await callerOf(req, res, rt);
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
    const deps = { ...suspensionDeps(rt), ...replaysAdminDeps(rt), lanes: rt.lanes, rateLeases: rt.rateLeases, allowLoopback: rt.config.allowLoopback, resolver: rt.resolver, herald: { projectId: rt.config.projectId, prefix: rt.names.prefix }, accounts: rt.accounts, keys: rt.keys, quotasOf: (account: string) => rt.accountPolicies.quotasOf(account), quotaDefaults: { publishPerSecond: rt.config.accountPublishQuota, destinations: rt.config.accountDestinationQuota } };
    // Another account's anything does not exist for a key: 404 before scopes, so a key learns nothing of it.
    if (route.accountParam && !(await findAccount(deps, caller, params[0]!))) {
      const missing = noAccount(params[0]!);
      sendJson(res, missing.status, 'body' in missing ? missing.body : undefined);
      return;
    }
    if (caller.kind === 'key') {
      const scope = scopeFor(req.method);
      if (!hasScope(caller, scope)) {
        sendJson(res, 403, { error: `this key lacks the "${scope}" scope; create a key with it (POST /admin/accounts/${caller.account}/keys)` });
        return;
      }
    }
    const account = route.accountParam ? params[0]! : caller.kind === 'key' ? caller.account : DEFAULT_ACCOUNT;
    try {
      let fields: string[] = [];
      const body = (optional?: boolean) => {
        const parsed = parseJsonBody(req, optional);
        fields = parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? Object.keys(parsed) : [];
        return parsed;
      };
      const replayScope = route.accountParam || caller.kind === 'key' ? account : undefined;
      const result = await route.run({ ...deps, caller, account, replayScope }, params, body, { ...(req.query as Record<string, unknown>) });
      // The audit trail: every change, who made it, in which account, and which fields it set (never their values: secrets).
      if (req.method !== 'GET' && result.status < 400) {
        rt.log.info(`audit: ${route.method} /admin${route.path}`, { audit: true, actor: actorOf(caller), account, route: `${route.method} ${route.path}`, ids: params, fields, status: result.status });
      }
      sendJson(res, result.status, 'body' in result ? result.body : undefined);
    } catch (e) {
      if (!(e instanceof BadJson)) throw e;
      sendJson(res, 400, { error: e.message, issues: [{ path: 'body', message: e.message }] });
    }
  },
);
