import type { DeliveryView } from '../../shared/app/admin/deliveries-admin';
import type { DestinationStats } from '../../shared/app/admin/destinations-admin';
import type { HeldKeyView } from '../../shared/app/admin/ordered-keys-admin';
import type { FilterTrial } from '../../shared/app/admin/filter-test-admin';
import type { DeliveryStatus } from '../../shared/domain/retry/delivery';
import type { DestinationSpec, DestinationView, ResetSetting } from '../../shared/domain/destinations/destination';
import type { ReplayAccepted } from '../../shared/app/admin/replays-admin';
import type { ReplaySelection, ReplaySummary, ReplayView } from '../../shared/domain/replay/replay';
import { apiError, connectError, objectOf, unexpected } from './answers';
import { Api, Credential, noCredential } from './credentials';

/** A small typed client over fetch for Herald's ingest and admin APIs. */

export interface ClientOptions {
  /** Herald's base URL, e.g. http://127.0.0.1:8080 (functions live at /ingest and /admin). */
  baseUrl: string;
  /** What each API is called with: a token, or an account key (`hk_…`) for either. */
  credentials: Partial<Record<Api, Credential>>;
  /**
   * Destinations, deliveries and replays under `/admin/accounts/{account}/…` instead of
   * `/admin/…` (the caller's own account: a key's; for the admin token, `default`, and every
   * account for replays).
   */
  account?: string;
  /** Defaults to the global fetch; tests pass their own. */
  fetch?: typeof fetch;
  timeoutMs?: number;
}

/**
 * A destination as the admin API shows it: `suspension` while it is suspended; `stats`
 * (its rolling hour) on GET /admin/destinations/{id} only.
 */
export type DestinationInfo = DestinationView & { stats?: DestinationStats };

/** DELETE /admin/destinations/{id}?deliveries=dead: whether it was deleted now, and how many deliveries of each status became DEAD. */
export type DeletedDestination = { id: string; deleted: boolean; dead: number; byStatus: { PENDING: number; IN_FLIGHT: number; QUEUED: number }; reason: string };

/** POST /admin/destinations/{id}/reactivate: the destination, active again, and how many QUEUED deliveries start over. */
export type ReactivateResult = { destination: DestinationInfo; redelivered: number };
export type SuspendResult = { destination: DestinationInfo };

/** Which deliveries `redeliver` starts over: the QUEUED ones (default) or the DEAD ones. */
export type RedeliverFrom = 'queued' | 'dead';

/** POST /admin/destinations/{id}/redeliver: how many deliveries in `status` start over. */
export type RedeliverResult = { redelivered: number; status: 'QUEUED' | 'DEAD' };

/** `reset`: the settings the replaced spec had that the new one left out (back to their defaults). */
export type PutDestinationResult = { created: boolean; destination: DestinationInfo & { secret?: string; reset?: ResetSetting[] } };

/** POST /admin/destinations/{id}/rotate-secret: the destination with its new secret (shown this once). */
export type RotateSecretResult = DestinationInfo & { secret: string };

/** A filter tried on events (POST …/filter-test). */
export type FilterTestResult = { filter: string; results: FilterTrial[] };

/** POST /admin/destinations/{id}/ordered-keys/skip: the event the key moved past. */
export type SkippedKey = Omit<HeldKeyView, 'why' | 'since'>;

/** One page of a destination's deliveries; `nextCursor` is absent on the last page. */
export type DeliveryPageInfo = { deliveries: DeliveryView[]; nextCursor?: string };

export interface DeliveryQuery {
  status?: DeliveryStatus;
  type?: string;
  eventId?: string;
  /** ISO 8601: published at or after. */
  from?: string;
  /** ISO 8601: published before. */
  to?: string;
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

export class HeraldClient {
  private readonly baseUrl: string;
  private readonly fetchFn: typeof fetch;

  /** Where destinations, deliveries and replays live: `/admin`, or `/admin/accounts/{account}`. */
  private readonly scope: string;

  constructor(private readonly options: ClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.fetchFn = options.fetch ?? fetch;
    this.scope = options.account === undefined ? '/admin' : `/admin/accounts/${encodeURIComponent(options.account)}`;
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
    const { status, body } = await this.request('admin', 'PUT', `${this.scope}/destinations/${encodeURIComponent(id)}`, {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(spec),
    });
    return { created: status === 201, destination: objectOf('PUT /admin/destinations', body) as unknown as PutDestinationResult['destination'] };
  }

  async listDestinations(): Promise<DestinationInfo[]> {
    const { body } = await this.request('admin', 'GET', `${this.scope}/destinations`);
    const list = (body as { destinations?: unknown } | undefined)?.destinations;
    if (!Array.isArray(list)) throw unexpected('GET /admin/destinations', body);
    return list as DestinationInfo[];
  }

  async getDestination(id: string): Promise<DestinationInfo> {
    const { body } = await this.request('admin', 'GET', `${this.scope}/destinations/${encodeURIComponent(id)}`);
    return objectOf('GET /admin/destinations/{id}', body) as unknown as DestinationInfo;
  }

  /**
   * DELETE /admin/destinations/{id}: refused (409) while it has deliveries to send, unless
   * `deliveries: 'dead'`, which makes them DEAD with dead letters and answers how many.
   */
  async deleteDestination(id: string, options: { deliveries?: 'dead' } = {}): Promise<DeletedDestination | undefined> {
    const call = 'DELETE /admin/destinations/{id}';
    const query = options.deliveries === 'dead' ? '?deliveries=dead' : '';
    const { status, body } = await this.request('admin', 'DELETE', `${this.scope}/destinations/${encodeURIComponent(id)}${query}`);
    if (status === 204) return undefined;
    const b = objectOf(call, body);
    if (typeof b.dead !== 'number' || typeof b.byStatus !== 'object' || b.byStatus === null) throw unexpected(call, body);
    return b as unknown as DeletedDestination;
  }

  /** POST /admin/destinations/{id}/reactivate: clears the suspension; its QUEUED deliveries are sent again. */
  async reactivateDestination(id: string): Promise<ReactivateResult> {
    const call = 'POST /admin/destinations/{id}/reactivate';
    const { body } = await this.request('admin', 'POST', `${this.scope}/destinations/${encodeURIComponent(id)}/reactivate`);
    const b = objectOf(call, body);
    if (typeof b.redelivered !== 'number' || typeof b.destination !== 'object' || b.destination === null) throw unexpected(call, body);
    return b as unknown as ReactivateResult;
  }

  /** POST /admin/destinations/{id}/suspend: suspended by hand; its events are QUEUED until it is reactivated. */
  async suspendDestination(id: string, reason?: string): Promise<SuspendResult> {
    const call = 'POST /admin/destinations/{id}/suspend';
    const { body } = await this.request('admin', 'POST', `${this.scope}/destinations/${encodeURIComponent(id)}/suspend`, {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(reason === undefined ? {} : { reason }),
    });
    const b = objectOf(call, body);
    if (typeof b.destination !== 'object' || b.destination === null) throw unexpected(call, body);
    return b as unknown as SuspendResult;
  }

  async rotateSecret(id: string, request: { secret?: string; graceSeconds?: number }): Promise<RotateSecretResult> {
    const call = 'POST /admin/destinations/{id}/rotate-secret';
    const { body } = await this.request('admin', 'POST', `${this.scope}/destinations/${encodeURIComponent(id)}/rotate-secret`, {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(request),
    });
    const b = objectOf(call, body);
    if (typeof b.secret !== 'string' || typeof b.id !== 'string') throw unexpected(call, body);
    return b as unknown as RotateSecretResult;
  }

  /** POST /admin/destinations/{id}/rotate-auth: new receiver auth, headers or tls, the replaced ones the fallback after a refusal for `graceSeconds`. */
  async rotateAuth(id: string, request: { auth?: unknown; headers?: unknown; tls?: unknown; graceSeconds?: number }): Promise<DestinationInfo> {
    const call = 'POST /admin/destinations/{id}/rotate-auth';
    const { body } = await this.request('admin', 'POST', `${this.scope}/destinations/${encodeURIComponent(id)}/rotate-auth`, {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(request),
    });
    return objectOf(call, body) as unknown as DestinationInfo;
  }

  /** POST /admin/destinations/{id}/filter-test: a filter tried on a given event or the account's samples; nothing saved. */
  async filterTest(id: string, request: { filter?: string; event?: unknown }): Promise<FilterTestResult> {
    const call = 'POST /admin/destinations/{id}/filter-test';
    const { body } = await this.request('admin', 'POST', `${this.scope}/destinations/${encodeURIComponent(id)}/filter-test`, {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(request),
    });
    const b = objectOf(call, body);
    if (typeof b.filter !== 'string' || !Array.isArray(b.results)) throw unexpected(call, body);
    return b as unknown as FilterTestResult;
  }

  /** POST /admin/destinations/{id}/redeliver: every delivery in `from` (QUEUED or DEAD) starts over. */
  async redeliver(id: string, from: RedeliverFrom): Promise<RedeliverResult> {
    const call = 'POST /admin/destinations/{id}/redeliver';
    const { body } = await this.request('admin', 'POST', `${this.scope}/destinations/${encodeURIComponent(id)}/redeliver`, {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ status: from }),
    });
    const b = objectOf(call, body);
    if (typeof b.redelivered !== 'number' || (b.status !== 'QUEUED' && b.status !== 'DEAD')) throw unexpected(call, body);
    return b as unknown as RedeliverResult;
  }

  /** GET /admin/destinations/{id}/ordered-keys/blocked: the keys held by their head event, oldest first. */
  async blockedKeys(id: string): Promise<HeldKeyView[]> {
    const call = 'GET /admin/destinations/{id}/ordered-keys/blocked';
    const { body } = await this.request('admin', 'GET', `${this.scope}/destinations/${encodeURIComponent(id)}/ordered-keys/blocked`);
    const keys = objectOf(call, body).keys;
    if (!Array.isArray(keys)) throw unexpected(call, body);
    return keys as HeldKeyView[];
  }

  /** POST /admin/destinations/{id}/ordered-keys/skip: the key moves past the event that holds it. */
  async skipKey(id: string, key: string): Promise<SkippedKey> {
    const call = 'POST /admin/destinations/{id}/ordered-keys/skip';
    const { body } = await this.request('admin', 'POST', `${this.scope}/destinations/${encodeURIComponent(id)}/ordered-keys/skip`, {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ key }),
    });
    const skipped = objectOf(call, body).skipped;
    if (typeof skipped !== 'object' || skipped === null || typeof (skipped as { deliveryId?: unknown }).deliveryId !== 'string') throw unexpected(call, body);
    return skipped as SkippedKey;
  }

  /** GET /admin/destinations/{id}/deliveries: one page. */
  async listDeliveries(destinationId: string, query: DeliveryQuery = {}): Promise<DeliveryPageInfo> {
    const params = new URLSearchParams();
    for (const name of ['status', 'type', 'eventId', 'from', 'to', 'limit', 'cursor'] as const) {
      const value = query[name];
      if (value !== undefined) params.set(name, String(value));
    }
    const qs = params.size > 0 ? `?${params.toString()}` : '';
    const { body } = await this.request('admin', 'GET', `${this.scope}/destinations/${encodeURIComponent(destinationId)}/deliveries${qs}`);
    const page = objectOf('GET /admin/destinations/{id}/deliveries', body);
    if (!Array.isArray(page.deliveries)) throw unexpected('GET /admin/destinations/{id}/deliveries', body);
    return {
      deliveries: page.deliveries as DeliveryView[],
      ...(typeof page.nextCursor === 'string' ? { nextCursor: page.nextCursor } : {}),
    };
  }

  /** GET …/deliveries/{id}; `account` overrides the client's (a delivery id names its account: `acme_orders.…`). */
  async getDelivery(deliveryId: string, account?: string): Promise<DeliveryView> {
    const scope = account === undefined ? this.scope : `/admin/accounts/${encodeURIComponent(account)}`;
    const { body } = await this.request('admin', 'GET', `${scope}/deliveries/${encodeURIComponent(deliveryId)}`);
    return objectOf('GET /admin/deliveries/{id}', body) as unknown as DeliveryView;
  }

  /** POST /admin/replays: the request is validated, recorded (queued) and published on the replay topic. */
  async startReplay(request: ReplaySelection): Promise<ReplayAccepted> {
    const call = 'POST /admin/replays';
    const { body } = await this.request('admin', 'POST', `${this.scope}/replays`, { headers: { 'content-type': 'application/json' }, body: JSON.stringify(request) });
    const b = objectOf(call, body);
    if (typeof b.id !== 'string') throw unexpected(call, body);
    return b as unknown as ReplayAccepted;
  }

  /** GET /admin/replays/{id}: the report as it stands. */
  async getReplay(id: string): Promise<ReplayView> {
    const call = 'GET /admin/replays/{id}';
    const { body } = await this.request('admin', 'GET', `${this.scope}/replays/${encodeURIComponent(id)}`);
    const b = objectOf(call, body);
    if (typeof b.status !== 'string' || typeof b.matched !== 'number') throw unexpected(call, body);
    return b as unknown as ReplayView;
  }

  /** GET /admin/replays: the newest first. */
  async listReplays(limit?: number): Promise<ReplaySummary[]> {
    const call = 'GET /admin/replays';
    const { body } = await this.request('admin', 'GET', `${this.scope}/replays${limit !== undefined ? `?limit=${limit}` : ''}`);
    const list = objectOf(call, body).replays;
    if (!Array.isArray(list)) throw unexpected(call, body);
    return list as ReplaySummary[];
  }

  /** One call: bearer auth, JSON answers, Herald's error shape → ApiError, no answer → ConnectError. */
  async request(api: Api, method: string, path: string, init: { headers?: Record<string, string>; body?: string | Buffer } = {}): Promise<{ status: number; body: unknown }> {
    const credential = this.options.credentials[api];
    if (!credential) throw noCredential(api);
    const url = `${this.baseUrl}${path}`;
    const timeoutMs = this.options.timeoutMs ?? 30_000;
    let res: Response;
    try {
      res = await this.fetchFn(url, {
        method,
        headers: { accept: 'application/json', ...init.headers, authorization: `Bearer ${credential.token}` },
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
    throw apiError({ api, method, path, baseUrl: this.baseUrl, credential }, res, body, json);
  }
}

/**
 * CloudEvents HTTP binding §3.1.3.2: header values carry printable ASCII only, so space,
 * '"', '%' and anything else travel percent-encoded as UTF-8 (Herald decodes them).
 */
export function headerValue(value: string): string {
  return value.replace(/[^\x21\x23-\x24\x26-\x7e]/gu, (c) => encodeURIComponent(c));
}
