import { parseHttpEvents, HttpHeaders } from '../domain/cloudevents-http';
import { toPubSubMessage } from '../domain/cloudevents-pubsub';
import { eventSize, ValidationIssue } from '../domain/event';
import { Clock, Logger, MessageBus } from '../ports';
import { IntakeJournal } from './intake-journal';
import { LANE_ATTRIBUTES } from './deliver';

export interface IngestDeps {
  bus: MessageBus;
  /** Herald's own record of what it accepted (domain/intake.ts), which the reconciler checks. */
  journal: IntakeJournal;
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
 * Validates a whole request before publishing any of it (all-or-nothing), then, at once,
 * journals the events (Firestore) and publishes each to the events topic. An event is
 * accepted once both hold it: the topic carries it on, the journal lets the reconciler
 * notice if it never reaches a destination. If Pub/Sub fails part-way the answer names
 * exactly which events were accepted, so a producer can resend only the rest; if the journal
 * fails, none is (a resent event that was published meanwhile is recognised as a duplicate).
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
  const journaled = deps.journal.add(events);
  const [journal, ...results] = await Promise.allSettled([
    journaled.durable,
    ...events.map((e, i) => deps.bus.publish(deps.eventsTopic, toPubSubMessage(e, { [LANE_ATTRIBUTES.intake]: journaled.ids[i]! }))),
  ]);
  if (journal.status === 'rejected') {
    const error = (journal.reason as Error).message;
    deps.log.error('the intake journal could not record the events (Firestore); none accepted', { error, eventIds: events.map((e) => e.attributes.id) });
    return {
      status: 503,
      body: {
        error: 'Herald could not record the events durably; resend them (a resent event is not delivered twice)',
        accepted: [],
        failed: events.map((e) => ({ id: e.attributes.id, error: `intake journal: ${error}` })),
      },
    };
  }
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
