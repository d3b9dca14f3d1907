import type { DeliveryView } from '../app/deliveries-admin';
import type { DestinationStats } from '../app/destinations-admin';
import type { DeliveryStatus } from '../domain/delivery';
import type { DestinationSpec, DestinationView } from '../domain/destination';
import type { ReplayAccepted } from '../app/replays-admin';
import type { ReplaySelection, ReplaySummary, ReplayView } from '../domain/replay';
import { ApiError, ConnectError, Issue, UsageError } from './errors';

/** A small typed client over fetch for Herald's ingest and admin APIs. */

export type Api = 'admin' | 'ingest';

export interface ClientOptions {
  /** Herald's base URL, e.g. http://127.0.0.1:8080 (functions live at /ingest and /admin). */
  baseUrl: string;
  adminToken?: string;
  ingestToken?: string;
  /** Defaults to the global fetch; tests pass their own. */
  fetch?: typeof fetch;
  timeoutMs?: number;
}

/**
 * A destination as the admin API shows it: `suspension` while it is suspended; `stats`
 * (its rolling hour) on GET /admin/destinations/{id} only.
 */
export type DestinationInfo = DestinationView & { stats?: DestinationStats };

/** POST /admin/destinations/{id}/reactivate: the destination, active again, and how many QUEUED deliveries start over. */
export type ReactivateResult = { destination: DestinationInfo; redelivered: number };

/** Which deliveries `redeliver` starts over: the QUEUED ones (default) or the DEAD ones. */
export type RedeliverFrom = 'queued' | 'dead';

/** POST /admin/destinations/{id}/redeliver: how many deliveries in `status` start over. */
export type RedeliverResult = { redelivered: number; status: 'QUEUED' | 'DEAD' };

export type PutDestinationResult = { created: boolean; destination: DestinationInfo & { secret?: string } };

/** POST /admin/destinations/{id}/rotate-secret: the destination with its new secret (shown this once). */
export type RotateSecretResult = DestinationInfo & { secret: string };

/** One page of a destination's deliveries; `nextCursor` is absent on the last page. */
export type DeliveryPageInfo = { deliveries: DeliveryView[]; nextCursor?: string };

export interface DeliveryQuery {
  status?: DeliveryStatus;
  limit?: number;
  cursor?: string;
}

/** One event for binary mode: attributes become ce-* headers, data the body. */
export interface BinaryEvent {
  id: string;
  source: string;
  type: string;
  subject?: string;
  time?: string;
  extensions?: Record<string, string>;
  data?: Buffer;
  contentType?: string;
}

const TOKEN_ENV: Record<Api, string> = { admin: 'HERALD_ADMIN_TOKEN', ingest: 'HERALD_INGEST_TOKEN' };

export class HeraldClient {
  private readonly baseUrl: string;
  private readonly fetchFn: typeof fetch;

  constructor(private readonly options: ClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.fetchFn = options.fetch ?? fetch;
  }

  /** POST /ingest in binary mode; resolves to the accepted event ids. */
  async publish(event: BinaryEvent): Promise<string[]> {
    const headers: Record<string, string> = {
      'ce-specversion': '1.0',
      'ce-id': headerValue(event.id),
      'ce-source': headerValue(event.source),
      'ce-type': headerValue(event.type),
    };
    if (event.subject !== undefined) headers['ce-subject'] = headerValue(event.subject);
    if (event.time !== undefined) headers['ce-time'] = headerValue(event.time);
    for (const [name, value] of Object.entries(event.extensions ?? {})) headers[`ce-${name}`] = headerValue(value);
    if (event.contentType !== undefined) headers['content-type'] = event.contentType;
    const { body } = await this.request('ingest', 'POST', '/ingest', { headers, ...(event.data !== undefined ? { body: event.data } : {}) });
    const accepted = (body as { accepted?: unknown } | undefined)?.accepted;
    if (!Array.isArray(accepted)) throw unexpected('POST /ingest', body);
    return accepted.map(String);
  }

  async putDestination(id: string, spec: DestinationSpec): Promise<PutDestinationResult> {
    const { status, body } = await this.request('admin', 'PUT', `/admin/destinations/${encodeURIComponent(id)}`, {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(spec),
    });
    return { created: status === 201, destination: objectOf('PUT /admin/destinations', body) as PutDestinationResult['destination'] };
  }

  async listDestinations(): Promise<DestinationInfo[]> {
    const { body } = await this.request('admin', 'GET', '/admin/destinations');
    const list = (body as { destinations?: unknown } | undefined)?.destinations;
    if (!Array.isArray(list)) throw unexpected('GET /admin/destinations', body);
    return list as DestinationInfo[];
  }

  async getDestination(id: string): Promise<DestinationInfo> {
    const { body } = await this.request('admin', 'GET', `/admin/destinations/${encodeURIComponent(id)}`);
    return objectOf('GET /admin/destinations/{id}', body) as DestinationInfo;
  }

  async deleteDestination(id: string): Promise<void> {
    await this.request('admin', 'DELETE', `/admin/destinations/${encodeURIComponent(id)}`);
  }

  /** POST /admin/destinations/{id}/reactivate: clears the suspension; its QUEUED deliveries are sent again. */
  async reactivateDestination(id: string): Promise<ReactivateResult> {
    const call = 'POST /admin/destinations/{id}/reactivate';
    const { body } = await this.request('admin', 'POST', `/admin/destinations/${encodeURIComponent(id)}/reactivate`);
    const b = objectOf(call, body);
    if (typeof b.redelivered !== 'number' || typeof b.destination !== 'object' || b.destination === null) throw unexpected(call, body);
    return b as unknown as ReactivateResult;
  }

  /** POST /admin/destinations/{id}/redeliver: every delivery in `from` (QUEUED or DEAD) starts over. */
  async rotateSecret(id: string, request: { secret?: string; graceSeconds?: number }): Promise<RotateSecretResult> {
    const call = 'POST /admin/destinations/{id}/rotate-secret';
    const { body } = await this.request('admin', 'POST', `/admin/destinations/${encodeURIComponent(id)}/rotate-secret`, {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(request),
    });
    const b = objectOf(call, body);
    if (typeof b.secret !== 'string' || typeof b.id !== 'string') throw unexpected(call, body);
    return b as unknown as RotateSecretResult;
  }

  async redeliver(id: string, from: RedeliverFrom): Promise<RedeliverResult> {
    const call = 'POST /admin/destinations/{id}/redeliver';
    const { body } = await this.request('admin', 'POST', `/admin/destinations/${encodeURIComponent(id)}/redeliver`, {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ status: from }),
    });
    const b = objectOf(call, body);
    if (typeof b.redelivered !== 'number' || (b.status !== 'QUEUED' && b.status !== 'DEAD')) throw unexpected(call, body);
    return b as unknown as RedeliverResult;
  }

  /** GET /admin/destinations/{id}/deliveries: one page. */
  async listDeliveries(destinationId: string, query: DeliveryQuery = {}): Promise<DeliveryPageInfo> {
    const params = new URLSearchParams();
    if (query.status !== undefined) params.set('status', query.status);
    if (query.limit !== undefined) params.set('limit', String(query.limit));
    if (query.cursor !== undefined) params.set('cursor', query.cursor);
    const qs = params.size > 0 ? `?${params.toString()}` : '';
    const { body } = await this.request('admin', 'GET', `/admin/destinations/${encodeURIComponent(destinationId)}/deliveries${qs}`);
    const page = objectOf('GET /admin/destinations/{id}/deliveries', body);
    if (!Array.isArray(page.deliveries)) throw unexpected('GET /admin/destinations/{id}/deliveries', body);
    return {
      deliveries: page.deliveries as DeliveryView[],
      ...(typeof page.nextCursor === 'string' ? { nextCursor: page.nextCursor } : {}),
    };
  }

  async getDelivery(deliveryId: string): Promise<DeliveryView> {
    const { body } = await this.request('admin', 'GET', `/admin/deliveries/${encodeURIComponent(deliveryId)}`);
    return objectOf('GET /admin/deliveries/{id}', body) as unknown as DeliveryView;
  }

  /** POST /admin/replays: the request is validated, recorded (queued) and published on the replay topic. */
  async startReplay(request: ReplaySelection): Promise<ReplayAccepted> {
    const call = 'POST /admin/replays';
    const { body } = await this.request('admin', 'POST', '/admin/replays', { headers: { 'content-type': 'application/json' }, body: JSON.stringify(request) });
    const b = objectOf(call, body);
    if (typeof b.id !== 'string') throw unexpected(call, body);
    return b as unknown as ReplayAccepted;
  }

  /** GET /admin/replays/{id}: the report as it stands. */
  async getReplay(id: string): Promise<ReplayView> {
    const call = 'GET /admin/replays/{id}';
    const { body } = await this.request('admin', 'GET', `/admin/replays/${encodeURIComponent(id)}`);
    const b = objectOf(call, body);
    if (typeof b.status !== 'string' || typeof b.matched !== 'number') throw unexpected(call, body);
    return b as unknown as ReplayView;
  }

  /** GET /admin/replays: the newest first. */
  async listReplays(limit?: number): Promise<ReplaySummary[]> {
    const call = 'GET /admin/replays';
    const { body } = await this.request('admin', 'GET', `/admin/replays${limit !== undefined ? `?limit=${limit}` : ''}`);
    const list = objectOf(call, body).replays;
    if (!Array.isArray(list)) throw unexpected(call, body);
    return list as ReplaySummary[];
  }

  /** One call: bearer auth, JSON answers, Herald's error shape → ApiError, no answer → ConnectError. */
  async request(api: Api, method: string, path: string, init: { headers?: Record<string, string>; body?: string | Buffer } = {}): Promise<{ status: number; body: unknown }> {
    const token = api === 'admin' ? this.options.adminToken : this.options.ingestToken;
    if (!token) {
      throw new UsageError(`no ${api} token`, [], `pass --${api}-token or set ${TOKEN_ENV[api]} (npm start prints it)`);
    }
    const url = `${this.baseUrl}${path}`;
    const timeoutMs = this.options.timeoutMs ?? 30_000;
    let res: Response;
    try {
      res = await this.fetchFn(url, {
        method,
        headers: { accept: 'application/json', ...init.headers, authorization: `Bearer ${token}` },
        ...(init.body !== undefined ? { body: init.body } : {}),
        redirect: 'manual',
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (e) {
      throw connectError(this.baseUrl, e, timeoutMs);
    }
    let text: string;
    try {
      text = await res.text();
    } catch (e) {
      throw connectError(this.baseUrl, e, timeoutMs);
    }
    let body: unknown = undefined;
    let json = true;
    if (text) {
      try {
        body = JSON.parse(text);
      } catch {
        body = text;
        json = false;
      }
    }
    if (res.ok && json) return { status: res.status, body };
    throw apiError(api, method, path, res, body, json, this.baseUrl);
  }
}

function apiError(api: Api, method: string, path: string, res: Response, body: unknown, json: boolean, baseUrl: string): ApiError {
  const shaped = json && typeof body === 'object' && body !== null && typeof (body as { error?: unknown }).error === 'string';
  if (!shaped) {
    const type = res.headers.get('content-type') ?? 'no content type';
    return new ApiError(
      res.status,
      `${method} ${path} answered ${res.status} ${res.statusText} with ${json ? 'an unexpected body' : type}, not a Herald answer`,
      [],
      `is ${baseUrl} Herald's URL? set HERALD_URL or --url`,
    );
  }
  const b = body as { error: string; issues?: unknown; failed?: unknown };
  const issues: Issue[] = [];
  if (Array.isArray(b.issues)) {
    for (const i of b.issues as { path?: unknown; message?: unknown }[]) issues.push({ path: String(i?.path ?? ''), message: String(i?.message ?? '') });
  }
  if (Array.isArray(b.failed)) {
    for (const f of b.failed as { id?: unknown; error?: unknown }[]) issues.push({ path: String(f?.id ?? ''), message: String(f?.error ?? '') });
  }
  return new ApiError(res.status, b.error, issues, hintFor(api, res.status, baseUrl));
}

function hintFor(api: Api, status: number, baseUrl: string): string | undefined {
  if (status === 401 || status === 403) return `check ${TOKEN_ENV[api]} — npm start prints it`;
  if (status === 413) return 'send less data: the limits are in the README (HERALD_MAX_EVENT_BYTES)';
  if (status === 404 && api === 'admin') return undefined; // the command knows what was missing
  if (status === 404 || status === 405) return `is ${baseUrl} Herald's URL? set HERALD_URL or --url`;
  if (status >= 500) return 'Herald logged the details; retry, and check its log if it persists';
  return undefined;
}

function unexpected(call: string, body: unknown): ApiError {
  return new ApiError(200, `${call} answered an unexpected body: ${JSON.stringify(body)?.slice(0, 200)}`, [], 'is the CLI the same version as Herald?');
}

function objectOf(call: string, body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw unexpected(call, body);
  return body as Record<string, unknown>;
}

function connectError(baseUrl: string, e: unknown, timeoutMs: number): ConnectError {
  const err = e as { name?: string; message?: string; cause?: { code?: string; message?: string; errors?: { code?: string }[] } };
  if (err.name === 'TimeoutError' || err.name === 'AbortError') {
    return new ConnectError(`no answer from ${baseUrl} within ${timeoutMs / 1000}s`, [], 'is Herald running and healthy? check its log; the request may or may not have been applied');
  }
  const code = err.cause?.code ?? err.cause?.errors?.[0]?.code;
  const detail = code ?? err.cause?.message ?? err.message ?? String(e);
  return new ConnectError(`cannot connect to ${baseUrl} (${detail})`, [], 'is Herald running? start it with npm start, or set HERALD_URL');
}

/**
 * CloudEvents HTTP binding §3.1.3.2: header values carry printable ASCII only, so space,
 * '"', '%' and anything else travel percent-encoded as UTF-8 (Herald decodes them).
 */
export function headerValue(value: string): string {
  return value.replace(/[^\x21\x23-\x24\x26-\x7e]/gu, (c) => encodeURIComponent(c));
}
