import { matchesType } from '../../domain/events/event';
import { splitDestinationId } from '../../domain/ids';
import { DestinationStore, EventTypeStore } from '../../ports/destinations';
import type { DestinationCounters } from '../destinations/destination-counters';
import { destinationsOfAccount } from './destinations-admin';
import { Outcome } from '../support/outcome';

/** A destination of a type that also has a filter: what its filter did over the rolling hour, with all the events of its types. */
export interface EventTypeFilterView {
  destination: string;
  filter: string;
  filterPassed1h: number;
  filtered1h: number;
  filterErrors1h: number;
}

export interface EventTypeView {
  type: string;
  lastSeenAt: string;
  sample: Record<string, unknown>;
  /** The account's destination ids (as the API names them) whose `eventTypes` take it: subscribed by type, before any filter. */
  destinations: string[];
  /** Those of `destinations` with a filter: an event of the type goes to each only if its filter takes it. */
  filtered: EventTypeFilterView[];
}

/**
 * GET /admin/event-types: the types the account published, each with its latest sample (kept by
 * app/destinations/event-type-samples.ts), and which of the account's destinations take it by
 * type, those with a filter named apart with their filter counts (one counter read for them all,
 * none for an account without filters). `destinations` is the store the caller sees: a portal
 * session narrowed to some destinations names only those, and with `takenOnly` sees only the
 * types one of them takes. A type it sees shows the account's latest event of that type: one
 * those destinations take, so nothing they would not be sent.
 */
export async function listEventTypes(
  deps: { destinations: Pick<DestinationStore, 'listAccount'>; eventTypes: Pick<EventTypeStore, 'list'>; counters: Pick<DestinationCounters, 'windows' | 'hourMs'> },
  account: string,
  takenOnly = false,
): Promise<Outcome<{ eventTypes: EventTypeView[] }>> {
  const [samples, mine] = await Promise.all([deps.eventTypes.list(account), destinationsOfAccount(deps.destinations, account)]);
  const own = mine.map((d) => ({ id: splitDestinationId(d.id).id, internalId: d.id, eventTypes: d.eventTypes, filter: d.filter }));
  const eventTypes = samples
    .map((s) => ({ type: s.type, lastSeenAt: s.lastSeenAt, sample: s.sample, takers: own.filter((d) => matchesType(d.eventTypes, s.type)) }))
    .filter((t) => !takenOnly || t.takers.length > 0);
  // Only the filtering destinations that take a listed type: their counts are per destination (all its types), read together.
  const filtering = [...new Map(eventTypes.flatMap((t) => t.takers.filter((d) => d.filter !== undefined).map((d) => [d.internalId, d] as const))).values()];
  const hour = filtering.length ? await deps.counters.windows(filtering.map((d) => ({ destinationId: d.internalId, windowMs: deps.counters.hourMs }))) : new Map<string, never>();
  const filterView = (d: (typeof own)[number]): EventTypeFilterView => {
    const settled = hour.get(d.internalId)?.settled;
    return { destination: d.id, filter: d.filter!, filterPassed1h: settled?.filterPassed ?? 0, filtered1h: settled?.filtered ?? 0, filterErrors1h: settled?.filterErrors ?? 0 };
  };
  return {
    kind: 'ok',
    body: {
      eventTypes: eventTypes.map(({ takers, ...t }) => ({ ...t, destinations: takers.map((d) => d.id), filtered: takers.filter((d) => d.filter !== undefined).map(filterView) })),
    },
  };
}
