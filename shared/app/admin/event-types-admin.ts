import { matchesType } from '../../domain/events/event';
import { splitDestinationId } from '../../domain/ids';
import { DestinationStore, EventTypeStore } from '../../ports/destinations';
import { destinationsOfAccount } from './destinations-admin';
import { Outcome } from '../support/outcome';

export interface EventTypeView {
  type: string;
  lastSeenAt: string;
  sample: Record<string, unknown>;
  /** The account's destination ids (as the API names them) whose `eventTypes` take it. */
  destinations: string[];
}

/**
 * GET /admin/event-types: the types the account published, each with its latest sample (kept by
 * app/destinations/event-type-samples.ts), and which of the account's destinations take it. `destinations`
 * is the store the caller sees: a portal session narrowed to some destinations names only those,
 * and with `takenOnly` sees only the types one of them takes. A type it sees shows the account's
 * latest event of that type: one those destinations take, so nothing they would not be sent.
 */
export async function listEventTypes(
  deps: { destinations: Pick<DestinationStore, 'listAccount'>; eventTypes: Pick<EventTypeStore, 'list'> },
  account: string,
  takenOnly = false,
): Promise<Outcome<{ eventTypes: EventTypeView[] }>> {
  const [samples, mine] = await Promise.all([deps.eventTypes.list(account), destinationsOfAccount(deps.destinations, account)]);
  const own = mine.map((d) => ({ id: splitDestinationId(d.id), eventTypes: d.eventTypes }));
  const eventTypes = samples
    .map((s) => ({
      type: s.type,
      lastSeenAt: s.lastSeenAt,
      sample: s.sample,
      destinations: own.filter((d) => matchesType(d.eventTypes, s.type)).map((d) => d.id.id),
    }))
    .filter((t) => !takenOnly || t.destinations.length > 0);
  return { kind: 'ok', body: { eventTypes } };
}
