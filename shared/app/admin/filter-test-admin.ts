import { z } from 'zod';
import { compileFilter, describeFilterProblem, FilterInput, MAX_FILTER_CHARS } from '../../domain/destinations/event-filter';
import { parseHttpEvents } from '../../domain/events/cloudevents-http';
import { HeraldEvent, issuesFromZod, matchesType } from '../../domain/events/event';
import { splitDestinationId } from '../../domain/ids';
import { Clock } from '../../ports/clock';
import { DestinationStore, EventTypeStore } from '../../ports/destinations';
import { notFound } from './destinations-admin';
import { Outcome } from '../support/outcome';

export const filterTestSchema = z.strictObject(
  {
    filter: z.string({ error: 'filter must be a CEL expression, as a string' }).max(MAX_FILTER_CHARS, `filter must be at most ${MAX_FILTER_CHARS} characters`).optional().describe("the expression to try; absent: the destination's own filter"),
    event: z
      .record(z.string(), z.unknown(), { error: 'event must be a CloudEvent in JSON (structured mode): {specversion, id, source, type, data?, …}' })
      .optional()
      .describe("a CloudEvent (structured JSON) to try it on; absent: the account's latest sample of each event type the destination takes"),
  },
  { error: 'the body takes filter and event only' },
);

/** One event the filter was tried on. */
export interface FilterTrial {
  type: string;
  id: string;
  /** `sample`: the account's latest event of its type (GET /admin/event-types); `given`: the request's. */
  from: 'sample' | 'given';
  /** Whether the destination would take it. */
  pass: boolean;
  /** Why it errs (a missing field, a type error): routing drops such an event and counts it. */
  error?: string;
  /** The sample was cut at 8 KB: its data is not there (a filter on it errs here, not when routing). */
  truncated?: true;
}

export interface FilterTestDeps {
  destinations: Pick<DestinationStore, 'get'>;
  eventTypes: Pick<EventTypeStore, 'list'>;
  clock: Clock;
}

/**
 * POST /admin/destinations/{id}/filter-test: the filter (given, else the destination's) tried on
 * a given event, or on the account's stored sample of each type the destination takes (every
 * type for a destination not created yet). Evaluated as routing evaluates it; nothing is written.
 */
export async function postFilterTest(deps: FilterTestDeps, id: string, body: unknown): Promise<Outcome<{ filter: string; results: FilterTrial[] }>> {
  const parsed = filterTestSchema.safeParse(body ?? {});
  if (!parsed.success) return { kind: 'invalid', body: { error: 'invalid filter-test request', issues: issuesFromZod(parsed.error) } };
  const destination = await deps.destinations.get(id);
  const source = parsed.data.filter ?? destination?.filter;
  if (source === undefined) {
    if (!destination) return notFound(id);
    return { kind: 'invalid', body: { error: 'the destination has no filter: give one to try', issues: [{ path: 'filter', message: 'required when the destination has none' }] } };
  }
  const compiled = compileFilter(source);
  if (!compiled.ok) return { kind: 'invalid', body: { error: 'invalid CEL filter', issues: [{ path: 'filter', message: describeFilterProblem(compiled.problem) }] } };
  let events: { event: HeraldEvent; from: FilterTrial['from']; truncated?: true }[];
  if (parsed.data.event !== undefined) {
    const given = parseHttpEvents({ 'content-type': 'application/cloudevents+json' }, Buffer.from(JSON.stringify(parsed.data.event)), deps.clock.now());
    if (!given.ok) return { kind: 'invalid', body: { error: 'invalid CloudEvent in event', issues: given.issues.map((i) => ({ ...i, path: i.path === 'body' ? 'event' : `event.${i.path}` })) } };
    events = given.value.map((event) => ({ event, from: 'given' as const }));
  } else {
    const samples = await deps.eventTypes.list(splitDestinationId(id).account);
    events = samples
      .filter((s) => destination === undefined || matchesType(destination.eventTypes, s.type))
      .flatMap((s) => {
        const { truncated, dataExcerpt: _cut, ...structured } = s.sample;
        const event = parseHttpEvents({ 'content-type': 'application/cloudevents+json' }, Buffer.from(JSON.stringify(structured)), deps.clock.now());
        return event.ok ? event.value.map((e) => ({ event: e, from: 'sample' as const, ...(truncated === true ? { truncated: true as const } : {}) })) : [];
      });
  }
  const results = events.map(({ event, from, truncated }): FilterTrial => {
    const verdict = compiled.filter.evaluate(new FilterInput(event));
    return { type: event.attributes.type, id: event.attributes.id, from, pass: verdict.pass, ...(!verdict.pass && verdict.error !== undefined ? { error: verdict.error } : {}), ...(truncated ? { truncated } : {}) };
  });
  return { kind: 'ok', body: { filter: source, results } };
}
