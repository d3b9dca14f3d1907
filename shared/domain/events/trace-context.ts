/**
 * The CloudEvents Distributed Tracing extension (`traceparent`, `tracestate`), whose values are
 * the W3C Trace Context headers of the same names. An event carries its trace this way through
 * lanes, bundles, batches and its delivery record, so an attempt made an hour later, on another
 * instance, joins the trace it was published in. Pure: no OpenTelemetry here.
 */

/** An event's (or a request's) trace context, in its W3C text form. */
export interface TraceCarrier {
  traceparent: string;
  tracestate?: string;
}

// version-traceid-parentid-flags; a later version may append fields after a dash (W3C: parse what is known).
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-[^\s]*)?$/;
const ALL_ZERO = /^0+$/;
// list-member: key "=" value; a key is lowercase (optionally tenant@system), a value printable ASCII without "," and "=".
const TRACESTATE_MEMBER = /^(?:[a-z][a-z0-9_\-*/]{0,255}|[a-z0-9][a-z0-9_\-*/]{0,240}@[a-z][a-z0-9_\-*/]{0,13})=[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]$/;
const TRACESTATE_MAX_MEMBERS = 32;
const TRACESTATE_MAX_CHARS = 512;

const TRACEPARENT_FORMAT = 'a W3C traceparent: 00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>, lowercase, ids not all zeros';

/** What is wrong with a `traceparent` value, undefined when it is one W3C Trace Context accepts. */
export function traceparentProblem(value: string): string | undefined {
  const m = TRACEPARENT.exec(value);
  if (!m) return `traceparent must be ${TRACEPARENT_FORMAT}`;
  const [, version, traceId, parentId, , rest] = m;
  if (version === 'ff') return 'traceparent version ff is invalid';
  if (version === '00' && rest !== undefined) return `traceparent of version 00 has exactly 4 fields: ${TRACEPARENT_FORMAT}`;
  if (ALL_ZERO.test(traceId!)) return 'traceparent trace id must not be all zeros';
  if (ALL_ZERO.test(parentId!)) return 'traceparent parent id must not be all zeros';
  return undefined;
}

/** What is wrong with a `tracestate` value, undefined when it is a W3C list of at most 32 `key=value` members. */
export function tracestateProblem(value: string): string | undefined {
  if (value.length > TRACESTATE_MAX_CHARS) return `tracestate is longer than ${TRACESTATE_MAX_CHARS} characters`;
  const members = value.split(',').map((m) => m.trim()).filter((m) => m !== '');
  if (members.length > TRACESTATE_MAX_MEMBERS) return `tracestate has more than ${TRACESTATE_MAX_MEMBERS} members`;
  const bad = members.find((m) => !TRACESTATE_MEMBER.test(m));
  return bad === undefined ? undefined : `tracestate member ${JSON.stringify(bad.slice(0, 40))} is not W3C key=value (lowercase key; value printable ASCII without "," or "=")`;
}

/** The problem with extension `name` when it is one of the tracing extension's, else undefined. */
export function traceExtensionProblem(name: string, value: string): string | undefined {
  if (name === 'traceparent') return traceparentProblem(value);
  if (name === 'tracestate') return tracestateProblem(value);
  return undefined;
}

/** The trace id (32 hex) of a valid traceparent, else undefined. */
export function traceIdOf(traceparent: string | undefined): string | undefined {
  if (traceparent === undefined || traceparentProblem(traceparent) !== undefined) return undefined;
  return traceparent.slice(3, 35);
}

/** The carrier an event's attributes hold, undefined when it has no (valid) traceparent. */
export function eventTraceCarrier(attributes: Readonly<Record<string, string | undefined>>): TraceCarrier | undefined {
  const traceparent = attributes.traceparent;
  if (traceparent === undefined || traceparentProblem(traceparent) !== undefined) return undefined;
  const tracestate = attributes.tracestate;
  return tracestate !== undefined && tracestateProblem(tracestate) === undefined ? { traceparent, tracestate } : { traceparent };
}

/**
 * A producer's trace context from its request's headers (W3C `traceparent`, `tracestate`). One
 * that is malformed is ignored, as W3C asks of a receiver: the request then starts a trace.
 */
export function headerTraceCarrier(headers: Readonly<Record<string, string | string[] | undefined>>): TraceCarrier | undefined {
  const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
  return eventTraceCarrier({ traceparent: first(headers.traceparent)?.trim(), tracestate: Array.isArray(headers.tracestate) ? headers.tracestate.join(',') : headers.tracestate });
}

/**
 * The event with `carrier` as its traceparent (and tracestate) when it carries none of its own:
 * from then on its attempts, however late, join the trace it was accepted in. One it carries is kept.
 */
export function withTraceContext<E extends { readonly attributes: Readonly<Record<string, string | undefined>> }>(event: E, carrier: TraceCarrier | undefined): E {
  if (!carrier || event.attributes.traceparent !== undefined) return event;
  const attributes = Object.freeze({ ...event.attributes, traceparent: carrier.traceparent, ...(carrier.tracestate !== undefined ? { tracestate: carrier.tracestate } : {}) });
  return Object.freeze({ ...event, attributes });
}

/**
 * Whose child an ingest request's span is: a lone event's own traceparent (structured mode, or
 * `ce-traceparent` in binary mode), else the request's `traceparent` header; undefined: a new trace.
 */
export function ingestParent(headers: Readonly<Record<string, string | string[] | undefined>>, events: readonly { readonly attributes: Readonly<Record<string, string | undefined>> }[] | undefined): TraceCarrier | undefined {
  const own = events?.length === 1 ? eventTraceCarrier(events[0]!.attributes) : undefined;
  return own ?? headerTraceCarrier(headers);
}
