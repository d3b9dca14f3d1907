import type { AttemptDetail, AttemptResult } from './delivery';
import type { Decision } from './retry-decision';
import { traceIdOf } from '../events/trace-context';

export type { AttemptDetail };


/** Attempts kept per delivery, newest first: enough to see a retry pattern, small enough for the record. */
export const ATTEMPTS_KEPT = 5;
/** Of the request body. */
export const REQUEST_EXCERPT_BYTES = 2048;
/** Of a response: headers kept, and each value's length. */
export const RESPONSE_HEADERS_KEPT = 40;
const HEADER_VALUE_CHARS = 512;

export const MASK = '••••••';
/** Header names whose values are credentials wherever they appear. */
const SECRET_HEADER = /authorization|cookie|token|secret|api-?key|password|signature/i;

/**
 * Standard Webhooks signatures keep their scheme so one can see which keys signed
 * (`v1,•••••• v1a,••••••`); every other credential-looking header is masked whole.
 */
export function maskHeaders(headers: Readonly<Record<string, string>>, secretNames: readonly string[] = []): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [rawName, value] of Object.entries(headers)) {
    const name = rawName.toLowerCase();
    if (name === 'webhook-signature') {
      out[name] = value
        .split(' ')
        .filter(Boolean)
        .map((s) => `${s.includes(',') ? s.slice(0, s.indexOf(',')) : 'v1'},${MASK}`)
        .join(' ');
    } else {
      out[name] = SECRET_HEADER.test(name) || secretNames.includes(name) ? MASK : value;
    }
  }
  return out;
}

/** A response's headers as kept: the first RESPONSE_HEADERS_KEPT, values cut, credentials masked. */
export function keptResponseHeaders(headers: Readonly<Record<string, string | string[] | undefined>>): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers).slice(0, RESPONSE_HEADERS_KEPT)) {
    if (value === undefined) continue;
    const joined = Array.isArray(value) ? value.join(', ') : value;
    flat[name.toLowerCase()] = joined.length > HEADER_VALUE_CHARS ? `${joined.slice(0, HEADER_VALUE_CHARS)}…` : joined;
  }
  return maskHeaders(flat);
}

function bodyExcerpt(body: Buffer): NonNullable<AttemptDetail['request']['body']> {
  const head = body.subarray(0, REQUEST_EXCERPT_BYTES);
  const truncated = body.length > head.length;
  // A cut may split a multi-byte character: up to 3 bytes of it may be left off the text.
  for (let drop = 0; drop <= (truncated ? 3 : 0); drop++) {
    const text = strictUtf8(head.subarray(0, head.length - drop));
    if (text !== undefined) return { encoding: 'utf8', excerpt: text, truncated };
  }
  return { encoding: 'base64', excerpt: head.toString('base64'), truncated };
}

const decoder = new TextDecoder('utf-8', { fatal: true });

function strictUtf8(bytes: Buffer): string | undefined {
  try {
    return decoder.decode(bytes);
  } catch {
    return undefined;
  }
}

export interface SentRequest {
  target: string;
  headers: Readonly<Record<string, string>>;
  body: Buffer;
  /** Lower-case header names whose values are credentials (a destination's secret headers, its API key). */
  secretNames?: readonly string[];
  /** How the receiver was reached: shown with the attempt (domain/delivery/receiver-headers.ts). */
  receiver?: AttemptDetail['receiver'];
}

/** One attempt's detail, from what was sent, what came of it, and the decision taken. */
export function attemptDetail(sent: SentRequest, result: AttemptResult, decision: Decision, failure: string | undefined, at: Date): AttemptDetail {
  const detail: AttemptDetail = {
    at: at.toISOString(),
    durationMs: result.durationMs,
    target: sent.target,
    request: { headers: maskHeaders(sent.headers, sent.secretNames), bodyBytes: sent.body.length, body: bodyExcerpt(sent.body) },
    decision: decisionOf(decision),
  };
  if (sent.receiver) detail.receiver = sent.receiver;
  if (result.kind === 'response') detail.response = { status: result.status, headers: result.headers ?? {}, bodyExcerpt: result.bodyExcerpt };
  if (result.kind === 'published') detail.messageId = result.messageId;
  const traceId = traceIdOf(sent.headers['ce-traceparent']);
  if (traceId !== undefined) detail.traceId = traceId;
  if (failure !== undefined) detail.error = failure;
  return detail;
}

function decisionOf(decision: Decision): AttemptDetail['decision'] {
  switch (decision.kind) {
    case 'delivered':
      return { kind: 'delivered' };
    case 'retry':
    case 'throttle':
      return { kind: decision.kind, at: decision.at.toISOString(), reason: decision.reason };
    default:
      return { kind: decision.kind, reason: decision.reason };
  }
}

/** The record's attempts with `detail` first: at most ATTEMPTS_KEPT, the body excerpt on the newest only. */
export function withAttempt(kept: readonly AttemptDetail[] | undefined, detail: AttemptDetail): AttemptDetail[] {
  const older = (kept ?? []).slice(0, ATTEMPTS_KEPT - 1).map((a) => {
    if (a.request.body === undefined) return a;
    const { body: _body, ...request } = a.request;
    return { ...a, request };
  });
  return [detail, ...older];
}
