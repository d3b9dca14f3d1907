import { CompiledFilter, compileFilter, FilterInput, FilterVerdict } from '../../domain/destinations/event-filter';
import type { Destination } from '../../domain/destinations/destination';
import type { HeraldEvent } from '../../domain/events/event';
import type { SettledCounts } from '../../domain/stats/success-rate';
import type { Clock, Logger } from '../../ports/clock';

/** Where filter outcomes are counted (CounterWriter.filterCounted): in memory, written with the counters' next flush. */
export interface FilterTally {
  filterCounted(destinationId: string, counts: Pick<SettledCounts, 'filterPassed' | 'filtered' | 'filterErrors'>, at: Date): void;
}

/** Distinct filter texts held compiled: a filter is compiled once per text, whichever destinations (and versions) share it. */
const MAX_COMPILED = 10_000;

/**
 * The destinations' filters where events are routed (ingest, route, the reconciler): each
 * filter compiled once and kept (least recently used dropped past MAX_COMPILED), each event's
 * data parsed once for all the filters that read it. A destination saved with a filter has it
 * checked then (destination.ts); one that no longer compiles (stored by another version) drops
 * every event as an error, counted, rather than take events it was meant to refuse.
 */
export class DestinationFilters {
  private readonly compiled = new Map<string, CompiledFilter | { error: string }>();
  private readonly inputs = new WeakMap<HeraldEvent, FilterInput>();

  constructor(private readonly counting?: { tally: FilterTally; clock: Clock; log: Logger }) {}

  /** Whether any of `destinations` has a filter: an event for none of them costs no more than the type match. */
  static anyFilter(destinations: readonly Destination[]): boolean {
    return destinations.some((d) => d.filter !== undefined);
  }

  /**
   * The destinations of `matched` (each takes the event's type) whose filter takes `event`,
   * in their order; each filtering one's outcome counted. An evaluation error drops the event
   * for that destination only, and is counted, never thrown.
   */
  sift(matched: readonly Destination[], event: HeraldEvent): readonly Destination[] {
    if (!DestinationFilters.anyFilter(matched)) return matched;
    const at = this.counting?.clock.now();
    return matched.filter((d) => {
      if (d.filter === undefined) return true;
      const verdict = this.judge(d.filter, event);
      if (this.counting) {
        const { tally, log } = this.counting;
        tally.filterCounted(d.id, verdict.pass ? { filterPassed: 1 } : verdict.error !== undefined ? { filterErrors: 1 } : { filtered: 1 }, at!);
        if (!verdict.pass && verdict.error !== undefined) log.debug('filter error: event dropped for the destination', { destinationId: d.id, eventId: event.attributes.id, eventType: event.attributes.type, error: verdict.error });
      }
      return verdict.pass;
    });
  }

  /** Whether `destination` takes `event` by its filter, uncounted (the reconciler's expectation of what routing did). */
  takes(destination: Pick<Destination, 'filter'>, event: HeraldEvent): boolean {
    return destination.filter === undefined || this.judge(destination.filter, event).pass;
  }

  /** A filter's verdict on an event. */
  judge(source: string, event: HeraldEvent): FilterVerdict {
    const filter = this.filterOf(source);
    if ('error' in filter) return { pass: false, error: filter.error };
    let input = this.inputs.get(event);
    if (!input) this.inputs.set(event, (input = new FilterInput(event)));
    return filter.evaluate(input);
  }

  private filterOf(source: string): CompiledFilter | { error: string } {
    let filter = this.compiled.get(source);
    if (filter) {
      // Most recently used last: a Map keeps insertion order.
      this.compiled.delete(source);
    } else {
      const result = compileFilter(source);
      filter = result.ok ? result.filter : { error: `the stored filter does not compile: ${result.problem.message}` };
      if (this.compiled.size >= MAX_COMPILED) this.compiled.delete(this.compiled.keys().next().value!);
    }
    this.compiled.set(source, filter);
    return filter;
  }
}

/** Filters without counting: for tests and tools that route without a runtime. */
export const UNCOUNTED_FILTERS = new DestinationFilters();
