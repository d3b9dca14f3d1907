import { CloudEvent, ValidationError as SdkValidationError } from 'cloudevents';
import { z } from 'zod';
import { buildEvent, formatPath, HeraldEvent, issuesFromZod, Parsed, ValidationIssue } from './event';
import { parseJsonBytes } from './json-body';

/**
 * CloudEvents HTTP protocol binding, both directions, over raw bytes:
 * ingest reads binary / structured / batch requests, delivery writes binary mode.
 */

export type HttpHeaders = Readonly<Record<string, string | string[] | undefined>>;

export const STRUCTURED_TYPE = 'application/cloudevents+json';
export const BATCH_TYPE = 'application/cloudevents-batch+json';

export type IngestMode = 'binary' | 'structured' | 'batch';

function header(headers: HttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v.join(', ') : v;
}

function mediaType(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase();
}

export function detectMode(headers: HttpHeaders): IngestMode | { error: string } {
  const type = mediaType(header(headers, 'content-type'));
  if (type === STRUCTURED_TYPE) return 'structured';
  if (type === BATCH_TYPE) return 'batch';
  if (type.startsWith('application/cloudevents')) {
    return { error: `unsupported CloudEvents format ${type}: use ${STRUCTURED_TYPE}, ${BATCH_TYPE}, or binary mode (ce-* headers)` };
  }
  if (header(headers, 'ce-specversion') !== undefined || header(headers, 'ce-id') !== undefined) return 'binary';
  return {
    error: `not a CloudEvent: send binary mode (ce-id, ce-source, ce-type, ce-specversion headers) or Content-Type ${STRUCTURED_TYPE} / ${BATCH_TYPE} (got content-type ${JSON.stringify(type || '(none)')})`,
  };
}

/** Parses an ingest request into events; all-or-nothing, every problem listed. */
export function parseHttpEvents(headers: HttpHeaders, body: Buffer, now: Date): Parsed<HeraldEvent[]> & { mode?: IngestMode } {
  const mode = detectMode(headers);
  if (typeof mode !== 'string') return { ok: false, issues: [{ path: 'content-type', message: mode.error }] };
  if (mode === 'binary') {
    const result = parseBinary(headers, body, now);
    return result.ok ? { ok: true, value: [result.value], mode } : { ...result, mode };
  }
  const parsed = parseJsonBytes(body);
  if (!parsed.ok) return { ok: false, mode, issues: parsed.problem === 'surrogate' ? parsed.issues : [{ path: 'body', message: parsed.message }] };
  const json = parsed.value;
  if (mode === 'structured') {
    const result = parseStructured(json, now, []);
    return result.ok ? { ok: true, value: [result.value], mode } : { ...result, mode };
  }
  if (!Array.isArray(json)) return { ok: false, mode, issues: [{ path: 'body', message: 'a batch must be a JSON array of CloudEvents' }] };
  // An empty batch is valid in a request (JSON event format §4): it accepts nothing.
  const events: HeraldEvent[] = [];
  const issues: ValidationIssue[] = [];
  json.forEach((item, i) => {
    const result = parseStructured(item, now, [i]);
    if (result.ok) events.push(result.value);
    else issues.push(...result.issues);
  });
  return issues.length ? { ok: false, mode, issues } : { ok: true, value: events, mode };
}

function parseBinary(headers: HttpHeaders, body: Buffer, now: Date): Parsed<HeraldEvent> {
  const raw: Record<string, unknown> = {};
  const headerIssues: ValidationIssue[] = [];
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (!lower.startsWith('ce-') || value === undefined) continue;
    const text = Array.isArray(value) ? value.join(', ') : value;
    const decoded = percentDecode(text);
    if ('problem' in decoded) headerIssues.push({ path: lower, message: decoded.problem });
    raw[lower.slice(3)] = 'value' in decoded ? decoded.value : text;
  }
  const contentType = header(headers, 'content-type');
  if (contentType) raw.datacontenttype = contentType;
  const result = conform(buildEvent(raw, body, now), (p) => `ce-${p}`);
  if (headerIssues.length === 0) return result;
  // The header's own problem says more than what its undecoded value then fails.
  const rest = result.ok ? [] : result.issues.filter((i) => !headerIssues.some((h) => h.path === i.path));
  return { ok: false, issues: [...headerIssues, ...rest] };
}

const structuredEnvelope = z.looseObject({
  data_base64: z.string({ error: 'data_base64 must be a base64 string' }).optional(),
});

function parseStructured(input: unknown, now: Date, prefix: number[]): Parsed<HeraldEvent> {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    return { ok: false, issues: [{ path: formatPath(prefix) || 'body', message: 'a CloudEvent must be a JSON object' }] };
  }
  const envelope = structuredEnvelope.safeParse(input);
  if (!envelope.success) return { ok: false, issues: issuesFromZod(envelope.error, prefix) };
  const { data, data_base64: dataBase64, ...attributes } = envelope.data as Record<string, unknown> & { data_base64?: string };
  const at = (field: string) => formatPath([...prefix, field]);
  let bytes: Buffer;
  if (dataBase64 !== undefined && data !== undefined) {
    return { ok: false, issues: [{ path: at('data'), message: 'an event carries data or data_base64, not both' }] };
  } else if (dataBase64 !== undefined) {
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(dataBase64) || dataBase64.length % 4 !== 0) {
      return { ok: false, issues: [{ path: at('data_base64'), message: 'data_base64 is not valid base64' }] };
    }
    bytes = Buffer.from(dataBase64, 'base64');
  } else if (data === undefined) {
    bytes = Buffer.alloc(0);
  } else {
    const contentType = typeof attributes.datacontenttype === 'string' ? attributes.datacontenttype : undefined;
    const isJson = contentType === undefined || /[/+]json(\s*;|$)/i.test(contentType);
    if (isJson) {
      bytes = Buffer.from(JSON.stringify(data), 'utf8');
      // The JSON event format says absent datacontenttype means application/json: make it explicit for the receiver.
      if (contentType === undefined) attributes.datacontenttype = 'application/json';
    } else if (typeof data === 'string') {
      bytes = Buffer.from(data, 'utf8');
    } else {
      return { ok: false, issues: [{ path: at('data'), message: `data must be a string when datacontenttype is ${contentType}` }] };
    }
  }
  return conform(buildEvent(attributes, bytes, now, prefix), (p) => p);
}

/**
 * Second opinion from the CloudEvents SDK's own validator, so Herald never accepts what
 * the reference implementation would reject; zod already gave the precise messages.
 */
function conform(result: Parsed<HeraldEvent>, rename: (path: string) => string): Parsed<HeraldEvent> {
  if (!result.ok) return { ok: false, issues: result.issues.map((i) => ({ ...i, path: rename(i.path) })) };
  try {
    new CloudEvent({ ...result.value.attributes }, true).validate();
  } catch (e) {
    const detail = e instanceof SdkValidationError ? JSON.stringify(e.errors ?? e.message) : (e as Error).message;
    return { ok: false, issues: [{ path: rename('event'), message: `rejected by the CloudEvents validator: ${detail}` }] };
  }
  return result;
}

/** Binary-mode request headers for delivering an event over HTTP. */
export function binaryHeaders(event: HeraldEvent): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(event.attributes)) {
    if (name === 'datacontenttype') headers['content-type'] = value;
    else headers[`ce-${name}`] = percentEncode(value);
  }
  return headers;
}

// CloudEvents HTTP binding 1.0.2 §3.1.3.2: header values carry only printable ASCII, so
// space, '"', '%' and anything outside it travel percent-encoded as UTF-8.
function percentEncode(value: string): string {
  return value.replace(/[^\x21\x23-\x24\x26-\x7e]/gu, (c) => encodeURIComponent(c));
}

/**
 * A ce-* header value as the binding carries it: printable ASCII, anything else percent-encoded
 * as UTF-8 (CloudEvents HTTP binding 3.1.3.2). Raw bytes outside printable ASCII (which Node
 * reads as Latin-1, turning UTF-8 into mojibake) and %-sequences that are not UTF-8 are refused;
 * a bare '%' a producer did not encode is kept as sent.
 */
function percentDecode(value: string): { value: string } | { problem: string } {
  if (/[^\x20-\x7e\t]/.test(value)) {
    return { problem: 'the header holds bytes outside printable ASCII: percent-encode them as UTF-8 (e.g. caf%C3%A9), as the CloudEvents HTTP binding requires' };
  }
  if (!/%[0-9A-Fa-f]{2}/.test(value)) return { value };
  try {
    return { value: decodeURIComponent(value.replace(/%(?![0-9A-Fa-f]{2})/g, '%25')) };
  } catch {
    return { problem: 'its percent-encoded bytes are not UTF-8' };
  }
}

/**
 * An event in the CloudEvents JSON format, the inverse of a structured ingest: JSON data as
 * JSON, other UTF-8 text as a string, anything else as `data_base64`.
 */
export function structuredEvent(event: HeraldEvent): Record<string, unknown> {
  const attributes: Record<string, unknown> = { ...event.attributes };
  if (event.data.length === 0) return attributes;
  const contentType = event.attributes.datacontenttype;
  const text = new TextDecoder('utf-8', { fatal: true });
  try {
    const decoded = text.decode(event.data);
    if (contentType === undefined || /[/+]json(\s*;|$)/i.test(contentType)) return { ...attributes, data: JSON.parse(decoded) as unknown };
    if (/^text\//i.test(contentType)) return { ...attributes, data: decoded };
  } catch {
    // Not UTF-8, or not the JSON it says it is: the bytes as they are.
  }
  return { ...attributes, data_base64: event.data.toString('base64') };
}
