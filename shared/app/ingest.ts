import { parseHttpEvents, HttpHeaders } from '../domain/cloudevents-http';
import { toPubSubMessage } from '../domain/cloudevents-pubsub';
import { eventSize, ValidationIssue } from '../domain/event';
import { Clock, Logger, MessageBus } from '../ports';

export interface IngestDeps {
  bus: MessageBus;
  clock: Clock;
  log: Logger;
  eventsTopic: string;
  maxBodyBytes: number;
  maxEventBytes: number;
}

export type IngestResult =
  | { status: 202; body: { accepted: string[] } }
  | { status: 400 | 413; body: { error: string; issues: ValidationIssue[] } }
  | { status: 503; body: { error: string; accepted: string[]; failed: { id: string; error: string }[] } };

/**
 * Validates a whole request before publishing any of it (all-or-nothing), then publishes
 * each event to the events topic. If Pub/Sub fails part-way the answer names exactly which
 * events were accepted, so a producer can resend only the rest.
 */
export async function ingest(deps: IngestDeps, headers: HttpHeaders, body: Buffer): Promise<IngestResult> {
  if (body.length > deps.maxBodyBytes) {
    return {
      status: 413,
      body: { error: `request body is ${body.length} bytes; the limit is ${deps.maxBodyBytes}`, issues: [{ path: 'body', message: `over ${deps.maxBodyBytes} bytes` }] },
    };
  }
  const parsed = parseHttpEvents(headers, body, deps.clock.now());
  if (!parsed.ok) {
    return { status: 400, body: { error: `invalid CloudEvent${parsed.mode === 'batch' ? ' batch' : ''}: ${parsed.issues.length} problem(s)`, issues: parsed.issues } };
  }
  const events = parsed.value;
  const oversized = events
    .map((e, i) => ({ size: eventSize(e), path: parsed.mode === 'batch' ? `[${i}]` : 'body' }))
    .filter((e) => e.size > deps.maxEventBytes);
  if (oversized.length) {
    return {
      status: 413,
      body: {
        error: `event over the ${deps.maxEventBytes}-byte limit (data plus attributes)`,
        issues: oversized.map((o) => ({ path: o.path, message: `event is ${o.size} bytes; the limit is ${deps.maxEventBytes}` })),
      },
    };
  }
  const results = await Promise.allSettled(events.map((e) => deps.bus.publish(deps.eventsTopic, toPubSubMessage(e))));
  const accepted: string[] = [];
  const failed: { id: string; error: string }[] = [];
  results.forEach((r, i) => {
    const id = events[i]!.attributes.id;
    if (r.status === 'fulfilled') {
      accepted.push(id);
      deps.log.debug('event accepted', { eventId: id, eventSource: events[i]!.attributes.source, eventType: events[i]!.attributes.type });
    } else failed.push({ id, error: (r.reason as Error).message });
  });
  if (failed.length) {
    deps.log.error('publishing to the events topic failed', { failed, accepted });
    return { status: 503, body: { error: 'the events topic is unavailable; resend the failed events', accepted, failed } };
  }
  return { status: 202, body: { accepted } };
}
