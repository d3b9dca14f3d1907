import { eventTraceCarrier, TraceCarrier } from '../../domain/events/trace-context';
import { HeraldEvent } from '../../domain/events/event';
import { DeliveryRecord } from '../../domain/retry/delivery';
import { HERALD_ATTRIBUTE_PREFIX, PubSubMessage } from '../../domain/events/cloudevents-pubsub';
import { LANE_ATTRIBUTES } from '../../domain/intake/lane-message';
import { SpanAttributes, WorkSpan } from '../../ports/tracing';
import { SPANS } from '../../telemetry-catalogue';
import { tracing } from '../../tracing';

/** What an attempt's span reads of its delivery (app/delivery/delivery-context.ts Target; not imported: delivery imports these spans). */
interface AttemptOf {
  id: string;
  event: HeraldEvent;
  destination: { topic?: string };
}

/** What an attempt's span reads of how it ended (DeliverOutcome). */
interface EndedAs {
  kind: string;
  decision?: string;
  status?: string;
}

/**
 * The spans Herald's use cases run in (names: telemetry-catalogue.ts SPANS), each wrapped around
 * the work it names by one call, so the work reads as it did. An event's own span context is its
 * traceparent extension (domain/events/trace-context.ts): every span about one event descends
 * from it, whenever and wherever it runs.
 */

/** The attributes that name an event on a span (the CloudEvents semantic conventions). */
export function eventAttributes(event: Pick<HeraldEvent, 'attributes'>): SpanAttributes {
  return { 'cloudevents.event_id': event.attributes.id, 'cloudevents.event_source': event.attributes.source, 'cloudevents.event_type': event.attributes.type };
}

/**
 * One attempt of one delivery, in the event's trace (its traceparent, carried on the lane message
 * and the record: a retry an hour later joins it). The send inside is a client span of its own
 * (adapters/traced-senders.ts); this one says what Herald made of it.
 */
export function inAttemptSpan<O extends EndedAs>(t: AttemptOf, work: () => Promise<O>): Promise<O> {
  const attributes = { ...eventAttributes(t.event), 'herald.delivery.id': t.id, 'herald.destination.kind': t.destination.topic !== undefined ? 'topic' : 'webhook' };
  return tracing().inSpan(SPANS.attempt, { kind: 'consumer', parent: eventTraceCarrier(t.event.attributes) ?? null, attributes }, async (span) => {
    const outcome = await work();
    span.set({ 'herald.outcome': outcome.kind });
    if (outcome.kind === 'attempted' && outcome.decision !== undefined) {
      span.set({ 'herald.decision': outcome.decision, 'herald.delivery.status': outcome.status });
      if (outcome.decision !== 'delivered') span.fail(`attempt failed: ${outcome.decision}, now ${outcome.status}`);
    }
    return outcome;
  });
}

/**
 * One attempt of a batch: a trace of its own (its members' may be many), linked to each member's,
 * so each event's trace leads to the batch that carried it.
 */
export function inBatchSpan<T>(batchId: string, events: readonly Pick<HeraldEvent, 'attributes'>[], work: () => Promise<T>): Promise<T> {
  const links = events.flatMap((e) => eventTraceCarrier(e.attributes) ?? []);
  return tracing().inSpan(SPANS.attempt, { kind: 'consumer', parent: null, links, attributes: { 'herald.batch.id': batchId, 'messaging.batch.message_count': events.length } }, () => work());
}

/**
 * One publish onto a lane, under whatever span is active (ingest, a pump claim, a hand-over);
 * none active: in the trace of the event the message carries (its `ce-traceparent`).
 */
export function inLaneSpan<T>(topic: string, message: PubSubMessage, work: () => Promise<T>): Promise<T> {
  const a = message.attributes;
  const members = a[`${HERALD_ATTRIBUTE_PREFIX}${LANE_ATTRIBUTES.bundle}`];
  const attributes: SpanAttributes = {
    'messaging.system': 'gcp_pubsub',
    'messaging.operation.type': 'send',
    'messaging.destination.name': topic,
    'messaging.batch.message_count': members !== undefined ? Number(members) : undefined,
    'cloudevents.event_id': a['ce-id'],
    'cloudevents.event_type': a['ce-type'],
  };
  const parent = tracing().activeCarrier() === undefined ? eventTraceCarrier({ traceparent: a['ce-traceparent'], tracestate: a['ce-tracestate'] }) : undefined;
  return tracing().inSpan(SPANS.lanePublish, { kind: 'producer', ...(parent ? { parent } : {}), attributes }, () => work());
}

/** The pump's claim of one due delivery and its send to the lane, in the delivery's event's trace. */
export function inPumpClaimSpan<T>(record: Pick<DeliveryRecord, 'id' | 'attempts'> & { event?: HeraldEvent }, work: () => Promise<T>): Promise<T> {
  const attributes = { 'herald.delivery.id': record.id, 'herald.delivery.attempts': record.attempts, ...(record.event ? eventAttributes(record.event) : {}) };
  const parent = record.event ? eventTraceCarrier(record.event.attributes) : undefined;
  return tracing().inSpan(SPANS.pumpClaim, { parent: parent ?? null, attributes }, () => work());
}

/** One reconciler round: a trace of its own. */
export function inReconcileSpan<T extends object>(work: () => Promise<T>): Promise<T> {
  return tracing().inSpan(SPANS.reconcileRound, { parent: null }, async (span) => {
    const report = await work();
    span.set(numbersOf(report));
    return report;
  });
}

/** One replay run: a trace of its own, which the deliveries it sends again do not join (each goes on in its event's trace). */
export function inReplaySpan<T>(replayId: string, work: () => Promise<T>): Promise<T> {
  return tracing().inSpan(SPANS.replay, { parent: null, attributes: { 'herald.replay.id': replayId } }, () => work());
}

/**
 * The ingest request's span: a child of the producer's context (the event's own traceparent, else
 * the request's `traceparent` header), never a new trace when one is given; started when the
 * request began, found after the body is parsed.
 */
export function inIngestSpan<T>(parent: TraceCarrier | undefined, startTime: Date, work: (span: WorkSpan) => Promise<T>): Promise<T> {
  return tracing().inSpan(SPANS.ingest, { kind: 'server', parent: parent ?? null, startTime, attributes: { 'http.request.method': 'POST', 'http.route': '/ingest' } }, work);
}

/** The report's numbers as `herald.<key>` attributes. */
function numbersOf(report: object): SpanAttributes {
  const out: SpanAttributes = {};
  for (const [k, v] of Object.entries(report)) if (typeof v === 'number') out[`herald.${k}`] = v;
  return out;
}
