import { costPerMillion, DEFAULT_ASSUMPTIONS, GCP_LIST_PRICES, PerEventUsage } from './cost-model';
import type { UsageCounts } from './usage-counts';

/**
 * The modeled GCP cost of an account's usage: the bench's cost model (cost-model.ts, the same
 * prices and formulas `npm run bench -- --cost-only` prices a run with) applied to what the
 * usage counts, in the units GCP bills, from these per-unit figures. They are the cost bench's
 * measurements at K = 100 (docs/benchmarks.md, "Cost per event") rounded up, split into what
 * an accepted event, a delivery and an attempt past a delivery's first cost: a model, not a
 * bill (free tiers, discounts and fixed costs — the pump each minute — are left out).
 */
export const USAGE_UNIT_COSTS = {
  /** An accepted event: its share of the journal write and the lane publish (one message per destination, bundled per request). */
  event: { reads: 0.01, writes: 0.02, deletes: 0.01, publishMessages: 0.05, cpuSeconds: 0.0015 },
  /** A delivery and its first attempt: the push, the grouped record write, the record's TTL delete and its storage over 7 days. */
  delivery: { reads: 0.05, writes: 0.1, deletes: 0.1, pushMessages: 0.5, invocations: 0.5, cpuSeconds: 0.002, storedBytes: 1500, retentionDays: 7 },
  /** Each attempt past a delivery's first (a retry): a record of its own, read, written, pushed again through a retry lane. */
  retry: { reads: 2, writes: 2, publishMessages: 1, pushMessages: 1, invocations: 1, cpuSeconds: 0.003 },
} as const;

const attemptsOf = (u: UsageCounts) => Object.values(u.attempts).reduce((a, b) => a + (b ?? 0), 0);

/** The usage in GCP's billed units, in all (not per event). */
export function billedUnits(u: UsageCounts): PerEventUsage {
  const { event, delivery, retry } = USAGE_UNIT_COSTS;
  const retries = Math.max(0, attemptsOf(u) - u.deliveries);
  const deliveries = u.deliveries;
  const publishMessages = u.eventsAccepted * event.publishMessages + retries * retry.publishMessages;
  const pushMessages = deliveries * delivery.pushMessages + retries * retry.pushMessages;
  return {
    firestore: {
      reads: u.eventsAccepted * event.reads + deliveries * delivery.reads + retries * retry.reads,
      writes: u.eventsAccepted * event.writes + deliveries * delivery.writes + retries * retry.writes,
      deletes: u.eventsAccepted * event.deletes + deliveries * delivery.deletes,
    },
    pubsub: {
      // The bodies sent went through a lane first (published, then pushed): each byte twice.
      publish: { messages: publishMessages, bytes: u.bytesSent },
      delivery: { messages: pushMessages, bytes: u.bytesSent },
    },
    invocations: u.eventsAccepted > 0 || deliveries > 0 ? deliveries * delivery.invocations + retries * retry.invocations : 0,
    cpuSeconds: u.eventsAccepted * event.cpuSeconds + deliveries * delivery.cpuSeconds + retries * retry.cpuSeconds,
    storedGiBMonths: ((deliveries * delivery.storedBytes) / 2 ** 30) * (delivery.retentionDays / (365.25 / 12)),
  };
}

/** US dollars (Firestore us-central1, request-based billing, list prices), rounded to a millionth of a dollar. */
export function usageCostUsd(u: UsageCounts): number {
  // costPerMillion prices a per-event usage per million events: the whole usage priced so is a million times its cost.
  const dollars = costPerMillion(billedUnits(u), GCP_LIST_PRICES, DEFAULT_ASSUMPTIONS, { firestore: 'regional', billing: 'request' }).total / 1_000_000;
  return Math.round(dollars * 1_000_000) / 1_000_000;
}
