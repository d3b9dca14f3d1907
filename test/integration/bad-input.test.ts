import { startTestStack, TestStack } from '../support/stack';
import { SubscriptionTap } from '../support/subscription-tap';
import { Receiver } from '../support/receiver';
import { eventually } from '../support/eventually';

/**
 * Bad input on every HTTP surface of a real local stack (emulators): each is answered with
 * the documented status and a body naming the problem, nothing is half-accepted, nothing
 * is silently dropped, and the stack keeps serving afterwards.
 */

const PROJECT = `bad-input-test-${Date.now().toString(36)}`;
const MAX_BODY_BYTES = 2048;
const MAX_EVENT_BYTES = 1024;

const STRUCTURED = 'application/cloudevents+json';
const BATCH = 'application/cloudevents-batch+json';

type Issue = { path: string; message: string };
type Reply = { status: number; headers: Headers; body: unknown };
type Expected = { path: string; message: RegExp };

let stack: TestStack;
const taps: SubscriptionTap[] = [];
/** The destination of the events this file sends: only valid events may reach it. */
const sink = new Receiver();

// ---------------------------------------------------------------- requests

async function call(method: string, path: string, init: { headers?: Record<string, string>; body?: string | Buffer } = {}): Promise<Reply> {
  const res = await fetch(`${stack.url}${path}`, { method, headers: init.headers ?? {}, ...(init.body !== undefined ? { body: init.body } : {}) });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    /* keep the text: the assertions below then fail on the shape */
  }
  return { status: res.status, headers: res.headers, body };
}

const bearer = (token: string | undefined): Record<string, string> => (token === undefined ? {} : { authorization: `Bearer ${token}` });

/** `token` given (even as undefined) replaces the right one: undefined sends none. */
type As = { token?: string | undefined };
const tokenOf = (as: As, right: string) => ('token' in as ? as.token : right);

function ingest(headers: Record<string, string>, body: string | Buffer, as: As = {}): Promise<Reply> {
  return call('POST', '/ingest', { headers: { ...bearer(tokenOf(as, stack.config.ingestToken)), ...headers }, body });
}

function admin(method: string, path: string, body?: string, as: As = {}): Promise<Reply> {
  const headers = { ...bearer(tokenOf(as, stack.config.adminToken)), 'content-type': 'application/json' };
  return call(method, `/admin${path}`, { headers, ...(body !== undefined ? { body } : {}) });
}

function push(fn: 'route' | 'deliver' | 'replay', body: string, options: As & { contentType?: string } = {}): Promise<Reply> {
  const token = tokenOf(options, stack.config.pushToken!);
  const query = token === undefined ? '' : `?token=${encodeURIComponent(token)}`;
  return call('POST', `/${fn}${query}`, { headers: { 'content-type': options.contentType ?? 'application/json' }, body });
}

// ---------------------------------------------------------------- events

const ATTRIBUTES = { id: 'evt-1', source: '/bad-input', type: 'com.example.bad-input', specversion: '1.0' } as const;
type AttributeName = keyof typeof ATTRIBUTES;
const REQUIRED: AttributeName[] = ['id', 'source', 'type', 'specversion'];

function without<T extends object>(value: T, ...keys: string[]): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([k]) => !keys.includes(k))) as Partial<T>;
}

function binaryHeaders(attributes: Record<string, string>): Record<string, string> {
  return { 'content-type': 'application/json', ...Object.fromEntries(Object.entries(attributes).map(([k, v]) => [`ce-${k}`, v])) };
}

const structured = (overrides: Record<string, unknown> = {}) => ({ ...ATTRIBUTES, data: { ok: true }, ...overrides });

// ---------------------------------------------------------------- assertions

function expectJson(reply: Reply): void {
  expect(reply.headers.get('content-type')).toMatch(/^application\/json/);
}

/** A documented error: `{"error": "…", "issues": [{"path", "message"}]}` holding each expected issue. */
function expectIssues(reply: Reply, status: number, expected: Expected[]): Issue[] {
  expect(reply.status).toBe(status);
  expectJson(reply);
  const body = reply.body as { error: unknown; issues: unknown };
  expect(typeof body.error).toBe('string');
  expect((body.error as string).length).toBeGreaterThan(0);
  expect(Array.isArray(body.issues)).toBe(true);
  const issues = body.issues as Issue[];
  for (const issue of issues) expect(issue).toEqual({ path: expect.any(String), message: expect.any(String) });
  for (const e of expected) expect(issues).toContainEqual({ path: e.path, message: expect.stringMatching(e.message) });
  return issues;
}

/** An error answer without issues (auth, not found, method): the message says what to do. */
function expectError(reply: Reply, status: number, message: RegExp): void {
  expect(reply.status).toBe(status);
  expectJson(reply);
  expect(reply.body).toEqual(expect.objectContaining({ error: expect.stringMatching(message) }));
}

// ---------------------------------------------------------------- lifecycle

beforeAll(async () => {
  stack = await startTestStack(PROJECT, { HERALD_MAX_BODY_BYTES: String(MAX_BODY_BYTES), HERALD_MAX_EVENT_BYTES: String(MAX_EVENT_BYTES) });
  await sink.start();
  const res = await fetch(`${stack.url}/admin/destinations/bad-input-sink`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${stack.config.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url: `${sink.url}/sink`, eventTypes: [ATTRIBUTES.type] }),
  });
  expect(res.status).toBe(201);
});

afterAll(async () => {
  await Promise.all(taps.map((t) => t.close()));
  await stack?.stop({ purge: true });
  await sink.stop();
});

// ---------------------------------------------------------------- ingest

describe('ingest: authentication and method', () => {
  test.each([
    ['no Authorization header', undefined],
    ['a wrong token', 'herald_ingest_not-the-right-token'],
  ])('%s → 401 naming the header to send', async (_, token) => {
    const reply = await ingest(binaryHeaders(ATTRIBUTES), '{}', { token });
    expectError(reply, 401, /Authorization: Bearer <ingest token or an account key with the publish scope>/);
    expect(reply.headers.get('www-authenticate')).toBe('Bearer');
  });

  test('the admin token is not an ingest token', async () => {
    expectError(await ingest(binaryHeaders(ATTRIBUTES), '{}', { token: stack.config.adminToken }), 401, /ingest token/);
  });

  test('GET /ingest → 405 with Allow: POST', async () => {
    const reply = await call('GET', '/ingest', { headers: bearer(stack.config.ingestToken) });
    expectError(reply, 405, /use POST/);
    expect(reply.headers.get('allow')).toBe('POST');
  });
});

describe('ingest: binary mode', () => {
  test.each(REQUIRED)('missing ce-%s → 400 with an issue at that header', async (name) => {
    const reply = await ingest(binaryHeaders(without(ATTRIBUTES, name) as Record<string, string>), '{"x":1}');
    const issues = expectIssues(reply, 400, [{ path: `ce-${name}`, message: new RegExp(`^${name} is required$`) }]);
    expect(issues).toHaveLength(1);
  });

  test.each(['0.3', '2.0'])('ce-specversion %s → 400 saying 1.0 is required', async (version) => {
    const reply = await ingest(binaryHeaders({ ...ATTRIBUTES, specversion: version }), '{"x":1}');
    expectIssues(reply, 400, [{ path: 'ce-specversion', message: new RegExp(`must be "1\\.0" \\(got "${version.replace('.', '\\.')}"\\)`) }]);
  });

  test('every problem is listed at once', async () => {
    const reply = await ingest(binaryHeaders({ specversion: '1.0', id: 'evt-2', time: 'yesterday' }), '{}');
    const issues = expectIssues(reply, 400, [
      { path: 'ce-source', message: /required/ },
      { path: 'ce-type', message: /required/ },
      { path: 'ce-time', message: /RFC 3339/ },
    ]);
    expect(issues).toHaveLength(3);
  });
});

describe('ingest: structured mode', () => {
  test('a body that is not JSON → 400 at body', async () => {
    const reply = await ingest({ 'content-type': STRUCTURED }, '{"specversion": "1.0", "id": ');
    expectIssues(reply, 400, [{ path: 'body', message: /not valid JSON/ }]);
  });

  test('a JSON value that is not an object → 400', async () => {
    expectIssues(await ingest({ 'content-type': STRUCTURED }, '[1, 2]'), 400, [{ path: 'body', message: /must be a JSON object/ }]);
  });

  test.each(REQUIRED)('missing %s → 400 naming the field', async (name) => {
    const reply = await ingest({ 'content-type': STRUCTURED }, JSON.stringify(without(structured(), name)));
    expectIssues(reply, 400, [{ path: name, message: new RegExp(`^${name} is required$`) }]);
  });

  test('an event missing two fields → both are listed', async () => {
    const reply = await ingest({ 'content-type': STRUCTURED }, JSON.stringify(without(structured(), 'id', 'source')));
    const issues = expectIssues(reply, 400, [
      { path: 'id', message: /^id is required$/ },
      { path: 'source', message: /^source is required$/ },
    ]);
    expect(issues).toHaveLength(2);
  });
});

describe('ingest: content type', () => {
  // README/SPEC: ingest takes binary, structured or batch mode; anything else is a 400 with the problem listed.
  test('an unsupported CloudEvents format → 400 naming the supported ones', async () => {
    const reply = await ingest({ 'content-type': 'application/cloudevents+xml' }, '<event/>');
    expectIssues(reply, 400, [{ path: 'content-type', message: /unsupported CloudEvents format application\/cloudevents\+xml.*application\/cloudevents\+json/ }]);
  });

  test('no content type and no ce-* headers → 400 explaining the three modes', async () => {
    const reply = await ingest({}, Buffer.from(JSON.stringify(structured())));
    expectIssues(reply, 400, [{ path: 'content-type', message: /not a CloudEvent: send binary mode .*got content-type "\(none\)"/ }]);
  });

  test('plain JSON without ce-* headers → 400 naming the content type it got', async () => {
    const reply = await ingest({ 'content-type': 'application/json' }, JSON.stringify(structured()));
    expectIssues(reply, 400, [{ path: 'content-type', message: /got content-type "application\/json"/ }]);
  });
});

describe('ingest: batch mode', () => {
  const item = (id: string) => structured({ id });

  test('one invalid item of three → 400 at that item, nothing accepted', async () => {
    const batch = [item('batch-ok-1'), without(item('batch-bad'), 'source'), item('batch-ok-2')];
    const reply = await ingest({ 'content-type': BATCH }, JSON.stringify(batch));
    const issues = expectIssues(reply, 400, [{ path: '[1].source', message: /^source is required$/ }]);
    expect(issues).toHaveLength(1);
    expect(reply.body).not.toHaveProperty('accepted');
    // That none of the batch reached the events topic is checked at the end of this file.
  });

  test('problems in several items are all listed, each under its index', async () => {
    const batch = [{ ...item('b-1'), specversion: '0.3' }, item('b-2'), without(item('b-3'), 'type', 'id')];
    const issues = expectIssues(await ingest({ 'content-type': BATCH }, JSON.stringify(batch)), 400, [
      { path: '[0].specversion', message: /must be "1\.0"/ },
      { path: '[2].type', message: /required/ },
      { path: '[2].id', message: /required/ },
    ]);
    expect(issues).toHaveLength(3);
  });

  test('an item that is not an object → 400 at its index', async () => {
    expectIssues(await ingest({ 'content-type': BATCH }, JSON.stringify([item('b-4'), 'nope'])), 400, [{ path: '[1]', message: /must be a JSON object/ }]);
  });

  test('a batch that is not an array → 400', async () => {
    expectIssues(await ingest({ 'content-type': BATCH }, JSON.stringify(item('b-5'))), 400, [{ path: 'body', message: /must be a JSON array/ }]);
  });

  test('a batch body that is not JSON → 400', async () => {
    expectIssues(await ingest({ 'content-type': BATCH }, '[{"id": "b-6",'), 400, [{ path: 'body', message: /not valid JSON/ }]);
  });

  // The CloudEvents JSON batch format: an empty batch is "also valid in a request".
  test('an empty batch is valid and accepts nothing → 202 {"accepted": []}', async () => {
    const reply = await ingest({ 'content-type': BATCH }, '[]');
    expect(reply.status).toBe(202);
    expect(reply.body).toEqual({ accepted: [] });
  });
});

describe('ingest: size limits', () => {
  test(`a body over HERALD_MAX_BODY_BYTES (${MAX_BODY_BYTES}) → 413 naming the limit`, async () => {
    const reply = await ingest(binaryHeaders({ ...ATTRIBUTES, id: 'too-big' }), Buffer.alloc(MAX_BODY_BYTES + 1, 'a'));
    expectIssues(reply, 413, [{ path: 'body', message: new RegExp(`${MAX_BODY_BYTES} bytes`) }]);
    expect((reply.body as { error: string }).error).toContain(`over the ${MAX_BODY_BYTES}-byte limit`);
  });

  test('a single event over HERALD_MAX_EVENT_BYTES in an acceptable body → 413', async () => {
    const body = JSON.stringify(structured({ id: 'big-event', data: 'x'.repeat(MAX_EVENT_BYTES + 100) }));
    expect(Buffer.byteLength(body)).toBeLessThanOrEqual(MAX_BODY_BYTES);
    const reply = await ingest({ 'content-type': STRUCTURED }, body);
    expectIssues(reply, 413, [{ path: 'body', message: new RegExp(`the limit is ${MAX_EVENT_BYTES}`) }]);
  });

  test('one oversized event in a batch → 413 at its index, nothing accepted', async () => {
    const batch = [structured({ id: 'small' }), structured({ id: 'big', data: 'x'.repeat(MAX_EVENT_BYTES) })];
    const body = JSON.stringify(batch);
    expect(Buffer.byteLength(body)).toBeLessThanOrEqual(MAX_BODY_BYTES);
    const issues = expectIssues(await ingest({ 'content-type': BATCH }, body), 413, [{ path: '[1]', message: new RegExp(`the limit is ${MAX_EVENT_BYTES}`) }]);
    expect(issues).toHaveLength(1);
  });
});

// ---------------------------------------------------------------- admin

describe('admin: authentication', () => {
  test.each([
    ['no Authorization header', undefined],
    ['a wrong token', 'herald_admin_not-the-right-token'],
    ['the ingest token', 'ingest'],
  ])('%s → 401 naming the header to send', async (_, token) => {
    const reply = await admin('GET', '/destinations', undefined, { token: token === 'ingest' ? stack.config.ingestToken : token });
    expectError(reply, 401, /Authorization: Bearer <admin token or account key>/);
    expect(reply.headers.get('www-authenticate')).toBe('Bearer');
  });

  test('the token is checked before the body: broken JSON without a token → 401', async () => {
    expectError(await admin('PUT', '/destinations/x', '{"url": ', { token: undefined }), 401, /Authorization: Bearer <admin token or account key>/);
  });
});

describe('admin: destinations that do not exist, bad ids, wrong methods', () => {
  test.each(['GET', 'DELETE'])('%s an unknown destination → 404 saying how to list them', async (method) => {
    expectError(await admin(method, '/destinations/no-such-destination'), 404, /no destination "no-such-destination"; list them with GET \/admin\/destinations/);
  });

  test.each([
    ['GET', undefined],
    ['DELETE', undefined],
    ['PUT', JSON.stringify({ url: 'https://example.com/hook' })],
  ])('%s an invalid id (Bad_ID) → 400 at id', async (method, body) => {
    const reply = await admin(method, '/destinations/Bad_ID', body);
    expectIssues(reply, 400, [{ path: 'id', message: /lowercase letters, digits and hyphens/ }]);
    expect((reply.body as { error: string }).error).toContain('"Bad_ID"');
  });

  test('POST /admin/destinations/x → 405 with an Allow header', async () => {
    const reply = await admin('POST', '/destinations/x', '{}');
    expectError(reply, 405, /method POST not allowed/);
    expect(reply.headers.get('allow')?.split(', ').sort()).toEqual(['DELETE', 'GET', 'PUT']);
  });

  test('a path segment that is not valid percent-encoding (%E0) → 400 saying how to encode %', async () => {
    expectIssues(await admin('GET', '/destinations/%E0'), 400, [{ path: 'path', message: /not valid percent-encoding; encode "%" as %25/ }]);
  });

  test('an unknown admin path → 404 pointing at the README', async () => {
    expectError(await admin('GET', '/nothing-here'), 404, /no admin route GET \/nothing-here/);
  });
});

describe('admin: bad destination specs', () => {
  test.each<[string, unknown, Expected[]]>([
    ['a url that is not https', { url: 'http://example.com/hook' }, [{ path: 'url', message: /must use https/ }]],
    ['a url that is not a URL', { url: 'not a url' }, [{ path: 'url', message: /absolute URL/ }]],
    ['an unknown field', { url: 'https://example.com/hook', colour: 'red' }, [{ path: '', message: /unknown field colour/ }]],
    ['both url and topic', { url: 'https://example.com/hook', topic: `projects/${PROJECT}/topics/orders` }, [{ path: 'url', message: /exactly one of url or topic/ }]],
    ['neither url nor topic', { eventTypes: ['a.b'] }, [{ path: 'url', message: /exactly one of url or topic/ }]],
    ['an unknown policy preset', { url: 'https://example.com/hook', policy: 'sometimes' }, [{ path: 'policy', message: /policy must be one of .*event-platform/ }]],
    ['a policy of the wrong type', { url: 'https://example.com/hook', policy: 42 }, [{ path: 'policy', message: /preset name .* or a custom policy object/ }]],
    ['a spec that is not an object', ['https://example.com/hook'], [{ path: '', message: /must be a JSON object/ }]],
  ])('%s → 400', async (_, spec, expected) => {
    expectIssues(await admin('PUT', '/destinations/bad-spec', JSON.stringify(spec)), 400, expected);
  });

  test('several problems → every one listed', async () => {
    const spec = { url: 'not a url', failureMode: 'sometimes', technicalEmail: 'nobody', eventTypes: ['a*b'] };
    const issues = expectIssues(await admin('PUT', '/destinations/bad-spec', JSON.stringify(spec)), 400, [
      { path: 'url', message: /absolute URL/ },
      { path: 'failureMode', message: /"retry" or "queue"/ },
      { path: 'technicalEmail', message: /email/ },
      { path: 'eventTypes', message: /wildcard/ },
    ]);
    expect(issues).toHaveLength(4);
  });

  test.each([
    ['application/json', '{"url": '],
    ['text/plain', '{"url": '],
  ])('a body that is not JSON (%s) → 400 at body', async (contentType, body) => {
    const reply = await call('PUT', '/admin/destinations/bad-spec', { headers: { ...bearer(stack.config.adminToken), 'content-type': contentType }, body });
    expectIssues(reply, 400, [{ path: 'body', message: /./ }]);
    expect((reply.body as { error: string }).error).toMatch(/body is not valid JSON/);
  });

  test('none of the bad specs created a destination', async () => {
    expectError(await admin('GET', '/destinations/bad-spec'), 404, /no destination "bad-spec"/);
  });
});

// ---------------------------------------------------------------- push endpoints

const SUBSCRIPTION = `projects/${PROJECT}/subscriptions/herald-events-route`;

function envelope(message: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return { subscription: SUBSCRIPTION, message: { messageId: 'm-1', publishTime: new Date().toISOString(), attributes: {}, data: '', ...message }, ...extra };
}

describe.each(['route', 'deliver', 'replay'] as const)('push endpoint /%s', (fn) => {
  test.each([
    ['without the token', undefined],
    ['with a wrong token', 'herald_push_not-the-right-token'],
  ])('%s → 401', async (_, token) => {
    expectError(await push(fn, JSON.stringify(envelope({})), { token }), 401, /push token/);
  });

  test('broken JSON without the token → 401, not 400', async () => {
    expectError(await push(fn, '{"message": ', { token: undefined }), 401, /push token/);
  });

  test.each(['application/json', 'text/plain'])('a body that is not JSON (%s) → 400', async (contentType) => {
    expectIssues(await push(fn, '{"message": ', { contentType }), 400, [{ path: 'body', message: /./ }]);
  });

  test.each<[string, unknown, Expected[]]>([
    ['no message', { subscription: SUBSCRIPTION }, [{ path: 'message', message: /message \(object\) is required/ }]],
    ['no subscription', { message: envelope({}).message }, [{ path: 'subscription', message: /subscription \(string\) is required/ }]],
    ['data that is not base64', envelope({ data: 'not base64!' }), [{ path: 'message.data', message: /base64/ }]],
    ['a publishTime that is not a timestamp', envelope({ publishTime: 'last tuesday' }), [{ path: 'message.publishTime', message: /RFC 3339/ }]],
    ['attributes that are not strings', envelope({ attributes: { 'ce-id': 7 } }), [{ path: 'message.attributes.ce-id', message: /./ }]],
    ['a JSON array', [], [{ path: '', message: /./ }]],
  ])('an envelope with %s → 400 with issues', async (_, body, expected) => {
    expectIssues(await push(fn, JSON.stringify(body)), 400, expected);
  });
});

describe('an invalid event pushed to /route', () => {
  test('is acked (204) and put on the dead-letter topic unchanged, with the reason', async () => {
    const deadLetters = new SubscriptionTap(PROJECT, `${stack.config.topicPrefix}-dead-letter-hold`);
    taps.push(deadLetters);
    const data = Buffer.from([0x7b, 0x00, 0xff, 0x22, 0x7d]); // arbitrary bytes, not UTF-8
    const attributes = { 'ce-source': '/bad-input', 'ce-type': 'com.example.bad-input', 'ce-specversion': '1.0', 'content-type': 'application/octet-stream' };
    const reply = await push('route', JSON.stringify(envelope({ messageId: 'bad-input-no-id', data: data.toString('base64'), attributes })));
    expect(reply.status).toBe(204);

    const dead = await deadLetters.find('the dead letter', (m) => m.attributes['herald-message-id'] === 'bad-input-no-id');
    expect(dead.data.equals(data)).toBe(true);
    expect(dead.attributes).toEqual({
      ...attributes,
      'herald-reason': 'invalid-event',
      'herald-error': expect.stringContaining('attributes.ce-id') as string,
      'herald-message-id': 'bad-input-no-id',
      'herald-subscription': SUBSCRIPTION,
    });
  });
});

// ---------------------------------------------------------------- afterwards

describe('after all of the above', () => {
  test('GET /healthz still answers 200 (with the details to the admin token)', async () => {
    const reply = await call('GET', '/healthz', { headers: bearer(stack.config.adminToken) });
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual(expect.objectContaining({ status: 'ok', projectId: PROJECT }));
  });

  test('a valid event is still accepted (202) and delivered, and it is the only one delivered', async () => {
    const reply = await ingest(binaryHeaders({ ...ATTRIBUTES, id: 'still-alive' }), '{"ok":true}');
    expect(reply.status).toBe(202);
    expect(reply.body).toEqual({ accepted: ['still-alive'] });
    await eventually('the valid event at its destination', () => sink.requests.find((r) => r.headers['ce-id'] === 'still-alive'));
    await new Promise((r) => setTimeout(r, 500)); // let any stray delivery of a rejected request arrive
    expect(sink.requests.map((r) => r.headers['ce-id'])).toEqual(['still-alive']);
    expect(taps.flatMap((t) => t.errors)).toEqual([]);
  });
});
