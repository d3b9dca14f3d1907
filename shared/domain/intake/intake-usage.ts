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

/**
 * A journal batch the reconciler finished: its events, the deliveries its intake created per
 * account (the records that carry its id), and which of its events (indexes) an earlier intake of
 * the same event accepted first (a producer's resend after an answer it never got: counted there).
 */
export type ReconciledBatch = IntakeBatch & {
  deliveries?: Readonly<Record<string, number>>;
  resent?: readonly number[];
  /** Records it counts that carry the id of an intake never journaled (domain/intake/intake-ownership.ts): marked with its removal, so no other batch counts them. */
  adopted?: readonly string[];
};

/**
 * What journal batches count in their accounts' usage (docs/usage.md): each event once, in its
 * account (a key's events carry it), on the day its batch was accepted; Herald's own operational
 * types apart too (those under `operationalEventPrefix`, HERALD_OPERATIONAL_EVENT_PREFIX), and the deliveries their intake created (an event sent again by its producer
 * and journaled twice has its records once, from the first intake, and is accepted once, there: `resent`). Counted when the reconciler removes the batches, in the same commit: a batch
 * is removed once, so its events are counted once, whatever process died before or after.
 */
export function journaledUsage(batches: readonly Pick<ReconciledBatch, 'acceptedAt' | 'events' | 'deliveries' | 'resent'>[], operationalEventPrefix = DEFAULT_OPERATIONAL_PREFIX): JournaledUsage[] {
  const out = new Map<string, JournaledUsage>();
  const add = (account: string, day: string, counts: Partial<UsageCounts>) => {
    const key = `${account}\n${day}`;
    const row = out.get(key) ?? { account, day, counts: emptyUsage() };
    addUsage(row.counts, counts);
    out.set(key, row);
  };
  for (const batch of batches) {
    const day = usageDay(Date.parse(batch.acceptedAt));
    const resent = new Set(batch.resent ?? []);
    batch.events.forEach((event, i) => {
      if (!resent.has(i)) add(eventAccount(event.attributes), day, { eventsAccepted: 1, operationalEvents: event.attributes.type.startsWith(operationalEventPrefix) ? 1 : 0 });
    });
    for (const [account, deliveries] of Object.entries(batch.deliveries ?? {})) if (deliveries > 0) add(account, day, { deliveries });
  }
  return [...out.values()];
}
