import http from 'node:http';
import fc from 'fast-check';

/**
 * Requests for a property-based fuzz of Herald's HTTP API, generated from its OpenAPI
 * document (/admin/openapi.json, itself generated from the zod schemas the handlers parse
 * with): every operation, with bodies that follow its schema and bodies that break it
 * (wrong types, missing and unknown fields, huge and deep values, odd unicode), bad path
 * and query parameters and every credential kind; and /ingest in binary, structured and
 * batch mode. fast-check makes them from a seed, so a failing run can be run again exactly.
 */

type Schema = Record<string, unknown>;

export interface Operation {
  method: string;
  /** OpenAPI path template: `/admin/accounts/{accountId}/keys`. */
  path: string;
  parameters: { name: string; in: string; required?: boolean; schema?: Schema }[];
  /** `examples`: bodies the handler accepts (the document's own), the start of most generated ones. */
  body?: { schema: Schema; required: boolean; examples: unknown[] };
  /** No bearer token: the body is the credential. */
  public: boolean;
}

/** What the generator knows of the stack it fuzzes. */
export interface FuzzContext {
  /** Credential kind → the Authorization header value (undefined: none sent). */
  credentials: Record<string, string | undefined>;
  /** Credential kinds that may publish to /ingest, and those to try there too. */
  ingestCredentials: Record<string, string | undefined>;
  /** Ids that exist, by the path segment before the parameter (`destinations` → ["fz-a"]). */
  known: Record<string, string[]>;
  /**
   * Accounts whose keys and portal sessions are the fuzz's credentials: never offered to an
   * operation that ends access (revokes, or deletes an account, key, link or session), or the
   * rest of the run would be refused before reaching any handler.
   */
  protectedAccounts: string[];
  /** A URL of a receiver that answers 200, for destinations (`url` fields). */
  receiverUrl: string;
  /** Event types the stack's destinations take, so that some generated events are delivered. */
  eventTypes: string[];
  /** Account ids, for `heraldaccount`. */
  accounts: string[];
}

export interface FuzzRequest {
  /** Which operation, for the report: `PUT /admin/destinations/{id}` or `ingest structured`. */
  operation: string;
  method: string;
  /** Path and query as sent, byte for byte. */
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
}

export interface FuzzReply {
  status: number;
  contentType: string | undefined;
  text: string;
  ms: number;
}

// ---------------------------------------------------------------- the OpenAPI document

export function operationsOf(doc: { paths: Record<string, Record<string, Schema>> }): Operation[] {
  const operations: Operation[] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    if (path === '/ingest') continue;
    for (const [method, op] of Object.entries(methods)) {
      const content = (op.requestBody as { required?: boolean; content?: Record<string, { schema?: Schema; examples?: Record<string, { value: unknown }> }> } | undefined)?.content;
      const schema = content?.['application/json']?.schema;
      const examples = Object.values(content?.['application/json']?.examples ?? {}).map((e) => e.value);
      operations.push({
        method: method.toUpperCase(),
        path,
        parameters: (op.parameters as Operation['parameters'] | undefined) ?? [],
        ...(schema ? { body: { schema, required: (op.requestBody as { required?: boolean }).required === true, examples } } : {}),
        public: Array.isArray(op.security) && op.security.length === 0,
      });
    }
  }
  return operations;
}

// ---------------------------------------------------------------- odd values

/** Strings that have broken parsers, stores and headers somewhere. */
const ODD_STRINGS = [
  '',
  ' ',
  '\ud800',
  '\udfff',
  'a\ud83db',
  '\ude00\ud83d',
  'nul\u0000byte',
  '\u0007\u001b[31mred',
  'line\r\nbreak: injected',
  '\u202egnp.exe',
  '\u200f\u0627\u0644\u0639\u0631\u0628\u064a\u0629',
  '😀🎉👩‍👩‍👧‍👦',
  'e\u0301\u0301\u0301\u0301\u0301\u0301\u0301\u0301',
  'Z̸̢̛̙̰̫͖͔͙̞̮̥̯̜̣̞̟̠̄̓̓̐̔̍̆͋̈́́̚a̵l̶g̸o̶',
  '\ufeffbom',
  '\uffff\ufffe\ufdd0',
  '\u00a0\u2028\u2029',
  '%',
  '%00',
  '%ED%A0%80',
  '..',
  '../../../etc/passwd',
  '__proto__',
  'constructor',
  '__x__',
  '.',
  '<script>alert(1)</script>',
  "' OR '1'='1",
  '${jndi:ldap://x}',
  'whsec_',
  'hk_',
  'hps_',
  'hpl_',
  '-1',
  '1e309',
  'null',
  'true',
  '2026-02-30T25:61:61Z',
  'x'.repeat(257),
  'é'.repeat(2049),
  '😀'.repeat(1500),
];

/** Any UTF-16 code unit, lone surrogates and controls included. */
const codeUnit = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c));

/** Lone surrogates, alone and around text: valid JSON (as \\ud800 escapes) that no UTF-8 store or header can take. */
const LONE_SURROGATES = ['\ud800', '\udfff', 'a\ud83db', '\ude00\ud83d', 'com.example.\udbff', 'x'.repeat(199) + '\ud83d'];

export const oddString: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...LONE_SURROGATES) },
  { weight: 4, arbitrary: fc.constantFrom(...ODD_STRINGS) },
  { weight: 2, arbitrary: fc.string({ unit: codeUnit, maxLength: 24 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 24 }) },
  { weight: 1, arbitrary: fc.constantFrom(10_000, 100_000, 900_000).map((n) => 'x'.repeat(n)) },
);

/** Any JSON value, its strings odd ones. */
const jsonValue: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    oddString,
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.oneof(fc.string({ maxLength: 8 }), oddString), tie('value'), { maxKeys: 4 }),
  ),
})).value;

/** `levels` of nesting around a value: within the 128-level limit and past it (deeper still as raw text, in junkBody: JSON.stringify would overflow the stack here). */
function nested(levels: number, kind: 'array' | 'object', inner: unknown = 1): unknown {
  let v = inner;
  for (let i = 0; i < levels; i++) v = kind === 'array' ? [v] : { a: v };
  return v;
}
const deepValue = fc.tuple(fc.constantFrom(20, 126, 129, 600), fc.constantFrom<'array' | 'object'>('array', 'object')).map(([n, kind]) => nested(n, kind));

// ---------------------------------------------------------------- values from a JSON Schema

function typesOf(schema: Schema): string[] {
  const t = schema.type;
  return Array.isArray(t) ? (t as string[]) : typeof t === 'string' ? [t] : [];
}

/**
 * fc.stringMatching, made once per pattern: building one costs milliseconds (fast-check checks
 * its sample strings against the pattern's characters), and the fuzz asks for the same few
 * patterns for every request: 50 of the 60 CPU seconds of a run, before (an arbitrary is immutable).
 */
const byRegex = new Map<string, fc.Arbitrary<string>>();
function stringMatching(regex: RegExp): fc.Arbitrary<string> {
  const key = `${regex.flags}/${regex.source}`;
  let arbitrary = byRegex.get(key);
  if (!arbitrary) byRegex.set(key, (arbitrary = fc.stringMatching(regex)));
  return arbitrary;
}

/** A string the schema's pattern accepts, when fast-check can make one; else undefined. */
function matching(pattern: string): fc.Arbitrary<string> | undefined {
  try {
    return stringMatching(new RegExp(pattern));
  } catch {
    return undefined;
  }
}

/** Values the schema accepts (as far as a JSON Schema says: zod may refine further). */
function validValue(schema: Schema, ctx: FuzzContext, mutate: number): fc.Arbitrary<unknown> {
  if ('const' in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  const alternatives = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
  if (alternatives?.length) return fc.oneof(...alternatives.map((s) => valueOf(s, ctx, mutate)));
  const [type] = typesOf(schema);
  switch (type) {
    case 'string': {
      const max = Math.min(typeof schema.maxLength === 'number' ? schema.maxLength : 40, 64);
      const min = typeof schema.minLength === 'number' ? schema.minLength : 0;
      if (schema.format === 'uri') return fc.constantFrom(`${ctx.receiverUrl}/fz`, 'https://hooks.fuzz/x', 'https://example.invalid/x', 'http://[::1]:1/x', 'ftp://x.fuzz/');
      if (schema.format === 'email') return fc.emailAddress();
      if (schema.format === 'date-time') return fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString());
      const byPattern = typeof schema.pattern === 'string' ? matching(schema.pattern) : undefined;
      if (byPattern) return byPattern;
      return fc.string({ minLength: min, maxLength: Math.max(min, max) });
    }
    case 'integer':
      return fc.integer({ min: typeof schema.minimum === 'number' ? schema.minimum : -1_000_000, max: typeof schema.maximum === 'number' ? schema.maximum : 1_000_000 });
    case 'number':
      return fc.double({ noNaN: true, noDefaultInfinity: true, min: typeof schema.minimum === 'number' ? schema.minimum : -1e9, max: typeof schema.maximum === 'number' ? schema.maximum : 1e9 });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array': {
      const items = (schema.items as Schema | undefined) ?? {};
      const min = typeof schema.minItems === 'number' ? schema.minItems : 0;
      const max = Math.min(typeof schema.maxItems === 'number' ? schema.maxItems : 4, 4);
      return fc.array(valueOf(items, ctx, mutate), { minLength: min, maxLength: Math.max(min, max) });
    }
    case 'object': {
      const properties = (schema.properties as Record<string, Schema> | undefined) ?? {};
      const required = (schema.required as string[] | undefined) ?? [];
      const record: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [name, s] of Object.entries(properties)) record[name] = valueOf(s, ctx, mutate);
      if (Object.keys(record).length === 0) return fc.dictionary(fc.string({ maxLength: 8 }), jsonValue, { maxKeys: 3 });
      return fc.record(record, { requiredKeys: required.filter((r) => r in record) });
    }
    default:
      return jsonValue;
  }
}

/** Values the schema refuses: another type, odd strings, lengths and sizes past its bounds, fields missing or unknown, deep nesting. */
function invalidValue(schema: Schema, ctx: FuzzContext): fc.Arbitrary<unknown> {
  const [type] = typesOf(schema);
  const cases: fc.Arbitrary<unknown>[] = [jsonValue, oddString, deepValue];
  if (type === 'string') {
    const max = typeof schema.maxLength === 'number' ? schema.maxLength : 1000;
    cases.push(fc.constantFrom('', 'x'.repeat(max + 1), '😀'.repeat(Math.ceil((max + 1) / 2))));
  }
  if (type === 'integer' || type === 'number') {
    const lo = typeof schema.minimum === 'number' ? schema.minimum : 0;
    const hi = typeof schema.maximum === 'number' ? schema.maximum : 0;
    cases.push(fc.constantFrom(lo - 1, hi + 1, 1.5, -0, 1e308, -1e308, Number.MAX_SAFE_INTEGER + 2, '1', '0x10'));
  }
  if (type === 'array') {
    const items = (schema.items as Schema | undefined) ?? {};
    const max = typeof schema.maxItems === 'number' ? schema.maxItems : 100;
    cases.push(fc.constant([]), fc.constant(Array.from({ length: max + 1 }, (_, i) => `t${i}.x`)), fc.constant(Array.from({ length: 10_000 }, () => 'a')), fc.array(invalidValue(items, ctx), { minLength: 1, maxLength: 3 }));
  }
  if (type === 'object') {
    const properties = (schema.properties as Record<string, Schema> | undefined) ?? {};
    const valid = validValue(schema, ctx, 0);
    const names = Object.keys(properties);
    cases.push(
      valid.map((v) => ({ ...(v as object), ['unknown-' + 'field']: 1 })),
      valid.map((v) => {
        const inner = JSON.stringify(v).slice(1, -1);
        return JSON.parse(`{"__proto__":{"admin":true},"constructor":{"prototype":{"x":1}}${inner ? `,${inner}` : ''}}`) as unknown;
      }),
      fc.constant({}),
    );
    if (names.length > 0) cases.push(fc.tuple(valid, fc.constantFrom(...names)).map(([v, drop]) => Object.fromEntries(Object.entries(v as object).filter(([k]) => k !== drop))));
  }
  return fc.oneof(...cases);
}

/** Mostly what the schema accepts (so requests reach deep into the handlers), a `mutate` share of each value broken. */
function valueOf(schema: Schema, ctx: FuzzContext, mutate: number): fc.Arbitrary<unknown> {
  if (mutate <= 0) return validValue(schema, ctx, 0);
  return fc.oneof({ weight: Math.round((1 - mutate) * 100), arbitrary: validValue(schema, ctx, mutate) }, { weight: Math.round(mutate * 100), arbitrary: invalidValue(schema, ctx) });
}

// ---------------------------------------------------------------- bodies, paths, queries

const INVALID_UTF8 = Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0xed, 0xa0, 0x80, 0xff, 0x22, 0x7d]);

/** Bytes that are not the JSON asked for. */
const junkBody: fc.Arbitrary<Buffer> = fc.oneof(
  fc.constantFrom('', 'null', '[]', '"text"', '42', '{', '{"a":', '{"a":1}}', '\ufeff{}', '{"a":1,"a":2}', 'a=1&b=2', '<xml/>', '{"name":"\\ud800"}', '{"\\udfff":1}').map((s) => Buffer.from(s)),
  fc.constant(INVALID_UTF8),
  fc.constantFrom('[', '{"a":').map((open) => Buffer.from(open.repeat(10_000))),
  fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b)),
  // About 900 KiB (within ingest's 1 MiB limit) and 3 MiB (past it; the admin API has no limit of its own below the framework's 32 MB): no 500 either way.
  fc.constantFrom(450 * 1024, 1536 * 1024).map((n) => Buffer.from(JSON.stringify({ name: 'x'.repeat(n), url: 'y'.repeat(n) }))),
);

/** Path segments as sent, raw: valid, odd (percent-encoded as UTF-8) and not valid percent-encoding at all. */
const BAD_SEGMENTS = ['%', '%E0%A4%A', '%ED%A0%80', '%C0%AF', '%00', '%2F', '%2e%2e', '..', '.', 'a%20b', '%25', '%FF', 'x'.repeat(10_000), '%F0%9F%98%80', 'A-B', '__x__', '%5F%5Fx%5F%5F'];

/** percent-encoding of a string; a lone surrogate (which encodeURIComponent refuses) as the bytes Node would write for it. */
function encode(s: string): string {
  try {
    return encodeURIComponent(s);
  } catch {
    return [...Buffer.from(s, 'utf8')].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join('');
  }
}

/** An operation that ends someone's access: the fixtures' accounts are kept out of its path. */
function endsAccess(op: Operation): boolean {
  return /revoke/.test(op.path) || (op.method === 'DELETE' && /\/(accounts|keys|portal-links|portal-sessions)\/\{[^}]+\}$/.test(op.path));
}

function segment(ctx: FuzzContext, before: string, op: Operation): fc.Arbitrary<string> {
  const known = (ctx.known[before] ?? []).filter((id) => !(before === 'accounts' && endsAccess(op) && ctx.protectedAccounts.includes(id)));
  return fc.oneof(
    ...(known.length ? [{ weight: 14, arbitrary: fc.constantFrom(...known) }] : []),
    { weight: 3, arbitrary: stringMatching(/^[a-z0-9][a-z0-9-]{0,20}$/) },
    { weight: 2, arbitrary: oddString.map((s) => encode(s.slice(0, 1000))) },
    { weight: 2, arbitrary: fc.constantFrom(...BAD_SEGMENTS) },
  );
}

function pathOf(op: Operation, ctx: FuzzContext): fc.Arbitrary<string> {
  const parts = op.path.split('/');
  return fc.tuple(...parts.map((p, i) => (/^\{.+\}$/.test(p) ? segment(ctx, parts[i - 1] ?? '', op) : fc.constant(p)))).map((ps) => ps.join('/'));
}

const BAD_QUERY = ['%', '%ZZ', '%ED%A0%80', '=', '&&', 'a=b=c', 'x[__proto__]=1', 'limit=1&limit=2', 'cursor=%00', `cursor=${'c'.repeat(5000)}`, 'status=', 'token=hps_x'];

function queryOf(op: Operation, ctx: FuzzContext): fc.Arbitrary<string> {
  const params = op.parameters.filter((p) => p.in === 'query');
  const pairs = params.map((p) =>
    fc.option(
      fc.oneof({ weight: 3, arbitrary: validValue(p.schema ?? {}, ctx, 0).map((v) => `${p.name}=${encode(typeof v === 'string' ? v : JSON.stringify(v))}`) }, { weight: 2, arbitrary: oddString.map((v) => `${p.name}=${encode(v.slice(0, 1000))}`) }),
      { freq: 2 },
    ),
  );
  const bad = fc.oneof({ weight: 4, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.constantFrom(...BAD_QUERY) });
  return fc.tuple(fc.tuple(...pairs), bad).map(([ps, bad]) => {
    const all = [...ps.filter((p): p is string => p !== null), ...(bad !== null ? [bad] : [])];
    return all.length ? `?${all.join('&')}` : '';
  });
}

/** How often each credential kind is tried, against 1 for the others: mostly ones that get past authentication, so requests reach the handlers. */
const ADMIN_WEIGHTS: Record<string, number> = { operator: 20, 'key all': 3, 'key write': 2, 'key read': 2, 'key publish': 2, "another account's key": 2, 'portal session': 2, 'portal session, read-only': 2, 'portal session, narrowed to fz-a': 2 };
const INGEST_WEIGHTS: Record<string, number> = { 'the ingest token': 12, 'key publish': 4, 'key all': 3, "another account's key": 2 };

function credential(kinds: Record<string, string | undefined>, weights: Record<string, number>): fc.Arbitrary<{ kind: string; header: string | undefined }> {
  return fc.oneof(...Object.keys(kinds).map((kind) => ({ weight: weights[kind] ?? 1, arbitrary: fc.constant({ kind, header: kinds[kind] }) })));
}

/** Where a value may be changed in a JSON value: every object member and array item, and the value itself. */
function placesIn(value: unknown, at: (string | number)[] = []): (string | number)[][] {
  // A string is where most bugs are (what is stored, compared, put in a header): three times the chance.
  const here = typeof value === 'string' ? [at, at, at] : [at];
  if (Array.isArray(value)) return [...here, ...value.flatMap((v, i) => placesIn(v, [...at, i]))];
  if (value !== null && typeof value === 'object') return [...here, ...Object.entries(value).flatMap(([k, v]) => placesIn(v, [...at, k]))];
  return here;
}

/** `value` with the value at `at` replaced (undefined: removed), or a member added beside it. */
function changedAt(value: unknown, at: (string | number)[], next: unknown, add: boolean): unknown {
  if (at.length === 0) return add && value !== null && typeof value === 'object' && !Array.isArray(value) ? { ...value, unexpected: next } : next;
  const copy = (Array.isArray(value) ? [...value] : { ...(value as object) }) as Record<string | number, unknown>;
  const [head, ...rest] = at as [string | number, ...(string | number)[]];
  const changed = changedAt(copy[head], rest, next, add);
  if (changed === undefined && rest.length === 0 && !add) {
    if (Array.isArray(copy)) copy.splice(head as number, 1);
    else delete copy[head];
  } else copy[head] = changed;
  return copy;
}

/** The value with each of its strings replaced by an odd one (or kept, now and then). */
function everyStringOdd(value: unknown): fc.Arbitrary<unknown> {
  if (typeof value === 'string') return fc.oneof({ weight: 3, arbitrary: oddString }, { weight: 1, arbitrary: fc.constant(value) });
  if (Array.isArray(value)) return fc.tuple(...value.map(everyStringOdd));
  if (value !== null && typeof value === 'object') return fc.record(Object.fromEntries(Object.entries(value).map(([k, v]) => [k, everyStringOdd(v)])));
  return fc.constant(value);
}

/** One of the operation's examples (accepted as it is) with one place changed (odd, of another type, removed, or a field added), or every string odd. */
function fromExamples(examples: unknown[]): fc.Arbitrary<unknown> {
  return fc.constantFrom(...examples).chain((example) =>
    fc.oneof(
      { weight: 1, arbitrary: fc.constant(example) },
      { weight: 3, arbitrary: everyStringOdd(example) },
      {
        weight: 6,
        arbitrary: fc
          .tuple(fc.constantFrom(...placesIn(example)), fc.oneof({ weight: 4, arbitrary: oddString }, jsonValue, deepValue, fc.constant(undefined)), fc.boolean())
          .map(([at, next, add]) => changedAt(example, at, next, add)),
      },
    ),
  );
}

/** One request to an admin operation (or, now and then, a method it does not have). */
export function adminRequest(op: Operation, ctx: FuzzContext): fc.Arbitrary<FuzzRequest> {
  const body: fc.Arbitrary<Buffer | undefined> = op.body
    ? fc.oneof(
        ...(op.body.examples.length ? [{ weight: 10, arbitrary: fromExamples(op.body.examples).map((v) => Buffer.from(JSON.stringify(v) ?? '')) }] : []),
        { weight: 2, arbitrary: valueOf(op.body.schema, ctx, 0).map((v) => Buffer.from(JSON.stringify(v))) },
        { weight: 4, arbitrary: valueOf(op.body.schema, ctx, 0.15).map((v) => Buffer.from(JSON.stringify(v) ?? '')) },
        { weight: 2, arbitrary: invalidValue(op.body.schema, ctx).map((v) => Buffer.from(JSON.stringify(v) ?? '')) },
        { weight: 2, arbitrary: junkBody },
        { weight: 1, arbitrary: fc.constant(undefined) },
      )
    : fc.oneof({ weight: 8, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: junkBody });
  const contentType = fc.oneof({ weight: 8, arbitrary: fc.constant('application/json') }, { weight: 1, arbitrary: fc.constantFrom('text/plain', 'application/json; charset=latin1', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', ';;;', '') });
  const method = fc.oneof({ weight: 12, arbitrary: fc.constant(op.method) }, { weight: 1, arbitrary: fc.constantFrom('GET', 'PUT', 'POST', 'PATCH', 'DELETE', 'OPTIONS') });
  return fc.record({ path: pathOf(op, ctx), query: queryOf(op, ctx), body, contentType, method, who: credential(ctx.credentials, ADMIN_WEIGHTS) }).map(({ path, query, body: b, contentType: type, method: m, who }) => ({
    operation: `${op.method} ${op.path}`,
    method: m,
    path: `${path}${query}`,
    headers: { ...(who.header !== undefined ? { authorization: who.header } : {}), ...(type ? { 'content-type': type } : {}), 'x-fuzz-credential': who.kind },
    ...(b !== undefined ? { body: b } : {}),
  }));
}

// ---------------------------------------------------------------- ingest

function attributeValues(ctx: FuzzContext) {
  const valid = {
    specversion: fc.constant('1.0'),
    id: stringMatching(/^[a-z0-9-]{1,20}$/),
    source: fc.constantFrom('/fuzz', 'urn:fuzz', 'https://fuzz.example/x'),
    type: fc.oneof(fc.constantFrom(...ctx.eventTypes), stringMatching(/^[a-z]{1,8}\.[a-z]{1,8}$/)),
    time: fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString()),
    subject: fc.string({ maxLength: 20 }),
    heraldaccount: fc.constantFrom(...ctx.accounts),
  };
  const bad = {
    specversion: fc.constantFrom('0.3', '2.0', '1', '', ' 1.0'),
    time: fc.constantFrom('yesterday', '2026-02-30T00:00:00Z', ''),
    heraldaccount: fc.constantFrom('UPPER', 'no_such', '', 'a'.repeat(64)),
  };
  return { valid, bad };
}

/** An event's attributes: each valid, odd, wrong or missing; extensions with odd names. */
function eventAttributes(ctx: FuzzContext): fc.Arbitrary<Record<string, unknown>> {
  const { valid, bad } = attributeValues(ctx);
  const pick = (name: keyof typeof valid, required: boolean) => {
    const options: fc.Arbitrary<unknown>[] = [valid[name], valid[name], valid[name], valid[name], oddString];
    if (name in bad) options.push(bad[name as keyof typeof bad]);
    if (!required) return fc.option(fc.oneof(...options), { freq: 2, nil: undefined });
    return fc.oneof({ weight: 12, arbitrary: fc.oneof(...options) }, { weight: 1, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: jsonValue });
  };
  return fc
    .record({
      specversion: pick('specversion', true),
      id: pick('id', true),
      source: pick('source', true),
      type: pick('type', true),
      time: pick('time', false),
      subject: pick('subject', false),
      heraldaccount: pick('heraldaccount', false),
      extensions: fc.dictionary(fc.oneof(stringMatching(/^[a-z0-9]{1,20}$/), oddString.map((s) => s.slice(0, 30))), fc.oneof(fc.string({ maxLength: 10 }), oddString, jsonValue), { maxKeys: 3 }),
    })
    .map(({ extensions, ...known }) => Object.fromEntries(Object.entries({ ...extensions, ...known }).filter(([, v]) => v !== undefined)));
}

const structuredEvent = (ctx: FuzzContext) =>
  fc.tuple(eventAttributes(ctx), fc.oneof({ weight: 4, arbitrary: jsonValue.map((data) => ({ data })) }, { weight: 1, arbitrary: fc.constantFrom('AAAA', '!!!', '', 'QQ=').map((b) => ({ data_base64: b })) }, { weight: 1, arbitrary: fc.constant({}) }, { weight: 1, arbitrary: fc.constant({ data: 1, data_base64: 'AA==' }) })).map(([attrs, data]) => ({ ...attrs, ...data }));

/** A ce- header value as a producer might send it: plain, percent-encoded, or odd and raw (printable ASCII only: Node refuses to send anything else). */
function headerValue(v: unknown): string {
  // Cut: a header over Node's 16 KiB is refused before Herald sees it (431; the corpus has that case).
  const s = (typeof v === 'string' ? v : JSON.stringify(v) ?? '').slice(0, 2000);
  return /^[\x20-\x7e]*$/.test(s) ? s : encode(s);
}

const INGEST_TYPES = ['application/json', 'application/cloudevents+json', 'application/cloudevents-batch+json', 'application/cloudevents+json; charset=utf-8', 'application/cloudevents+xml', 'text/plain', 'application/octet-stream', ';;;', ''];

export function ingestRequest(ctx: FuzzContext): fc.Arbitrary<FuzzRequest> {
  const who = credential(ctx.ingestCredentials, INGEST_WEIGHTS);
  const binary = fc.record({ who, attrs: eventAttributes(ctx), type: fc.constantFrom(...INGEST_TYPES.filter((t) => !t.includes('cloudevents'))), body: fc.oneof(jsonValue.map((v) => Buffer.from(JSON.stringify(v) ?? '')), junkBody) }).map(({ who: w, attrs, type, body }) => ({
    operation: 'POST /ingest (binary)',
    method: 'POST',
    path: '/ingest',
    headers: { ...auth(w), ...(type ? { 'content-type': type } : {}), ...Object.fromEntries(Object.entries(attrs).map(([k, v]) => [`ce-${k.replace(/[^A-Za-z0-9!#$%&'*+.^_`|~-]/g, '').slice(0, 40) || 'x'}`, headerValue(v)])) },
    body,
  }));
  const structured = fc.record({ who, event: structuredEvent(ctx), type: fc.constantFrom('application/cloudevents+json', 'application/cloudevents+json; charset=utf-8', 'application/cloudevents+json;charset=latin1') }).map(({ who: w, event, type }) => ({
    operation: 'POST /ingest (structured)',
    method: 'POST',
    path: '/ingest',
    headers: { ...auth(w), 'content-type': type },
    body: Buffer.from(JSON.stringify(event)),
  }));
  const batch = fc.record({ who, events: fc.oneof({ weight: 6, arbitrary: fc.array(structuredEvent(ctx), { maxLength: 12 }) }, { weight: 1, arbitrary: fc.constantFrom(1000, 5000).map((n) => Array.from({ length: n }, (_, i) => ({ specversion: '1.0', id: `big-${i}`, source: '/fuzz', type: ctx.eventTypes[0] }))) }) }).map(({ who: w, events }) => ({
    operation: 'POST /ingest (batch)',
    method: 'POST',
    path: '/ingest',
    headers: { ...auth(w), 'content-type': 'application/cloudevents-batch+json' },
    body: Buffer.from(JSON.stringify(events)),
  }));
  const junk = fc.record({ who, body: junkBody, type: fc.constantFrom(...INGEST_TYPES), method: fc.constantFrom('POST', 'POST', 'POST', 'GET', 'PUT', 'DELETE') }).map(({ who: w, body, type, method }) => ({
    operation: 'POST /ingest (junk)',
    method,
    path: '/ingest',
    headers: { ...auth(w), ...(type ? { 'content-type': type } : {}) },
    ...(method === 'GET' ? {} : { body }),
  }));
  return fc.oneof({ weight: 3, arbitrary: binary }, { weight: 3, arbitrary: structured }, { weight: 2, arbitrary: batch }, { weight: 1, arbitrary: junk });
}

function auth(who: { kind: string; header: string | undefined }): Record<string, string> {
  return { ...(who.header !== undefined ? { authorization: who.header } : {}), 'x-fuzz-credential': who.kind };
}

// ---------------------------------------------------------------- sending and judging

/** The request as written (no URL normalisation: `..` and bad percent-encoding go out as they are). */
export function send(port: number, req: FuzzRequest, timeoutMs: number): Promise<FuzzReply> {
  const started = Date.now();
  return new Promise((resolve) => {
    const r = http.request({ host: '127.0.0.1', port, method: req.method, path: req.path, headers: { ...req.headers, ...(req.body ? { 'content-length': String(req.body.length) } : {}) }, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, contentType: res.headers['content-type'], text: Buffer.concat(chunks).toString('utf8'), ms: Date.now() - started }));
      res.on('error', (e) => resolve({ status: 0, contentType: undefined, text: `response error: ${e.message}`, ms: Date.now() - started }));
    });
    r.on('timeout', () => r.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    r.on('error', (e) => resolve({ status: 0, contentType: undefined, text: `request error: ${e.message}`, ms: Date.now() - started }));
    r.end(req.body);
  });
}

/** What is wrong with an answer: a 5xx (or none at all), too slow, or an error that is not JSON with an `error` message. */
export function problemsOf(reply: FuzzReply, maxMs: number): string[] {
  const problems: string[] = [];
  if (reply.status === 0 || reply.status >= 500) problems.push(`status ${reply.status || 'none'}`);
  if (reply.ms > maxMs) problems.push(`took ${reply.ms} ms`);
  if (reply.status >= 400) {
    let error: unknown;
    try {
      error = (JSON.parse(reply.text) as { error?: unknown }).error;
    } catch {
      error = undefined;
    }
    if (!/^application\/json/.test(reply.contentType ?? '')) problems.push(`error content-type ${reply.contentType ?? '(none)'}`);
    if (typeof error !== 'string' || error.length === 0) problems.push('error body without an "error" message');
  }
  return problems;
}

/** A request and its answer, short enough to read in a test report and exact enough to send again. */
export function describeRequest(req: FuzzRequest, reply?: FuzzReply): string {
  const cut = (s: string, n: number) => (s.length > n ? `${s.slice(0, n)}… (${s.length} chars)` : s);
  const body = req.body === undefined ? '(none)' : `${req.body.length} bytes: ${JSON.stringify(cut(req.body.toString('utf8'), 300))}`;
  const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, k === 'authorization' ? `${v.slice(0, 12)}…` : cut(v, 120)]));
  const lines = [`${req.operation}: ${req.method} ${cut(req.path, 300)}`, `  headers ${JSON.stringify(headers)}`, `  body ${body}`];
  if (reply) lines.push(`  → ${reply.status} in ${reply.ms} ms, ${reply.contentType ?? 'no content-type'}: ${cut(reply.text, 300)}`);
  return lines.join('\n');
}

/** How fast-check prints a request in a counterexample: short. */
export function printable(req: FuzzRequest): FuzzRequest {
  return Object.assign(req, { [fc.toStringMethod]: () => describeRequest(req) });
}

// ---------------------------------------------------------------- a stack to fuzz

/** The admin API of a test stack, as the operator: what the fixtures are made with. */
type Admin = (method: string, path: string, body?: unknown) => Promise<{ status: number; body: unknown }>;

/**
 * What a fuzz run needs on its stack: two accounts with destinations (delivering to `receiverUrl`),
 * a key of each scope set, a revoked key, portal sessions (full, read-only, narrowed, expired)
 * and one delivery; returned as the generator's context. `expiredSession` forges an expired
 * session from a live one (the test knows the stack's signing key).
 */
export async function fuzzFixtures(
  admin: Admin,
  tokens: { admin: string; ingest: string },
  receiverUrl: string,
  expiredSession: (live: string) => string,
  /** Publishes one event of the type to account fz, and resolves once it is delivered. */
  publishDelivered: (account: string, type: string) => Promise<void>,
): Promise<FuzzContext> {
  const ok = async (method: string, path: string, body?: unknown) => {
    const res = await admin(method, path, body);
    if (res.status >= 300) throw new Error(`fixture ${method} ${path} answered ${res.status}: ${JSON.stringify(res.body)}`);
    return res.body as Record<string, unknown>;
  };
  const types = ['com.fuzz.order', 'com.fuzz.user'];
  await ok('POST', '/accounts', { id: 'fz', name: 'Fuzz' });
  await ok('POST', '/accounts', { id: 'fz-other', name: 'Fuzz other' });
  for (const id of ['fz-a', 'fz-b', 'fz-keep']) await ok('PUT', `/accounts/fz/destinations/${id}`, { url: `${receiverUrl}/${id}`, eventTypes: ['com.fuzz.*'] });
  await ok('PUT', '/accounts/fz-other/destinations/o-a', { url: `${receiverUrl}/o-a`, eventTypes: ['com.fuzz.*'] });
  const key = async (account: string, scopes: string[]) => (await ok('POST', `/accounts/${account}/keys`, { name: `fuzz ${scopes.join('+')}`, scopes })) as { id: string; key: string };
  const keys = {
    'key read': await key('fz', ['read']),
    'key write': await key('fz', ['read', 'write']),
    'key publish': await key('fz', ['publish']),
    'key all': await key('fz', ['read', 'write', 'publish']),
    "another account's key": await key('fz-other', ['read', 'write', 'publish']),
  };
  const revoked = await key('fz', ['read', 'write', 'publish']);
  await ok('DELETE', `/accounts/fz/keys/${revoked.id}`);
  const session = async (link: Record<string, unknown>) => {
    const { url } = (await ok('POST', '/accounts/fz/portal-links', link)) as { url: string };
    const token = decodeURIComponent(url.slice(url.indexOf('#portal=') + '#portal='.length));
    return { link: token, session: ((await ok('POST', '/portal/sessions', { token })) as { sessionToken: string }).sessionToken };
  };
  const full = await session({ ttlSeconds: 3600 });
  const readOnly = await session({ ttlSeconds: 3600, readOnly: true });
  const narrowed = await session({ ttlSeconds: 3600, destinations: ['fz-a'] });
  const bearer = (t: string) => `Bearer ${t}`;
  const credentials: Record<string, string | undefined> = {
    operator: bearer(tokens.admin),
    none: undefined,
    garbage: 'Bearer not-a-token-at-all',
    'empty bearer': 'Bearer ',
    basic: 'Basic YWRtaW46YWRtaW4=',
    'the ingest token': bearer(tokens.ingest),
    ...Object.fromEntries(Object.entries(keys).map(([k, v]) => [k, bearer(v.key)])),
    'revoked key': bearer(revoked.key),
    'portal session': bearer(full.session),
    'portal session, read-only': bearer(readOnly.session),
    'portal session, narrowed to fz-a': bearer(narrowed.session),
    'portal session, expired': bearer(expiredSession(full.session)),
    'portal session, forged': bearer(`${full.session.slice(0, -4)}AAAA`),
    'a key-shaped token no key has': bearer(`hk_0123456789abcdef_${'A'.repeat(43)}`),
    'a portal link used as a bearer token': bearer(full.link),
  };
  const ingestCredentials: Record<string, string | undefined> = {
    'the ingest token': bearer(tokens.ingest),
    'key publish': credentials['key publish'],
    'key all': credentials['key all'],
    "another account's key": credentials["another account's key"],
    'key read': credentials['key read'],
    'revoked key': credentials['revoked key'],
    operator: credentials.operator,
    'portal session': credentials['portal session'],
    none: undefined,
    garbage: credentials.garbage,
  };
  // One delivery, so that the delivery routes find one.
  await publishDelivered('fz', types[0]!);
  const deliveries = ((await ok('GET', '/accounts/fz/destinations/fz-a/deliveries')) as { deliveries?: { id: string }[] }).deliveries ?? [];
  return {
    credentials,
    ingestCredentials,
    known: {
      accounts: ['fz', 'fz-other', 'default', 'no-such-account'],
      destinations: ['fz-a', 'fz-b', 'o-a', 'no-such-destination'],
      deliveries: deliveries.map((d) => d.id),
      keys: [revoked.id],
    },
    protectedAccounts: ['fz'],
    receiverUrl,
    eventTypes: types,
    accounts: ['fz', 'fz-other', 'default', 'no-such-account'],
  };
}
