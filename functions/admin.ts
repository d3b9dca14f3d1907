import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Response } from 'express';
import { getDelivery, listDeliveries } from '../shared/app/deliveries-admin';
import { AdminDeps, AdminResult, deleteDestination, getDestination, listDestinations, putDestination } from '../shared/app/destinations-admin';
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
import { guarded, HeraldRequest, rawBodyOf, requireBearer, sendJson } from './http';
import { runtime } from './runtime';

type Route = RouteDoc & {
  pattern: RegExp;
  /** `body(true)`: the body may be empty (undefined then). `query` is the parsed query string (a repeated parameter is an array). */
  run: (deps: AdminDeps & SuspensionDeps & ReplaysAdminDeps, params: string[], body: (optional?: boolean) => unknown, query: Record<string, unknown>) => Promise<AdminResult<unknown>>;
};

const NOT_FOUND = { 404: 'no such destination' } as const;
const BAD_ID = { 400: 'invalid id or body: every problem named' } as const;

/** Every admin route with its documentation (/openapi.json is generated from these). */
export const ROUTES: Route[] = [
  { method: 'GET', path: '/destinations', summary: 'List destinations', responses: { 200: 'the destinations, with status and stats' }, pattern: /^\/destinations\/?$/, run: (d) => listDestinations(d) },
  {
    method: 'PUT',
    path: '/destinations/{id}',
    summary: 'Create or replace a destination (201 shows its signing secret, once)',
    body: { schema: destinationSpecSchema, required: true, examples: DESTINATION_EXAMPLES },
    responses: { 200: 'replaced', 201: 'created, with its whsec_ secret', ...BAD_ID },
    pattern: /^\/destinations\/([^/]+)$/,
    run: (d, [id], body) => putDestination(d, id!, body()),
  },
  { method: 'GET', path: '/destinations/{id}', summary: 'A destination: spec, status, suspension, stats, rate', responses: { 200: 'the destination', ...BAD_ID, ...NOT_FOUND }, pattern: /^\/destinations\/([^/]+)$/, run: (d, [id]) => getDestination(d, id!) },
  { method: 'DELETE', path: '/destinations/{id}', summary: 'Delete a destination and its lane', responses: { 204: 'deleted', ...BAD_ID, ...NOT_FOUND }, pattern: /^\/destinations\/([^/]+)$/, run: (d, [id]) => deleteDestination(d, id!) },
  {
    method: 'POST',
    path: '/destinations/{id}/reactivate',
    summary: 'Reactivate a suspended destination; its QUEUED deliveries flow again',
    responses: { 200: 'reactivated, with how many deliveries were redelivered', ...BAD_ID, ...NOT_FOUND, 409: 'not suspended' },
    pattern: /^\/destinations\/([^/]+)\/reactivate\/?$/,
    run: (d, [id]) => postReactivate(d, id!),
  },
  {
    method: 'POST',
    path: '/destinations/{id}/redeliver',
    summary: 'Send QUEUED (default) or DEAD deliveries again',
    body: { schema: redeliverBodySchema, required: false, examples: [{}, { status: 'queued' }, { status: 'dead' }] },
    responses: { 202: 'those deliveries are PENDING again', ...BAD_ID, ...NOT_FOUND, 409: 'the destination is suspended: reactivate it' },
    pattern: /^\/destinations\/([^/]+)\/redeliver\/?$/,
    run: (d, [id], body) => postRedeliver(d, id!, body(true)),
  },
  {
    method: 'POST',
    path: '/destinations/{id}/rotate-secret',
    summary: 'Rotate the signing secret; the old one keeps signing for the grace period',
    body: { schema: rotateSecretSchema, required: false, examples: [{}, { graceSeconds: 3600 }, { secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', graceSeconds: 0 }] },
    responses: { 200: 'the destination with its new secret (shown once)', ...BAD_ID, ...NOT_FOUND, 409: 'a Pub/Sub-topic destination signs nothing' },
    pattern: /^\/destinations\/([^/]+)\/rotate-secret\/?$/,
    run: (d, [id], body) => postRotateSecret(d, id!, body(true)),
  },
  {
    method: 'GET',
    path: '/destinations/{id}/deliveries',
    summary: "A destination's deliveries, a page at a time",
    query: deliveriesQuerySchema,
    responses: { 200: 'deliveries and nextCursor', ...BAD_ID, ...NOT_FOUND },
    pattern: /^\/destinations\/([^/]+)\/deliveries\/?$/,
    run: (d, [id], _body, query) => listDeliveries(d, id!, query),
  },
  { method: 'GET', path: '/deliveries/{id}', summary: 'One delivery record', responses: { 200: 'the delivery', ...BAD_ID, 404: 'no such delivery' }, pattern: /^\/deliveries\/([^/]+)$/, run: (d, [id]) => getDelivery(d, id!) },
  {
    method: 'POST',
    path: '/replays',
    summary: 'Replay dead letters (one replay at a time)',
    body: { schema: replayRequestSchema, required: true, examples: [{}, { destination: 'orders', since: '2026-11-24T00:00:00Z', eventTypes: ['com.example.*'], limit: 100 }, { destination: 'orders', dryRun: true }] },
    responses: { 202: 'queued: follow the report', ...BAD_ID, 409: 'another replay is running, or the id is taken', 503: 'the replay topic refused it; nothing replayed' },
    pattern: /^\/replays\/?$/,
    run: (d, _params, body) => postReplay(d, body()),
  },
  { method: 'GET', path: '/replays', summary: 'Recent replays, newest first', query: replayListQuerySchema, responses: { 200: 'replay summaries', ...BAD_ID }, pattern: /^\/replays\/?$/, run: (d, _params, _body, query) => listReplays(d, query) },
  { method: 'GET', path: '/replays/{id}', summary: "A replay's report", responses: { 200: 'the report', ...BAD_ID, 404: 'no such replay' }, pattern: /^\/replays\/([^/]+)$/, run: (d, [id]) => getReplay(d, id!) },
];

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

/** The operators' API: destinations, deliveries, reactivation and replays. */
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
    if (!requireBearer(req, res, rt.credentials.admin, 'admin')) return;
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
    const deps = { ...suspensionDeps(rt), ...replaysAdminDeps(rt), lanes: rt.lanes, rateLeases: rt.rateLeases, allowLoopback: rt.config.allowLoopback, resolver: rt.resolver, herald: { projectId: rt.config.projectId, prefix: rt.names.prefix } };
    try {
      const result = await route.run(deps, params, (optional) => parseJsonBody(req, optional), { ...(req.query as Record<string, unknown>) });
      sendJson(res, result.status, 'body' in result ? result.body : undefined);
    } catch (e) {
      if (!(e instanceof BadJson)) throw e;
      sendJson(res, 400, { error: e.message, issues: [{ path: 'body', message: e.message }] });
    }
  },
);
