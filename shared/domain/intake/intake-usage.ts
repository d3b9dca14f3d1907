import { eventAccount } from '../access/account';
import { addUsage, emptyUsage, UsageCounts, usageDay } from '../usage/usage';
import { DEFAULT_OPERATIONAL_PREFIX } from '../operational/operational-events';
import type { IntakeBatch } from './intake';

/** The usage a set of journal batches counts: per account and UTC day, what the usage documents take. */
export interface JournaledUsage {
  account: string;
  day: string;
  counts: UsageCounts;
}

/** A journal batch the reconciler finished: its events, and the deliveries its intake created per account (the records that carry its id). */
export type ReconciledBatch = IntakeBatch & { deliveries?: Readonly<Record<string, number>> };

/**
 * What journal batches count in their accounts' usage (docs/usage.md): each event once, in its
 * account (a key's events carry it), on the day its batch was accepted; Herald's own operational
 * types apart too (those under `operationalEventPrefix`, HERALD_OPERATIONAL_EVENT_PREFIX), and the deliveries their intake created (an event sent again by its producer
 * and journaled twice has its records once, from the first intake). Counted when the reconciler removes the batches, in the same commit: a batch
 * is removed once, so its events are counted once, whatever process died before or after.
 */
export function journaledUsage(batches: readonly Pick<ReconciledBatch, 'acceptedAt' | 'events' | 'deliveries'>[], operationalEventPrefix = DEFAULT_OPERATIONAL_PREFIX): JournaledUsage[] {
  const out = new Map<string, JournaledUsage>();
  const add = (account: string, day: string, counts: Partial<UsageCounts>) => {
    const key = `${account}\n${day}`;
    const row = out.get(key) ?? { account, day, counts: emptyUsage() };
    addUsage(row.counts, counts);
    out.set(key, row);
  };
  for (const batch of batches) {
    const day = usageDay(Date.parse(batch.acceptedAt));
    for (const event of batch.events) add(eventAccount(event.attributes), day, { eventsAccepted: 1, operationalEvents: event.attributes.type.startsWith(operationalEventPrefix) ? 1 : 0 });
    for (const [account, deliveries] of Object.entries(batch.deliveries ?? {})) if (deliveries > 0) add(account, day, { deliveries });
  }
  return [...out.values()];
}
