import type { BatchSpec } from '../../shared/domain/modes/batching';
import type { DeliveryRecord, LastError } from '../../shared/domain/retry/delivery';
import type { OrderingSpec } from '../../shared/domain/modes/ordering';

/** What the admin API answers, as far as the console reads it. */

export interface Account {
  id: string;
  name: string;
  technicalEmail?: string;
  createdAt?: string;
}

export interface KeyRecord {
  id: string;
  name: string;
  scopes: string[];
  createdAt?: string;
  expiresAt?: string;
  lastUsedAt?: string;
  createdBy?: string;
  key?: string;
}

export type { LastError } from '../../shared/domain/retry/delivery';

import type { ReceiverView } from '../../shared/domain/destinations/receiver-spec';

export interface Destination {
  id: string;
  account: string;
  url?: string;
  topic?: string;
  eventTypes: string[];
  filter?: string;
  policy: unknown;
  failureMode?: 'retry' | 'queue';
  technicalEmail?: string;
  rate?: { min?: number; max?: number };
  lane?: 'dedicated';
  /** Events many to a request (shared/domain/modes/batching.ts); absent: one event per request. */
  batch?: BatchSpec;
  /** Events with the same partitionkey one at a time, in order (shared/domain/modes/ordering.ts); absent: unordered. */
  ordering?: OrderingSpec;
  status: 'active' | 'suspended';
  suspension?: { cause?: string; reason?: string; at?: string; by?: string; lastError?: LastError };
  /** The fraction of its suspension threshold's failure rate it last crossed (`herald.destination.failing`); absent: none. */
  failing?: { fraction: number; at: string; failureRate: number };
  previousSecrets?: { expiresAt: string }[];
  /** How the receiver is reached, without a credential (shared/domain/destinations/receiver-spec.ts ReceiverView). */
  headers?: ReceiverView['headers'];
  auth?: ReceiverView['auth'];
  tls?: ReceiverView['tls'];
  signature?: ReceiverView['signature'];
  previousAuth?: { type: string; expiresAt: string };
  /** Until when the replaced headers and client certificate are tried after a refusal (rotate-auth). */
  previousHeaders?: { expiresAt: string };
  previousTls?: { expiresAt: string };
  reactivatedAt?: string;
  createdAt: string;
  updatedAt: string;
  secret?: string;
  stats?: { attempts1h: number; successRate1h?: number; lastErrors: LastError[]; rate: number; rateBounds: { min: number; max: number }; pausedUntil?: string; filterPassed1h?: number; filtered1h?: number; filterErrors1h?: number };
}

export { DELIVERY_STATUSES, type DeliveryStatus } from '../../shared/domain/delivery-statuses';

/** GET …/destinations/{id}/ordered-keys/blocked: a key held by its head event (the API's own type). */
export type { HeldKeyView as HeldKey } from '../../shared/app/admin/ordered-keys-admin';

/** A delivery as the admin API shows it (shared/app/deliveries-admin.ts): the record, its destination by the account's own id; with its event in the queued and dead listings. */
export type Delivery = Omit<DeliveryRecord, 'event'> & { account?: string; event?: Record<string, unknown> };

export interface Page<T> {
  nextCursor?: string;
  items: T[];
}

export interface Replay {
  id: string;
  status: 'queued' | 'running' | 'done' | 'incomplete' | 'failed' | 'rejected';
  request: Record<string, unknown>;
  dryRun: boolean;
  scanned?: number;
  matched?: number;
  redelivered?: number;
  wouldRedeliver?: number;
  skipped?: number;
  failed?: number;
  createdAt?: string;
  startedAt?: string;
  endedAt?: string;
  ended?: string;
  error?: string;
}
export const FINAL_REPLAY = new Set(['done', 'incomplete', 'failed', 'rejected']);

export interface Stats {
  window: string;
  bucketMs: number;
  /** With `?destination=`: that destination's numbers alone. */
  destination?: string;
  /** p50Ms/p99Ms: the point's attempt latency, when it has any. */
  series: { start: string; attempts: number; successes: number; failures: number; p50Ms?: number; p99Ms?: number; dead?: number; queued?: number }[];
  successRate?: number;
  latencyMs?: { p50?: number; p99?: number } | number;
  /** Absent when asked with `counts=false` (the sparklines). */
  queued?: number;
  dead?: number;
}

export interface Theme {
  brandColor?: string;
  logoUrl?: string;
  displayName?: string;
}

/** GET /admin/accounts/{id}/portal-sessions: a live session, with its link's rights (the API's own type). */
export type { PortalSessionView as PortalSessionItem } from '../../shared/app/admin/portal-admin';

/** GET /admin/accounts/{id}/portal-links: a live link, with its live sessions (the API's own type). */
export type { PortalLinkView as PortalLinkItem } from '../../shared/app/admin/portal-admin';

export interface PortalSession {
  sessionToken: string;
  account: { id: string; name: string };
  readOnly?: boolean;
  scopes?: string[];
  destinations?: string[];
  expiresAt?: string;
  returnUrl?: string;
  theme?: Theme;
}

/** GET /admin/event-types: a type the account published, its latest event, and who takes it. */
export interface EventType {
  type: string;
  lastSeenAt: string;
  /** CloudEvents JSON; over 8 KB: the attributes, `truncated` and a `dataExcerpt`. */
  sample: Record<string, unknown>;
  /** Subscribed by type, before any filter. */
  destinations: string[];
  /** Those of `destinations` with a filter, and what it did over the last hour (all the destination's types). */
  filtered?: EventTypeFilter[];
}

export interface EventTypeFilter {
  destination: string;
  filter: string;
  filterPassed1h: number;
  filtered1h: number;
  filterErrors1h: number;
}

/** GET /admin/overview: Herald's own health over a window (the operator's only). */
export interface HealthOverview {
  window: '1m' | '5m' | '15m' | '1h';
  source: 'process' | 'cloud-monitoring' | 'none';
  acceptedPerSecond: number | null;
  deliveredPerSecond: number | null;
  endToEndP99Ms: number | null;
  deadLettered: number | null;
  lanesOldestBacklogSeconds: number | null;
  lanesBacklogBasis?: string;
  counts?: { accepted: number; delivered: number };
  coveredSeconds?: number;
  reason?: string;
  asOf: string;
}
