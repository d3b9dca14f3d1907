/**
 * What usage counts, per account and UTC day, and how counts add up (docs/usage.md). Imports
 * nothing: the cost model (usage-cost.ts) and the answer's rows (usage.ts) stand on it.
 */

/** How an attempt ended, as usage counts it (`attempts` is keyed by these). */
export const USAGE_OUTCOMES = ['success', 'http-error', 'timeout', 'network', 'refused'] as const;
export type UsageOutcome = (typeof USAGE_OUTCOMES)[number];

/** What one account used in one day (or several, summed). */
export interface UsageCounts {
  eventsAccepted: number;
  /** Events refused: over quota, bad input, unknown account (a request refused before its events were read counts as one). */
  eventsRefused: number;
  /** Of the accepted, those of Herald's own operational types (their type starts with HERALD_OPERATIONAL_EVENT_PREFIX, `herald.` by default). */
  operationalEvents: number;
  /** (event, destination) pairs ingest or route sent on: each becomes one delivery record. */
  deliveries: number;
  /** Deliveries whose record became DELIVERED. */
  delivered: number;
  /** Requests (and topic publishes) made to destinations, by outcome. */
  attempts: Partial<Record<UsageOutcome, number>>;
  /** Body bytes of those requests and publishes (a batch's whole body once). */
  bytesSent: number;
}

/** One day's row of the usage answer (the names docs/usage.md gives); a month's row has the month's first day as `date`. */
export interface UsageDay extends Omit<UsageCounts, 'attempts'> {
  date: string;
  attempts: Record<string, number>;
  modeledCostUsd: number;
}

export const emptyUsage = (): UsageCounts => ({ eventsAccepted: 0, eventsRefused: 0, operationalEvents: 0, deliveries: 0, delivered: 0, attempts: {}, bytesSent: 0 });

const SCALARS = ['eventsAccepted', 'eventsRefused', 'operationalEvents', 'deliveries', 'delivered', 'bytesSent'] as const;

/** `into` plus `add`, in place. */
export function addUsage(into: UsageCounts, add: Partial<UsageCounts>): UsageCounts {
  for (const k of SCALARS) into[k] += add[k] ?? 0;
  for (const [o, n] of Object.entries(add.attempts ?? {}) as [UsageOutcome, number][]) into.attempts[o] = (into.attempts[o] ?? 0) + n;
  return into;
}

/** Whether a delta counts nothing (not worth a write). */
export function isEmptyUsage(u: Partial<UsageCounts>): boolean {
  return SCALARS.every((k) => !u[k]) && Object.values(u.attempts ?? {}).every((n) => !n);
}
