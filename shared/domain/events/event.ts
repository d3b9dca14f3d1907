import { createHash } from 'node:crypto';
import { z } from 'zod';
import { traceExtensionProblem } from './trace-context';

/**
 * Herald's one in-memory shape of a CloudEvent: context attributes as strings (the form
 * every transport Herald speaks carries them in) and the data as the producer's bytes.
 * Keeping bytes, not a parsed value, is what lets a receiver see exactly what was sent.
 */
export interface HeraldEvent {
  readonly attributes: Readonly<EventAttributes>;
  readonly data: Buffer;
}

export type EventAttributes = {
  id: string;
  source: string;
  type: string;
  specversion: '1.0';
  time?: string;
  datacontenttype?: string;
  dataschema?: string;
  subject?: string;
} & Record<string, string>;

/** Pub/Sub caps an attribute value at 1024 bytes and a message at 100 attributes. */
export const MAX_ATTRIBUTE_VALUE_BYTES = 1024;
export const MAX_EXTENSION_ATTRIBUTES = 90;

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;
const ATTRIBUTE_NAME = /^[a-z0-9]{1,20}$/;
const MEDIA_TYPE = /^[\w!#$&^.+-]+\/[\w!#$&^.+-]+(\s*;.*)?$/;
// Names Herald itself sets on Pub/Sub messages; an extension may not shadow them.
const RESERVED_EXTENSIONS = new Set(['data', 'data_base64', 'herald']);

/**
 * The CloudEvents String type excludes control characters (U+0000–U+001F, U+007F–U+009F),
 * UTF-16 surrogates standing alone and noncharacters: none of them may reach a header or an
 * attribute downstream.
 */
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const DISALLOWED_CHARACTERS = /[\u0000-\u001f\u007f-\u009f\ufdd0-\ufdef\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export function stringTypeProblem(what: string, value: string): string | undefined {
  const found = DISALLOWED_CHARACTERS.exec(value);
  if (!found) return undefined;
  const code = found[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0');
  return `${what} holds U+${code}, which a CloudEvents String may not (control characters, lone surrogates, noncharacters)`;
}

const boundedString = (what: string) =>
  z
    .string({ error: (i) => (i.input === undefined ? `${what} is required` : `${what} must be a string`) })
    .min(1, `${what} must not be empty`)
    .refine((v) => Buffer.byteLength(v) <= MAX_ATTRIBUTE_VALUE_BYTES, `${what} is longer than ${MAX_ATTRIBUTE_VALUE_BYTES} bytes`)
    .superRefine((v, ctx) => {
      const problem = stringTypeProblem(what, v);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    });

const uriReference = (what: string) =>
  boundedString(what).refine((v) => !/\s/.test(v), `${what} must be a URI-reference (no whitespace)`);

const absoluteUri = (what: string) =>
  uriReference(what).refine((v) => /^[a-z][a-z0-9+.-]*:/i.test(v), `${what} must be an absolute URI`);

const KNOWN_ATTRIBUTES = {
  specversion: 1,
  id: 1,
  source: 1,
  type: 1,
  time: 1,
  datacontenttype: 1,
  dataschema: 1,
  subject: 1,
} as const;

/** The context attributes of CloudEvents 1.0 as Herald accepts them. */
export const eventAttributesSchema = z
  .object({
    specversion: z.literal('1.0', {
      error: (i) => (i.input === undefined ? 'specversion is required' : `specversion must be "1.0" (got ${JSON.stringify(i.input)})`),
    }),
    id: boundedString('id'),
    source: uriReference('source'),
    type: boundedString('type'),
    time: boundedString('time')
      .refine((v) => RFC3339.test(v) && !Number.isNaN(Date.parse(v)), 'time must be an RFC 3339 timestamp, e.g. 2026-01-31T12:00:00Z')
      .optional(),
    datacontenttype: boundedString('datacontenttype').refine((v) => MEDIA_TYPE.test(v), 'datacontenttype must be a media type, e.g. application/json').optional(),
    dataschema: absoluteUri('dataschema').optional(),
    subject: boundedString('subject').optional(),
  })
  .catchall(z.string({ error: 'extension attributes must be strings' }))
  .superRefine((attrs, ctx) => {
    const extensions = Object.keys(attrs).filter((k) => !(k in KNOWN_ATTRIBUTES));
    if (extensions.length > MAX_EXTENSION_ATTRIBUTES) {
      ctx.addIssue({ code: 'custom', message: `at most ${MAX_EXTENSION_ATTRIBUTES} extension attributes are allowed`, path: [] });
    }
    for (const name of extensions) {
      const value = attrs[name] ?? '';
      if (!ATTRIBUTE_NAME.test(name) || RESERVED_EXTENSIONS.has(name)) {
        ctx.addIssue({ code: 'custom', message: 'extension attribute names are 1-20 lowercase letters or digits and not reserved', path: [name] });
      } else if (Buffer.byteLength(value) > MAX_ATTRIBUTE_VALUE_BYTES) {
        ctx.addIssue({ code: 'custom', message: `longer than ${MAX_ATTRIBUTE_VALUE_BYTES} bytes`, path: [name] });
      } else if (stringTypeProblem(name, value)) {
        ctx.addIssue({ code: 'custom', message: stringTypeProblem(name, value)!, path: [name] });
      } else if (traceExtensionProblem(name, value)) {
        // Refused, not dropped: a receiver or a trace that silently lost the producer's context is harder to explain than a 400.
        ctx.addIssue({ code: 'custom', message: traceExtensionProblem(name, value)!, path: [name] });
      }
    }
  });

export interface ValidationIssue {
  path: string;
  message: string;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; issues: ValidationIssue[] };

export function issuesFromZod(error: z.ZodError, prefix: (string | number)[] = []): ValidationIssue[] {
  return error.issues.map((i) => ({ path: formatPath([...prefix, ...i.path.map((p) => (typeof p === 'symbol' ? String(p) : p))]), message: messageOf(i) }));
}

/** A schema's own `error` message also replaces zod's for unknown keys: make sure the keys are named. */
function messageOf(issue: z.ZodError['issues'][number]): string {
  if (issue.code !== 'unrecognized_keys' || issue.keys.every((k) => issue.message.includes(k))) return issue.message;
  return `unknown field${issue.keys.length === 1 ? '' : 's'} ${issue.keys.join(', ')}`;
}

export function formatPath(path: (string | number)[]): string {
  return path.reduce<string>((acc, p) => (typeof p === 'number' ? `${acc}[${p}]` : acc ? `${acc}.${p}` : p), '');
}

/** Validates attributes and builds the event; `time` is stamped when the producer sent none. */
export function buildEvent(raw: Record<string, unknown>, data: Buffer, now: Date, prefix: (string | number)[] = []): Parsed<HeraldEvent> {
  const parsed = eventAttributesSchema.safeParse(raw);
  if (!parsed.success) return { ok: false, issues: issuesFromZod(parsed.error, prefix) };
  const attributes = { ...parsed.data } as EventAttributes;
  if (attributes.time === undefined) attributes.time = now.toISOString();
  return { ok: true, value: Object.freeze({ attributes: Object.freeze(attributes), data }) };
}

/** (source, id) identifies an event; the key is stable, short and safe as a document id. */
export function eventKey(attributes: Pick<EventAttributes, 'source' | 'id'>): string {
  return createHash('sha256').update(attributes.source).update('\0').update(attributes.id).digest('base64url').slice(0, 27);
}

export function eventSize(event: HeraldEvent): number {
  let size = event.data.length;
  for (const [k, v] of Object.entries(event.attributes)) size += k.length + Buffer.byteLength(v);
  return size;
}

export function matchesType(patterns: readonly string[] | undefined, type: string): boolean {
  if (!patterns || patterns.length === 0) return true;
  return patterns.some((p) => (p.endsWith('*') ? type.startsWith(p.slice(0, -1)) : p === type));
}
