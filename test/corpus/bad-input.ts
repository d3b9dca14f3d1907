import { FUNCTION_NAMES, FunctionName } from '../../shared/topology';

/**
 * Bad requests, as data: each case is sent to every function it names (default: all of
 * FUNCTION_NAMES) over a raw HTTP connection, and must be answered with a 4xx whose JSON body
 * says what is wrong (`error`), without a crash. test/integration/bad-input-corpus.test.ts
 * runs it; test/integration/bad-input.test.ts checks the exact answers of the main surfaces.
 *
 * Credentials: `right` sends each function its own (ingest token, admin token, push token in
 * ?token=); `none` sends none; `wrong` a wrong one where that function looks for it;
 * `other` the credential of another surface (the admin token to ingest, and so on).
 */

export type Credentials = 'right' | 'none' | 'wrong' | 'other';

export interface Expectation {
  status: number;
  /** The `error` of the JSON answer. */
  error?: RegExp;
}

export interface CorpusCase {
  name: string;
  /** Default: every function. */
  to?: readonly FunctionName[];
  credentials: Credentials;
  /** Default: PUT for admin (at /destinations/corpus), POST elsewhere. */
  method?: string;
  /** After the function's name; admin default /destinations/corpus. */
  path?: Partial<Record<FunctionName, string>>;
  /** Query string (without ?), added to the credentials'. */
  query?: string;
  headers?: Record<string, string>;
  body?: Buffer | string;
  /** Written byte for byte on a socket: for what Node's HTTP client refuses to send. */
  raw?: true;
  /** Default for every function, and per function. */
  expect: Expectation;
  per?: Partial<Record<FunctionName, Expectation>>;
}

export const INTERNAL: readonly FunctionName[] = ['route', 'deliver', 'replay', 'pump', 'suspension-check'];
export const PUSHED: readonly FunctionName[] = ['route', 'deliver', 'replay'];
export const SCHEDULED: readonly FunctionName[] = ['pump', 'suspension-check'];
/** Functions that read a JSON body. */
export const JSON_READERS: readonly FunctionName[] = ['ingest', 'admin', ...PUSHED];

const STRUCTURED = { 'content-type': 'application/cloudevents+json' };
const JSON_TYPE = { 'content-type': 'application/json' };

const validEvent = { specversion: '1.0', id: 'corpus-1', source: '/corpus', type: 'corpus.test', data: { ok: true } };
const envelope = (message: unknown, subscription: unknown = 'projects/p/subscriptions/s') => JSON.stringify({ subscription, message });
const goodMessage = { messageId: 'm-1', publishTime: '2026-11-23T10:00:00Z', attributes: {}, data: '' };

const deepArrays = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
const deepObjects = `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`;
const invalidUtf8Json = Buffer.concat([Buffer.from('{"specversion":"1.0","id":"'), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('","source":"/corpus","type":"corpus.test"}')]);

const UNAUTHORIZED = /bearer token|push token/;
const NOT_ALLOWED = /^method \w+ not allowed/;

export const CORPUS: CorpusCase[] = [
  // ---------------------------------------------------------------- credentials first
  { name: 'no credentials', credentials: 'none', headers: STRUCTURED, body: JSON.stringify(validEvent), expect: { status: 401, error: UNAUTHORIZED } },
  { name: 'a wrong credential', credentials: 'wrong', headers: STRUCTURED, body: JSON.stringify(validEvent), expect: { status: 401, error: UNAUTHORIZED } },
  { name: "another surface's credential", credentials: 'other', headers: STRUCTURED, body: JSON.stringify(validEvent), expect: { status: 401, error: UNAUTHORIZED } },
  { name: 'no credentials and a body that is not JSON', credentials: 'none', headers: JSON_TYPE, body: '{"message": ', expect: { status: 401, error: UNAUTHORIZED } },
  { name: 'no credentials and 10,000 levels of nesting', credentials: 'none', headers: JSON_TYPE, body: deepArrays, expect: { status: 401, error: UNAUTHORIZED } },
  { name: 'two Authorization headers', credentials: 'none', headers: { authorization: 'Bearer a, Bearer b' }, body: '{}', expect: { status: 401, error: UNAUTHORIZED } },
  { name: 'Basic instead of Bearer', credentials: 'none', headers: { authorization: 'Basic YWRtaW46YWRtaW4=' }, body: '{}', expect: { status: 401, error: UNAUTHORIZED } },
  { name: 'a 12 KiB junk header, no credentials', credentials: 'none', headers: { 'x-junk': 'j'.repeat(12 * 1024) }, body: '{}', expect: { status: 401, error: UNAUTHORIZED } },
  { name: "headers over Node's 16 KiB limit", credentials: 'right', headers: { 'x-junk': 'j'.repeat(20 * 1024) }, body: '{}', expect: { status: 431, error: /request headers too large/ } },
  { name: 'a header value with a control character (bytes no HTTP client would send)', credentials: 'right', raw: true, headers: { 'x-odd': 'a\u0001b' }, body: '{}', expect: { status: 400, error: /malformed HTTP request/ } },
  { name: 'a request line with a space in the path', credentials: 'right', raw: true, path: { ingest: '/a b', admin: '/destinations/a b', route: '/a b', deliver: '/a b', replay: '/a b', pump: '/a b', 'suspension-check': '/a b' }, body: '{}', expect: { status: 400, error: /malformed HTTP request/ } },

  // ---------------------------------------------------------------- methods
  ...['GET', 'PUT', 'DELETE', 'PATCH'].map<CorpusCase>((method) => ({
    name: `${method} where it is not allowed`,
    credentials: 'right',
    method,
    path: { admin: method === 'PATCH' ? '/destinations/corpus' : '/replays/corpus-replay/x' },
    expect: { status: 405, error: NOT_ALLOWED },
    per: { admin: { status: method === 'PATCH' ? 405 : 404, error: method === 'PATCH' ? NOT_ALLOWED : /no admin route/ } },
  })),

  // ---------------------------------------------------------------- bodies that are not what they claim
  {
    name: 'a body that is not JSON',
    to: JSON_READERS,
    credentials: 'right',
    headers: JSON_TYPE,
    body: '{"specversion": "1.0", "id": ',
    expect: { status: 400, error: /not valid JSON/ },
    per: { ingest: { status: 400, error: /invalid CloudEvent|not a CloudEvent/ } },
  },
  ...[
    ['JSON null', 'null'],
    ['a JSON number', '42'],
    ['a JSON string', '"event"'],
    ['a JSON array', '[1, 2, 3]'],
    ['an empty object', '{}'],
  ].map<CorpusCase>(([name, body]) => ({
    name: `${name} instead of the expected object`,
    to: JSON_READERS,
    credentials: 'right',
    headers: STRUCTURED,
    body,
    expect: { status: 400, error: /./ },
  })),
  { name: 'an empty body', to: JSON_READERS, credentials: 'right', headers: STRUCTURED, body: '', expect: { status: 400, error: /./ } },
  {
    name: 'invalid UTF-8 inside a JSON string',
    to: JSON_READERS,
    credentials: 'right',
    headers: STRUCTURED,
    body: invalidUtf8Json,
    expect: { status: 400, error: /not valid UTF-8/ },
    per: { ingest: { status: 400, error: /invalid CloudEvent/ } },
  },
  {
    name: 'a lone UTF-16 surrogate in a JSON string (valid JSON, not UTF-8 text)',
    to: ['ingest', 'admin'],
    credentials: 'right',
    headers: STRUCTURED,
    body: '{"specversion":"1.0","id":"corpus-\\ud800","source":"/corpus","type":"corpus.test","url":"https://hooks.example.com/x","eventTypes":["\\udfff"]}',
    expect: { status: 400, error: /lone UTF-16 surrogate at id, eventTypes\[0\]/ },
    per: { ingest: { status: 400, error: /invalid CloudEvent/ } },
  },
  {
    name: '10,000 nested arrays',
    to: JSON_READERS,
    credentials: 'right',
    headers: STRUCTURED,
    body: deepArrays,
    expect: { status: 400, error: /nested more than \d+ levels/ },
    per: { ingest: { status: 400, error: /invalid CloudEvent/ } },
  },
  {
    name: '10,000 nested objects',
    to: JSON_READERS,
    credentials: 'right',
    headers: STRUCTURED,
    body: deepObjects,
    expect: { status: 400, error: /nested more than \d+ levels/ },
    per: { ingest: { status: 400, error: /invalid CloudEvent/ } },
  },
  {
    name: 'a CloudEvent whose data nests 10,000 levels deep',
    to: ['ingest'],
    credentials: 'right',
    headers: STRUCTURED,
    body: `{"specversion":"1.0","id":"deep","source":"/corpus","type":"corpus.test","data":${deepArrays}}`,
    expect: { status: 400, error: /invalid CloudEvent/ },
  },
  {
    name: 'any body to a function that takes none',
    to: SCHEDULED,
    credentials: 'right',
    query: 'runSeconds=0',
    headers: JSON_TYPE,
    body: deepArrays,
    expect: { status: 400, error: /takes no request body/ },
  },

  // ---------------------------------------------------------------- CloudEvents with the wrong types
  ...(
    [
      ['id is a number', { ...validEvent, id: 42 }],
      ['source is an array', { ...validEvent, source: ['/a'] }],
      ['type is null', { ...validEvent, type: null }],
      ['specversion is 1 (a number)', { ...validEvent, specversion: 1 }],
      ['time is not a timestamp', { ...validEvent, time: 'yesterday' }],
      ['an extension attribute is an object', { ...validEvent, tenant: { name: 'acme' } }],
      ['an extension name with capitals', { ...validEvent, TenantId: 'acme' }],
      ['data and data_base64 both', { ...validEvent, data_base64: 'AAAA' }],
      ['data_base64 that is not base64', { ...validEvent, data: undefined, data_base64: '!!!' }],
      ['an id with a control character', { ...validEvent, id: 'a\u0000b' }],
      ['a type with a line break', { ...validEvent, type: 'corpus.\ntest' }],
    ] as const
  ).map<CorpusCase>(([name, event]) => ({
    name: `a structured CloudEvent where ${name}`,
    to: ['ingest'],
    credentials: 'right',
    headers: STRUCTURED,
    body: JSON.stringify(event),
    expect: { status: 400, error: /invalid CloudEvent/ },
  })),
  {
    name: 'a batch of 1,000 items, every one invalid',
    to: ['ingest'],
    credentials: 'right',
    headers: { 'content-type': 'application/cloudevents-batch+json' },
    body: JSON.stringify(Array.from({ length: 1000 }, (_, i) => ({ ...validEvent, id: i }))),
    expect: { status: 400, error: /invalid CloudEvent batch: 1000 problem/ },
  },
  {
    name: 'binary mode with a ce-id of 12 KiB',
    to: ['ingest'],
    credentials: 'right',
    headers: { 'ce-specversion': '1.0', 'ce-id': 'i'.repeat(12 * 1024), 'ce-source': '/corpus', 'ce-type': 'corpus.test', 'content-type': 'application/json' },
    body: '{}',
    expect: { status: 400, error: /invalid CloudEvent/ },
  },
  {
    name: 'binary mode with raw non-ASCII bytes in a ce- header (not percent-encoded)',
    to: ['ingest'],
    credentials: 'right',
    headers: { 'ce-specversion': '1.0', 'ce-id': 'caf\u00e9', 'ce-source': '/corpus', 'ce-type': 'corpus.test', 'content-type': 'application/json' },
    body: '{}',
    expect: { status: 400, error: /invalid CloudEvent/ },
  },
  {
    name: 'binary mode with a percent-encoding that is not UTF-8',
    to: ['ingest'],
    credentials: 'right',
    headers: { 'ce-specversion': '1.0', 'ce-id': 'caf%E9', 'ce-source': '/corpus', 'ce-type': 'corpus.test', 'content-type': 'application/json' },
    body: '{}',
    expect: { status: 400, error: /invalid CloudEvent/ },
  },
  {
    name: 'binary mode with a content type that is not a media type',
    to: ['ingest'],
    credentials: 'right',
    headers: { 'ce-specversion': '1.0', 'ce-id': 'x', 'ce-source': '/corpus', 'ce-type': 'corpus.test', 'content-type': ';;;' },
    body: '{}',
    expect: { status: 400, error: /invalid CloudEvent/ },
  },
  {
    name: 'a CloudEvents format Herald does not take',
    to: ['ingest'],
    credentials: 'right',
    headers: { 'content-type': 'application/cloudevents+protobuf' },
    body: Buffer.from([0x0a, 0x03, 0x31, 0x2e, 0x30]),
    expect: { status: 400, error: /invalid CloudEvent/ },
  },
  {
    name: 'a body over the size limit',
    to: ['ingest'],
    credentials: 'right',
    headers: STRUCTURED,
    body: JSON.stringify({ ...validEvent, data: 'x'.repeat(3 * 1024 * 1024) }),
    expect: { status: 413, error: /over the \d+-byte limit/ },
  },

  // ---------------------------------------------------------------- admin specs of the wrong types
  ...(
    [
      ['url is a number', { url: 42 }],
      ['eventTypes is a string', { url: 'https://hooks.example.com/x', eventTypes: 'a.b' }],
      ['10,000 event types', { url: 'https://hooks.example.com/x', eventTypes: Array.from({ length: 10_000 }, (_, i) => `t${i}`) }],
      ['a policy nested in itself', { url: 'https://hooks.example.com/x', policy: { policy: { policy: {} } } }],
      ['a url of 100 KiB', { url: `https://hooks.example.com/${'x'.repeat(100 * 1024)}` }],
      ['a url to the metadata server', { url: 'https://169.254.169.254/computeMetadata/v1/' }],
      ['__proto__ as a field', JSON.parse('{"url":"https://hooks.example.com/x","__proto__":{"admin":true}}') as unknown],
    ] as const
  ).map<CorpusCase>(([name, spec]) => ({
    name: `a destination spec where ${name}`,
    to: ['admin'],
    credentials: 'right',
    headers: JSON_TYPE,
    body: JSON.stringify(spec),
    expect: { status: 400, error: /invalid destination spec/ },
  })),
  { name: 'rotate-secret with a body that is not an object', to: ['admin'], credentials: 'right', method: 'POST', path: { admin: '/destinations/corpus/rotate-secret' }, headers: JSON_TYPE, body: '[]', expect: { status: 400, error: /invalid rotate-secret request/ } },
  { name: 'a destination id of 10 KiB', to: ['admin'], credentials: 'right', method: 'GET', path: { admin: `/destinations/${'a'.repeat(10 * 1024)}` }, expect: { status: 400, error: /invalid destination id/ } },
  { name: 'a path that is not valid percent-encoding', to: ['admin'], credentials: 'right', method: 'GET', path: { admin: '/destinations/%E0%A4%A' }, expect: { status: 400, error: /percent-encoding/ } },
  { name: 'a deliveries query with a bad limit and status', to: ['admin'], credentials: 'right', method: 'GET', path: { admin: '/destinations/corpus/deliveries?limit=-1&status=LOST' }, expect: { status: 400, error: /./ } },

  // ---------------------------------------------------------------- push envelopes
  ...(
    [
      ['no message', JSON.stringify({ subscription: 'projects/p/subscriptions/s' })],
      ['a message that is an array', envelope([goodMessage])],
      ['a subscription that is a number', envelope(goodMessage, 7)],
      ['data that is not base64', envelope({ ...goodMessage, data: '***' })],
      ['attributes that are numbers', envelope({ ...goodMessage, attributes: { 'ce-id': 1 } })],
      ['attributes that are an array', envelope({ ...goodMessage, attributes: ['ce-id'] })],
      ['a publishTime that is not a time', envelope({ ...goodMessage, publishTime: 'now' })],
      ['no messageId', envelope({ ...goodMessage, messageId: undefined })],
      ['a body that is a bare string', '"projects/p/subscriptions/s"'],
    ] as const
  ).map<CorpusCase>(([name, body]) => ({
    name: `a push envelope with ${name}`,
    to: PUSHED,
    credentials: 'right',
    headers: JSON_TYPE,
    body,
    expect: { status: 400, error: /not a Pub\/Sub push request/ },
  })),
  { name: 'a push envelope as form data', to: PUSHED, credentials: 'right', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'message=1&subscription=2', expect: { status: 400, error: /not a Pub\/Sub push request/ } },

  // ---------------------------------------------------------------- scheduler queries
  ...['runSeconds=soon', 'runSeconds=-1', 'runSeconds=100000', 'hold=maybe'].map<CorpusCase>((query) => ({
    name: `pump with ${query}`,
    to: ['pump'],
    credentials: 'right',
    query,
    expect: { status: 400, error: /invalid pump query/ },
  })),
];

/** Every (case, function) pair the corpus sends. */
export function corpusRequests(): { c: CorpusCase; fn: FunctionName }[] {
  return CORPUS.flatMap((c) => (c.to ?? FUNCTION_NAMES).map((fn) => ({ c, fn })));
}
