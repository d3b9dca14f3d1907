import { z } from 'zod';
import { ACCOUNT_EXTENSION, eventAccount } from '../access/account';
import type { Destination } from '../destinations/destination';
import { splitDestinationId } from '../ids';
import type { DeliveryRecord } from '../retry/delivery';
import type { ThresholdPolicy } from '../retry/delivery-policy';
import type { Suspension } from '../retry/suspension-record';
import type { RateCounts } from '../stats/success-rate';
import type { FailingMeasure, FailingState } from './failing-level';
import { HeraldEvent } from '../events/event';

/**
 * Herald's own operational events (docs/operational-events.md), named once: their kinds, the
 * CloudEvents type each gets under the deployment's prefix, and the schema of each one's data.
 * They are ordinary events of the account they concern, so an account receives them with an
 * ordinary destination subscribed to their types; this module only says what they hold.
 */

export const OPERATIONAL_KINDS = ['destination.failing', 'destination.suspended', 'destination.reactivated', 'delivery.dead', 'account.quota-exceeded'] as const;
export type OperationalKind = (typeof OPERATIONAL_KINDS)[number];

/** The prefix of their types when the operator sets none (HERALD_OPERATIONAL_EVENT_PREFIX). */
export const DEFAULT_OPERATIONAL_PREFIX = 'herald.';

/** Their CloudEvents `source`. */
export const OPERATIONAL_SOURCE = '/herald';

/**
 * The extension naming the destination (Herald's internal id) an operational event is about:
 * that destination is never sent the event, so a failing destination subscribed to its own
 * failures does not feed on them (no loop; mayReceive).
 */
export const CONCERNED_DESTINATION_EXTENSION = 'heralddestination';

export function operationalType(prefix: string, kind: OperationalKind): string {
  return `${prefix}${kind}`;
}

const lastErrorSchema = z.object({ at: z.string(), status: z.number().int().optional(), error: z.string(), bodyExcerpt: z.string().optional() });

/** What every event about a destination names: the account, the destination as the account names it, and where it sends. */
const aboutDestination = {
  account: z.string(),
  destinationId: z.string(),
  /** The destination's url or topic (absent only when the destination is gone: a death noticed after it was deleted). */
  target: z.string().optional(),
};

/** How many events of the same kind and destination (or account) the rate limit left unsent since the last one sent. */
const suppressed = z.number().int().nonnegative();

export const OPERATIONAL_DATA_SCHEMAS = {
  'destination.failing': z.object({
    ...aboutDestination,
    /** The fraction of the suspension threshold's failure rate crossed (one of HERALD_OPERATIONAL_FAILING_FRACTIONS). */
    fraction: z.number().positive().max(1),
    /** failures / (successes + failures) over the window. */
    failureRate: z.number().min(0).max(1),
    /** The failure rate at which the destination is suspended: 1 − the policy's threshold successRate. */
    suspendAboveFailureRate: z.number().min(0).max(1),
    successes: z.number().int().nonnegative(),
    failures: z.number().int().nonnegative(),
    windowSeconds: z.number().positive(),
    suppressed,
  }),
  'destination.suspended': z.object({
    ...aboutDestination,
    cause: z.string(),
    reason: z.string(),
    /** Who suspended it by hand (cause `manual`). */
    by: z.string().optional(),
    suspendedAt: z.string(),
    attempts1h: z.number().int().nonnegative(),
    successRate1h: z.number().min(0).max(1).optional(),
    recentErrors: z.array(lastErrorSchema),
    technicalEmail: z.string().optional(),
    reactivate: z.object({ api: z.string(), cli: z.string() }),
  }),
  'destination.reactivated': z.object({
    ...aboutDestination,
    reactivatedAt: z.string(),
    /** The suspension it came out of. */
    suspendedAt: z.string().optional(),
    cause: z.string().optional(),
  }),
  'delivery.dead': z.object({
    ...aboutDestination,
    deliveryId: z.string(),
    eventId: z.string(),
    eventSource: z.string(),
    eventType: z.string(),
    attempts: z.number().int().nonnegative(),
    reason: z.string(),
    lastError: lastErrorSchema.optional(),
    suppressed,
  }),
  'account.quota-exceeded': z.object({
    account: z.string(),
    /** publishPerSecond in force. */
    limit: z.number().positive(),
    /** `spent`: the second's quota was used up; `too-big`: one request held more events than a second's quota. */
    why: z.enum(['spent', 'too-big']),
    retryAfterSeconds: z.number().int().positive(),
    suppressed,
  }),
} as const satisfies Record<OperationalKind, z.ZodType>;

export type OperationalData<K extends OperationalKind> = z.infer<(typeof OPERATIONAL_DATA_SCHEMAS)[K]>;

/** One operational event, before it is an event: what it is about and for which account. */
export type OperationalNotice = {
  [K in OperationalKind]: {
    kind: K;
    /** Stable for one occurrence (a dead delivery's id, a suspension's time): emitted twice, it is one delivery per destination. */
    key: string;
    /** Herald's internal id of the destination it concerns; absent for an account's own. */
    concerns?: string;
    data: Omit<OperationalData<K>, 'suppressed'> & { suppressed?: number };
  };
}[OperationalKind];

/** Reports operational events; never throws (what it cannot publish it logs). */
export interface OperationalEmitter {
  emit(notice: OperationalNotice): Promise<void>;
}

/** Its CloudEvents id: the same in every account it goes to, and for every time it is emitted. */
export function operationalEventId(notice: Pick<OperationalNotice, 'kind' | 'key'>): string {
  return `${notice.kind}-${notice.key}`;
}

/** The notice as a CloudEvent of `account` (its own, or the operator's copy): JSON data, checked against its schema. */
export function operationalEvent(notice: OperationalNotice, at: Date, prefix: string, account: string): HeraldEvent {
  const data = OPERATIONAL_DATA_SCHEMAS[notice.kind].parse({ suppressed: 0, ...notice.data });
  const attributes: Record<string, string> = {
    specversion: '1.0',
    id: operationalEventId(notice),
    source: OPERATIONAL_SOURCE,
    type: operationalType(prefix, notice.kind),
    time: at.toISOString(),
    datacontenttype: 'application/json',
    [ACCOUNT_EXTENSION]: account,
  };
  if ('destinationId' in notice.data) attributes.subject = notice.data.destinationId;
  if (notice.concerns !== undefined) attributes[CONCERNED_DESTINATION_EXTENSION] = notice.concerns;
  return Object.freeze({ attributes: Object.freeze(attributes as HeraldEvent['attributes']), data: Buffer.from(JSON.stringify(data)) });
}

/**
 * Whether an event matched to the destination by its eventTypes may go to it. Any event but
 * Herald's own, yes. An operational event only to a destination that names its type (exactly or
 * by a prefix: `herald.*`, `herald.destination.*`), so a catch-all destination (no eventTypes, or
 * `*`) is not sent Herald's news unasked; and never to the destination it is about.
 */
export function mayReceive(event: Pick<HeraldEvent, 'attributes'>, destination: { id: string; eventTypes: readonly string[] }): boolean {
  if (!isOperational(event)) return true;
  if (event.attributes[CONCERNED_DESTINATION_EXTENSION] === destination.id) return false;
  const type = event.attributes.type;
  return destination.eventTypes.some((p) => p !== '*' && (p === type || (p.endsWith('*') && type.startsWith(p.slice(0, -1)))));
}

/** What ingest made of Herald's own events: `accepted`, `unrouted` (no destination would receive them: nothing written), or the refusal's kind and error. */
export interface Admission {
  kind: string;
  error?: string;
}

/** Of the destinations an event matched, those it may go to (mayReceive); the same array for any event but Herald's own. */
export function receiversOf<D extends { id: string; eventTypes: readonly string[] }>(event: Pick<HeraldEvent, 'attributes'>, matched: readonly D[]): readonly D[] {
  return isOperational(event) ? matched.filter((d) => mayReceive(event, d)) : matched;
}

/** Whether the event is one of Herald's operational events (its dead letter is then announced by none: no chain of notices about notices). */
export function isOperational(event: Pick<HeraldEvent, 'attributes'>): boolean {
  return event.attributes.source === OPERATIONAL_SOURCE && OPERATIONAL_KINDS.some((k) => event.attributes.id.startsWith(`${k}-`));
}

/** Each operational event's notice, from the state that caused it (the catalogue: OPERATIONAL_KINDS above). */

function about(destination: Pick<Destination, 'id' | 'url' | 'topic'>) {
  const { account, id } = splitDestinationId(destination.id);
  const target = destination.url ?? destination.topic;
  return { account, destinationId: id, ...(target === undefined ? {} : { target }) };
}

export function failingNotice(destination: Destination, state: FailingState, measure: FailingMeasure, counts: RateCounts, threshold: ThresholdPolicy): OperationalNotice {
  return {
    kind: 'destination.failing',
    key: `${destination.id}-${state.fraction}-${state.at}`,
    concerns: destination.id,
    data: {
      ...about(destination),
      fraction: state.fraction,
      failureRate: measure.failureRate,
      suspendAboveFailureRate: measure.suspendAboveFailureRate,
      successes: counts.successes,
      failures: counts.failures,
      windowSeconds: threshold.windowMs / 1000,
    },
  };
}

export function suspendedNotice(destination: Destination & { suspension: Suspension }): OperationalNotice {
  const s = destination.suspension;
  return {
    kind: 'destination.suspended',
    key: `${destination.id}-${s.at}`,
    concerns: destination.id,
    data: {
      ...about(destination),
      cause: s.cause,
      reason: s.reason,
      ...(s.by === undefined ? {} : { by: s.by }),
      suspendedAt: s.at,
      attempts1h: s.attempts1h,
      ...(s.successRate1h === undefined ? {} : { successRate1h: s.successRate1h }),
      recentErrors: s.recentErrors,
      ...(destination.technicalEmail ? { technicalEmail: destination.technicalEmail } : {}),
      reactivate: s.notification.reactivate,
    },
  };
}

/** `was`: the suspension it came out of, when known. */
export function reactivatedNotice(destination: Destination, reactivatedAt: string, was: Suspension | undefined): OperationalNotice {
  return {
    kind: 'destination.reactivated',
    key: `${destination.id}-${reactivatedAt}`,
    concerns: destination.id,
    data: { ...about(destination), reactivatedAt, ...(was ? { suspendedAt: was.at, cause: was.cause } : {}) },
  };
}

/** A DEAD delivery: keyed by its id, so the reconciler's second dead letter makes the same event. */
export function deadNotice(record: DeliveryRecord, event: HeraldEvent): OperationalNotice {
  const { id } = splitDestinationId(record.destinationId);
  return {
    kind: 'delivery.dead',
    key: record.id,
    concerns: record.destinationId,
    data: {
      account: eventAccount(event.attributes),
      destinationId: id,
      deliveryId: record.id,
      eventId: event.attributes.id,
      eventSource: event.attributes.source,
      eventType: event.attributes.type,
      attempts: record.attempts,
      reason: record.reason ?? 'dead',
      ...(record.lastError ? { lastError: record.lastError } : {}),
    },
  };
}
