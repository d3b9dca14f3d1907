import { ROUTES } from '../../functions/admin/routes';
import { patient } from '../support/patience';
import { eventually } from '../support/eventually';
import { catalogueNow } from '../support/event-types';
import { Receiver } from '../support/receiver';
import { startTestStack, TestStack } from '../support/stack';

/**
 * Accounts end to end on the emulators: the same destination id in three accounts, events
 * reaching only their own account, keys (scopes, revocation, expiry), seed 003's settings, and
 * an isolation suite that takes the admin router's own route list, so a new route without
 * coverage fails here.
 */

let stack: TestStack;
/** `/down…` fails while `downIsDown`: a customer's endpoint under maintenance (seed 003). */
let downIsDown = true;
const receiver = new Receiver((req) => ({ status: req.path.startsWith('/fail') || (req.path.startsWith('/down') && downIsDown) ? 500 : 204 }));
const keys = {} as Record<'acme' | 'acmeReader' | 'globex', { key: string; id: string }>;
const TYPE = 'com.example.order.created';

type Reply = { status: number; body: unknown };

const as = (token: string, method: string, path: string, body?: unknown): Promise<Reply> => stack.adminAs(token, method, path, body);

const operator = (method: string, path: string, body?: unknown) => as(stack.config.adminToken, method, path, body);

async function publish(token: string, id: string, extra: Record<string, string> = {}): Promise<Reply> {
  const res = await fetch(`${stack.url}/ingest`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'ce-id': id, 'ce-source': '/accounts-test', 'ce-type': TYPE, 'ce-specversion': '1.0', ...extra },
    body: `{"id":"${id}"}`,
  });
  return { status: res.status, body: (await res.json()) as unknown };
}

async function mintKey(account: string, spec: Record<string, unknown>, token = stack.config.adminToken): Promise<{ key: string; id: string }> {
  const r = await as(token, 'POST', `/accounts/${account}/keys`, spec);
  expect(r.status).toBe(201);
  const body = r.body as { key: string; id: string; scopes: string[] };
  return { key: body.key, id: body.id };
}

beforeAll(async () => {
  await receiver.start();
  stack = await startTestStack(`accounts-test-${Date.now().toString(36)}`);
  for (const [id, name] of [
    ['acme', 'Acme Corp'],
    ['globex', 'Globex'],
  ]) {
    expect((await operator('POST', '/accounts', { id, name, technicalEmail: `ops@${id}.example` })).status).toBe(201);
  }
  keys.acme = await mintKey('acme', { name: 'acme all' });
  keys.acmeReader = await mintKey('acme', { name: 'acme reader', scopes: ['read'] });
  keys.globex = await mintKey('globex', { name: 'globex all' });
  // The same id, `orders`, in three accounts: by the key's own account, by the operator under an account, and in default.
  const spec = (path: string) => ({ url: `${receiver.url}${path}`, eventTypes: ['com.example.order.*'] });
  expect((await as(keys.acme.key, 'PUT', '/destinations/orders', spec('/acme'))).status).toBe(201);
  expect((await operator('PUT', '/accounts/globex/destinations/orders', spec('/globex'))).status).toBe(201);
  expect((await operator('PUT', '/destinations/orders', spec('/default'))).status).toBe(201);
});

afterAll(async () => {
  await stack?.stop({ purge: true });
  await receiver.stop();
});

describe('destinations belong to accounts', () => {
  test('one id in three accounts: each sees its own, with its account', async () => {
    const mine = await as(keys.acme.key, 'GET', '/destinations/orders');
    expect(mine).toMatchObject({ status: 200, body: { id: 'orders', account: 'acme', url: `${receiver.url}/acme` } });
    expect(await operator('GET', '/accounts/acme/destinations/orders')).toMatchObject({ status: 200, body: { id: 'orders', account: 'acme' } });
    expect(await operator('GET', '/destinations/orders')).toMatchObject({ status: 200, body: { id: 'orders', account: 'default', url: `${receiver.url}/default` } });
    const lists = await Promise.all([as(keys.acme.key, 'GET', '/destinations'), as(keys.globex.key, 'GET', '/destinations'), operator('GET', '/destinations')]);
    expect(lists.map((l) => (l.body as { destinations: { account: string; url: string }[] }).destinations.map((d) => `${d.account} ${d.url.replace(receiver.url, '')}`))).toEqual([['acme /acme'], ['globex /globex'], ['default /default']]);
  });

  test('an event reaches only its own account: the key stamps it, the ingest token reads heraldaccount', async () => {
    expect(await publish(keys.acme.key, 'from-acme')).toEqual({ status: 202, body: { accepted: ['from-acme'] } });
    expect(await publish(stack.config.ingestToken, 'for-globex', { 'ce-heraldaccount': 'globex' })).toEqual({ status: 202, body: { accepted: ['for-globex'] } });
    expect(await publish(stack.config.ingestToken, 'for-default')).toEqual({ status: 202, body: { accepted: ['for-default'] } });
    await receiver.waitFor(3);
    await new Promise((r) => setTimeout(r, 1000)); // any stray copy to another account would be here by now
    const seen = (path: string) => receiver.on(path).map((r) => r.headers['ce-id']);
    expect(seen('/acme')).toEqual(['from-acme']);
    expect(seen('/globex')).toEqual(['for-globex']);
    expect(seen('/default')).toEqual(['for-default']);
    expect(receiver.on('/acme')[0]!.headers['ce-heraldaccount']).toBe('acme');
  });

  test("event types: a key sees its own account's types, each with its latest sample and the destinations that take it, never another's", async () => {
    expect((await publish(keys.acme.key, 'acme-invoice', { 'ce-type': 'com.example.invoice.paid' })).status).toBe(202);
    expect((await publish(keys.globex.key, 'globex-only', { 'ce-type': 'com.example.globex.only' })).status).toBe(202);
    type Listed = { eventTypes: { type: string; lastSeenAt: string; sample: Record<string, unknown>; destinations: string[] }[] };
    // The reconciler's next round writes them, from the intake journal.
    const acme = await eventually('acme\'s two types', async () => {
      await catalogueNow(stack);
      const r = (await as(keys.acme.key, 'GET', '/event-types')).body as Listed;
      return r.eventTypes.length === 2 ? r : undefined;
    });
    expect(acme.eventTypes).toEqual([
      { type: 'com.example.invoice.paid', lastSeenAt: expect.any(String) as unknown, sample: expect.objectContaining({ id: 'acme-invoice', type: 'com.example.invoice.paid', heraldaccount: 'acme', data: { id: 'acme-invoice' } }) as unknown, destinations: [], filtered: [] },
      { type: TYPE, lastSeenAt: expect.any(String) as unknown, sample: expect.objectContaining({ id: 'from-acme', type: TYPE, data: { id: 'from-acme' } }) as unknown, destinations: ['orders'], filtered: [] },
    ]);
    const globex = await eventually('globex\'s two types', async () => {
      await catalogueNow(stack);
      const r = (await operator('GET', '/accounts/globex/event-types')).body as Listed;
      return r.eventTypes.length === 2 ? r : undefined;
    });
    expect(globex.eventTypes.map((t) => [t.type, t.destinations, t.sample.id])).toEqual([
      ['com.example.globex.only', [], 'globex-only'],
      [TYPE, ['orders'], 'for-globex'],
    ]);
    expect(await as(keys.acme.key, 'GET', '/accounts/globex/event-types')).toMatchObject({ status: 404 });
  });

  test("a key publishing for another account is refused (403) and nothing is accepted; a key without publish gets 403", async () => {
    const foreign = await publish(keys.acme.key, 'sneaky', { 'ce-heraldaccount': 'globex' });
    expect(foreign).toMatchObject({ status: 403, body: { error: expect.stringMatching(/another account/), issues: [{ path: 'body.heraldaccount' }] } });
    expect(await publish(keys.acmeReader.key, 'reader')).toMatchObject({ status: 403, body: { error: expect.stringMatching(/lacks the "publish" scope/) } });
    const bad = await publish(stack.config.ingestToken, 'bad-account', { 'ce-heraldaccount': 'Not An Id' });
    expect(bad).toMatchObject({ status: 400, body: { issues: [{ path: 'body.heraldaccount' }] } });
  });

  test('the ingest token naming an account that does not exist: 400 naming the path and the account; once created, accepted', async () => {
    const ghost = await publish(stack.config.ingestToken, 'ghost-1', { 'ce-heraldaccount': 'no-such-tenant' });
    expect(ghost).toEqual({ status: 400, body: { error: expect.stringMatching(/^events name an account that does not exist \("no-such-tenant"\); nothing accepted/), issues: [{ path: 'body.heraldaccount', message: 'no account "no-such-tenant"' }] } });
    expect((await operator('GET', '/accounts/no-such-tenant/event-types')).status).toBe(404);
    expect((await operator('POST', '/accounts', { id: 'late-tenant', name: 'Late' })).status).toBe(201);
    expect(await publish(stack.config.ingestToken, 'late-1', { 'ce-heraldaccount': 'late-tenant' })).toEqual({ status: 202, body: { accepted: ['late-1'] } });
  });
});

describe('keys', () => {
  test('scopes: a read key reads its account and changes nothing', async () => {
    expect((await as(keys.acmeReader.key, 'GET', '/destinations/orders')).status).toBe(200);
    expect(await as(keys.acmeReader.key, 'DELETE', '/destinations/orders')).toMatchObject({ status: 403, body: { error: expect.stringMatching(/lacks the "write" scope/) } });
    expect((await as(keys.acme.key, 'GET', '/destinations/orders')).status).toBe(200);
  });

  test('every change is in the audit log with its actor, account and the fields it set (never their values)', async () => {
    const audit = stack.logs.filter((l) => l.audit === true);
    expect(audit).toContainEqual(expect.objectContaining({ actor: `key:${keys.acme.id}`, account: 'acme', route: 'PUT /destinations/{id}', ids: ['orders'], fields: ['url', 'eventTypes'], status: 201, severity: 'INFO' }));
    expect(audit).toContainEqual(expect.objectContaining({ actor: 'admin', account: 'globex', route: 'PUT /accounts/{accountId}/destinations/{id}', ids: ['globex', 'orders'] }));
    expect(audit).toContainEqual(expect.objectContaining({ actor: 'admin', account: 'default', route: 'POST /accounts', fields: ['id', 'name', 'technicalEmail'], status: 201 }));
    expect(JSON.stringify(audit)).not.toContain(receiver.url);
  });

  test('are listed without the key or its hash, and an account key manages its own keys', async () => {
    const own = await mintKey('acme', { name: 'made by a key', scopes: ['publish'] }, keys.acme.key);
    const list = await as(keys.acme.key, 'GET', '/accounts/acme/keys');
    expect(list.status).toBe(200);
    const text = JSON.stringify(list.body);
    expect(text).not.toContain(keys.acme.key);
    expect(text).not.toContain('"hash"');
    expect((list.body as { keys: { id: string; createdBy: string }[] }).keys.find((k) => k.id === own.id)).toMatchObject({ createdBy: `key:${keys.acme.id}` });
  });

  test('a revoked key is refused within 5 s', async () => {
    const temp = await mintKey('acme', { name: 'temporary' });
    expect((await as(temp.key, 'GET', '/destinations')).status).toBe(200);
    expect((await operator('DELETE', `/accounts/acme/keys/${temp.id}`)).status).toBe(204);
    const revokedAt = Date.now();
    await eventually('the revoked key refused', async () => ((await as(temp.key, 'GET', '/destinations')).status === 401 ? true : undefined), 5000, 100);
    expect(Date.now() - revokedAt).toBeLessThan(5000);
    expect(await as(temp.key, 'GET', '/destinations')).toMatchObject({ status: 401, body: { error: expect.stringMatching(/revoked/) } });
    expect((await publish(temp.key, 'after-revoke')).status).toBe(401);
  });

  test('a key grants only the scopes it holds (403 naming the scope); leaving scopes out grants its own, never more', async () => {
    const rw = await mintKey('acme', { name: 'read-write', scopes: ['read', 'write'] });
    for (const scopes of [['publish'], ['read', 'write', 'publish']]) {
      expect(await as(rw.key, 'POST', '/accounts/acme/keys', { name: 'escalated', scopes })).toMatchObject({
        status: 403,
        body: { error: expect.stringMatching(/^this key cannot grant "publish": a key may grant only the scopes it holds \(read, write\)/) as unknown, issues: [{ path: 'scopes' }] },
      });
    }
    const made = await as(rw.key, 'POST', '/accounts/acme/keys', { name: 'no scopes given' });
    expect(made).toMatchObject({ status: 201, body: { scopes: ['read', 'write'], createdBy: `key:${rw.id}` } });
    expect((await publish((made.body as { key: string }).key, 'not-a-publisher')).status).toBe(403);
    expect(await as(rw.key, 'POST', '/accounts/acme/keys', { name: 'reader', scopes: ['read'] })).toMatchObject({ status: 201, body: { scopes: ['read'] } });
    // The operator's default is still all three.
    expect(await operator('POST', '/accounts/acme/keys', { name: 'operator default' })).toMatchObject({ status: 201, body: { scopes: ['read', 'write', 'publish'] } });
  });

  test('a key cannot mint a key that outlives it: none given takes its expiry, a later one is 403', async () => {
    const expiresAt = new Date(Date.now() + 3600_000).toISOString();
    const short = await mintKey('acme', { name: 'an hour', scopes: ['write'], expiresAt });
    expect(await as(short.key, 'POST', '/accounts/acme/keys', { name: 'child' })).toMatchObject({ status: 201, body: { scopes: ['write'], expiresAt } });
    expect(await as(short.key, 'POST', '/accounts/acme/keys', { name: 'longer', expiresAt: new Date(Date.now() + 7200_000).toISOString() })).toMatchObject({
      status: 403,
      body: { error: expect.stringMatching(/a key cannot make a key that outlives it/) as unknown, issues: [{ path: 'expiresAt' }] },
    });
  });

  test('an expired key is refused within 5 s of its expiry', async () => {
    const expiresAt = new Date(Date.now() + 1500).toISOString();
    const short = await mintKey('acme', { name: 'short', expiresAt });
    expect((await as(short.key, 'GET', '/destinations')).status).toBe(200);
    await eventually('the expired key refused', async () => ((await as(short.key, 'GET', '/destinations')).status === 401 ? true : undefined), 8000, 100);
    expect(Date.now() - Date.parse(expiresAt)).toBeLessThan(5000);
  });
});

describe('seed 003: account settings', () => {
  test('retry when never set; POST sets, PATCH changes; the account itself may set them; invalid values named', async () => {
    expect(await as(keys.acme.key, 'GET', '/accounts/acme/settings')).toEqual({ status: 200, body: {} });
    expect(await as(keys.acme.key, 'POST', '/accounts/acme/settings', { 'notification.webhook.failure.policy': 'queue' })).toEqual({ status: 200, body: { 'notification.webhook.failure.policy': 'queue' } });
    expect(await operator('PATCH', '/accounts/acme/settings', { 'notification.webhook.failure.policy': 'retry' })).toEqual({ status: 200, body: { 'notification.webhook.failure.policy': 'retry' } });
    expect(await operator('GET', '/accounts/acme/settings')).toEqual({ status: 200, body: { 'notification.webhook.failure.policy': 'retry' } });
    expect(await operator('PATCH', '/accounts/acme/settings', { 'notification.webhook.failure.policy': 'later' })).toMatchObject({
      status: 400,
      body: { issues: [{ path: 'notification.webhook.failure.policy', message: 'notification.webhook.failure.policy must be "retry" or "queue"' }] },
    });
    expect(await as(keys.acmeReader.key, 'PATCH', '/accounts/acme/settings', { 'notification.webhook.failure.policy': 'queue' })).toMatchObject({ status: 403 });
  });

  test("queue: a failed event of a destination without its own failureMode is QUEUED; one that says retry is retried", async () => {
    expect((await operator('POST', '/accounts', { id: 'initrode', name: 'Initrode' })).status).toBe(201);
    expect((await operator('POST', '/accounts/initrode/settings', { 'notification.webhook.failure.policy': 'queue' })).status).toBe(200);
    const spec = (failureMode?: string) => ({ url: `${receiver.url}/fail`, eventTypes: [TYPE], policy: 'eventarc', ...(failureMode ? { failureMode } : {}) });
    expect((await operator('PUT', '/accounts/initrode/destinations/follows', spec())).body).not.toHaveProperty('failureMode');
    expect((await operator('PUT', '/accounts/initrode/destinations/own', spec('retry'))).body).toMatchObject({ failureMode: 'retry' });
    expect((await publish(stack.config.ingestToken, 'fails-once', { 'ce-heraldaccount': 'initrode' })).status).toBe(202);
    const statusOf = async (id: string) => ((await operator('GET', `/accounts/initrode/destinations/${id}/deliveries`)).body as { deliveries: { status: string }[] }).deliveries[0]?.status;
    expect(await eventually('the follower queued', async () => ((await statusOf('follows')) === 'QUEUED' ? 'QUEUED' : undefined))).toBe('QUEUED');
    expect(await eventually('the other recorded', () => statusOf('own'))).toBe('PENDING');
  });
});

describe('queued retrieval by receiver URL (seed 003)', () => {
  test('the account fetches its queued events to one URL, payload included, and sends them again when the endpoint is back', async () => {
    expect((await operator('POST', '/accounts', { id: 'umbrella', name: 'Umbrella' })).status).toBe(201);
    const key = await mintKey('umbrella', { name: 'umbrella app' });
    expect((await as(key.key, 'POST', '/accounts/umbrella/settings', { 'notification.webhook.failure.policy': 'queue' })).status).toBe(200);
    const down = `${receiver.url}/down/receiver`;
    const spec = (url: string) => ({ url, eventTypes: [TYPE], policy: 'eventarc' });
    expect((await as(key.key, 'PUT', '/destinations/main', spec(down))).status).toBe(201);
    expect((await as(key.key, 'PUT', '/destinations/second', spec(down))).status).toBe(201);
    expect((await as(key.key, 'PUT', '/destinations/other', spec(`${receiver.url}/down/other`))).status).toBe(201);
    // A queued event of another account, to the same URL: never in umbrella's answer (an account made now: its policy is read fresh).
    expect((await operator('POST', '/accounts', { id: 'wesker', name: 'Wesker' })).status).toBe(201);
    expect((await operator('POST', '/accounts/wesker/settings', { 'notification.webhook.failure.policy': 'queue' })).status).toBe(200);
    expect((await operator('PUT', '/accounts/wesker/destinations/same-url', spec(down))).status).toBe(201);
    expect((await publish(stack.config.ingestToken, 'w-1', { 'ce-heraldaccount': 'wesker' })).status).toBe(202);
    for (const id of ['u-1', 'u-2']) expect((await publish(key.key, id)).status).toBe(202);

    const queuedTo = async (url: string, extra = '') => (await as(key.key, 'GET', `/accounts/umbrella/deliveries?status=queued&url=${encodeURIComponent(url)}${extra}`)).body as { deliveries: { destinationId: string; account: string; eventId: string; status: string; event: Record<string, unknown> }[]; nextCursor?: string };
    const all = await eventually('4 queued to the receiver', async () => {
      const page = await queuedTo(down);
      return page.deliveries.length === 4 ? page : undefined;
    });
    expect(all.deliveries.map((d) => `${d.destinationId}:${d.eventId}`).sort()).toEqual(['main:u-1', 'main:u-2', 'second:u-1', 'second:u-2']);
    expect(all.deliveries[0]).toMatchObject({ account: 'umbrella', status: 'QUEUED', event: { id: expect.stringMatching(/^u-/), source: '/accounts-test', type: TYPE, specversion: '1.0', heraldaccount: 'umbrella', data: { id: expect.stringMatching(/^u-/) } } });
    expect(all.nextCursor).toBeUndefined();
    // A page at a time, across destinations: 3 + 1, each once.
    const first = await queuedTo(down, '&limit=3');
    expect(first.deliveries).toHaveLength(3);
    const second = await queuedTo(down, `&limit=3&cursor=${first.nextCursor!}`);
    expect([...first.deliveries, ...second.deliveries].map((d) => `${d.destinationId}:${d.eventId}`).sort()).toEqual(all.deliveries.map((d) => `${d.destinationId}:${d.eventId}`).sort());
    expect(second.nextCursor).toBeUndefined();
    // The same URL written another way is the same receiver; another URL is not.
    expect((await queuedTo(down.replace('http://', 'HTTP://'))).deliveries).toHaveLength(4);
    expect(await eventually('other queued', async () => ((await queuedTo(`${receiver.url}/down/other`)).deliveries.length === 2 ? 2 : undefined))).toBe(2);
    expect(await as(key.key, 'GET', '/accounts/umbrella/deliveries?status=pending&url=nope&colour=red')).toMatchObject({
      status: 400,
      body: { issues: expect.arrayContaining([expect.objectContaining({ path: 'status' }), expect.objectContaining({ path: 'url' })]) },
    });

    downIsDown = false;
    const mark = receiver.requests.length;
    const sent = await as(key.key, 'POST', '/accounts/umbrella/deliveries/redeliver', { status: 'queued', url: down });
    expect(sent).toEqual({ status: 202, body: { redelivered: 4, status: 'QUEUED', destinations: [{ id: 'main', redelivered: 2 }, { id: 'second', redelivered: 2 }], suspended: [] } });
    await eventually('redelivered to the receiver', async () => ((await queuedTo(down)).deliveries.length === 0 && receiver.requests.slice(mark).filter((r) => r.path === '/down/receiver').length >= 4 ? true : undefined));
    // The other URL's are still queued; wesker's too.
    expect((await queuedTo(`${receiver.url}/down/other`)).deliveries).toHaveLength(2);
    const wesker = (await operator('GET', `/accounts/wesker/deliveries?url=${encodeURIComponent(down)}`)).body as { deliveries: { eventId: string }[] };
    expect(wesker.deliveries.map((d) => d.eventId)).toEqual(['w-1']);
    downIsDown = true;
  });
});

describe('suspension by hand and redelivery by id', () => {
  test('a key suspends a destination (its events QUEUED, by whom recorded), redelivers chosen deliveries by id, and reactivates', async () => {
    expect((await operator('POST', '/accounts', { id: 'tyrell', name: 'Tyrell' })).status).toBe(201);
    const key = await mintKey('tyrell', { name: 'tyrell app' });
    expect((await as(key.key, 'POST', '/accounts/tyrell/settings', { 'notification.webhook.failure.policy': 'queue' })).status).toBe(200);
    const spec = (path: string) => ({ url: `${receiver.url}${path}`, eventTypes: [TYPE], policy: 'eventarc' });
    expect((await as(key.key, 'PUT', '/destinations/main', spec('/down/tyrell'))).status).toBe(201);
    expect((await as(key.key, 'PUT', '/destinations/held', spec('/down/tyrell-held'))).status).toBe(201);

    // Suspended by hand: the body checked, the caller recorded, a second time refused.
    expect(await as(key.key, 'POST', '/destinations/held/suspend', { reason: 'x'.repeat(201), colour: 'red' })).toMatchObject({
      status: 400,
      body: { error: 'invalid suspend request', issues: expect.arrayContaining([{ path: 'reason', message: 'reason is at most 200 characters' }]) },
    });
    expect(await as(key.key, 'POST', '/destinations/held/suspend', { reason: 42 })).toMatchObject({ status: 400, body: { issues: [{ path: 'reason', message: 'reason must be a string' }] } });
    const suspended = await as(key.key, 'POST', '/accounts/tyrell/destinations/held/suspend', { reason: '  receiver maintenance  ' });
    expect(suspended).toMatchObject({
      status: 200,
      body: { destination: { id: 'held', account: 'tyrell', status: 'suspended', suspension: { cause: 'manual', reason: 'receiver maintenance', by: `key:${key.id}`, notification: { cause: 'manual', by: `key:${key.id}` } } } },
    });
    expect(await as(key.key, 'POST', '/destinations/held/suspend')).toMatchObject({ status: 409, body: { error: expect.stringMatching(/^destination "tyrell_held" is already suspended since .* \(manual\): receiver maintenance; reactivate it/) } });
    expect((await as(key.key, 'GET', '/destinations/held')).body).toMatchObject({ status: 'suspended', suspension: { cause: 'manual', by: `key:${key.id}` } });
    expect(await as(key.key, 'POST', '/destinations/nope/suspend')).toMatchObject({ status: 404 });

    for (const id of ['t-1', 't-2', 't-3']) expect((await publish(key.key, id)).status).toBe(202);
    type Listed = { deliveries: { id: string; destinationId: string; eventId: string; status: string }[] };
    const queued = await eventually('6 queued: main by the queue policy, held by its suspension', async () => {
      const page = (await as(key.key, 'GET', '/deliveries?status=queued')).body as Listed;
      return page.deliveries.length === 6 ? page.deliveries : undefined;
    });
    const idOf = (destination: string, eventId: string) => queued.find((d) => d.destinationId === destination && d.eventId === eventId)!.id;
    expect(receiver.on('/down/tyrell-held')).toHaveLength(0);

    // Bodies refused, each problem named.
    expect(await as(key.key, 'POST', '/deliveries/redeliver', { ids: [idOf('main', 't-1')], status: 'dead', url: 'https://x.example/' })).toMatchObject({
      status: 400,
      body: { issues: [expect.objectContaining({ path: 'status', message: expect.stringMatching(/^status cannot be given with ids/) }), expect.objectContaining({ path: 'url', message: expect.stringMatching(/^url cannot be given with ids/) })] },
    });
    expect(await as(key.key, 'POST', '/deliveries/redeliver', { ids: [] })).toMatchObject({ status: 400, body: { issues: [{ path: 'ids', message: 'ids must list 1 to 100 delivery ids' }] } });
    expect(await as(key.key, 'POST', '/deliveries/redeliver', { ids: [idOf('main', 't-1'), 'not an id', idOf('main', 't-1')] })).toMatchObject({
      status: 400,
      body: { issues: [{ path: 'ids[1]', message: expect.stringMatching(/^not a delivery id/) }, { path: 'ids[2]', message: 'the same delivery as ids[0]: name each once' }] },
    });
    expect(await as(key.key, 'POST', '/deliveries/redeliver', { ids: Array.from({ length: 101 }, (_, i) => `tyrell_main.k${i}`) })).toMatchObject({ status: 400, body: { issues: [{ path: 'ids' }] } });

    // One of main's, one of held's (suspended: left), globex's (not ours) and one that does not exist.
    const globexDelivery = ((await operator('GET', '/accounts/globex/destinations/orders/deliveries')).body as Listed).deliveries[0]!;
    downIsDown = false;
    try {
      const ids = [idOf('main', 't-1'), idOf('held', 't-1'), globexDelivery.id, 'tyrell_main.nothing'];
      expect(await as(key.key, 'POST', '/deliveries/redeliver', { ids })).toEqual({
        status: 202,
        body: {
          redelivered: 1,
          results: [
            { id: ids[0], outcome: 'redelivered', from: 'QUEUED', status: 'PENDING' },
            { id: ids[1], outcome: 'suspended', status: 'QUEUED', destination: 'held' },
            { id: ids[2], outcome: 'not-found' },
            { id: ids[3], outcome: 'not-found' },
          ],
          suspended: ['held'],
        },
      });
      const statusOf = async (id: string) => ((await as(key.key, 'GET', `/deliveries/${id}`)).body as { status: string }).status;
      expect(await eventually('t-1 delivered to main', async () => ((await statusOf(ids[0]!)) === 'DELIVERED' ? true : undefined))).toBe(true);
      expect(receiver.on('/down/tyrell').filter((r) => r.headers['ce-id'] === 't-1').length).toBeGreaterThanOrEqual(1);
      // Only that one: the others stay queued; globex's is as it was.
      expect((((await as(key.key, 'GET', '/deliveries?status=queued')).body as Listed).deliveries.map((d) => `${d.destinationId}:${d.eventId}`)).sort()).toEqual(['held:t-1', 'held:t-2', 'held:t-3', 'main:t-2', 'main:t-3']);
      expect(((await operator('GET', `/accounts/globex/deliveries/${globexDelivery.id}`)).body as { status: string }).status).toBe(globexDelivery.status);
      // Delivered now: reported with its status, left alone.
      expect(await as(key.key, 'POST', '/deliveries/redeliver', { ids: [ids[0]] })).toEqual({ status: 202, body: { redelivered: 0, results: [{ id: ids[0], outcome: 'skipped', status: 'DELIVERED' }], suspended: [] } });

      // Reactivated: held's three queued go.
      expect(await as(key.key, 'POST', '/destinations/held/reactivate')).toMatchObject({ status: 200, body: { redelivered: 3, destination: { status: 'active' } } });
      await eventually("held's queued delivered", async () => (receiver.on('/down/tyrell-held').length >= 3 ? true : undefined));
    } finally {
      downIsDown = true;
    }
  });
});

describe('quotas', () => {
  test('past its publish quota an account gets 429 with Retry-After, nothing accepted; other accounts publish on', async () => {
    expect((await operator('POST', '/accounts', { id: 'chatty', name: 'Chatty' })).status).toBe(201);
    expect(await as(keys.acme.key, 'PATCH', '/accounts/acme', { quotas: { publishPerSecond: 1 } })).toMatchObject({ status: 403 });
    expect(await operator('PATCH', '/accounts/chatty', { quotas: { publishPerSecond: 5, destinations: 2 } })).toMatchObject({
      status: 200,
      body: { quotas: { publishPerSecond: 5, destinations: 2 }, quotasInForce: { publishPerSecond: 5, destinations: 2 } },
    });
    expect((await operator('GET', '/accounts/acme')).body).toMatchObject({ quotasInForce: { publishPerSecond: 1000, destinations: 1000 } });
    const key = await mintKey('chatty', { name: 'publisher', scopes: ['publish'] });
    // 20 at once: even on a slow machine, where they take up to two seconds to be answered,
    // the bucket (5, refilled at 5/s) cannot take them all. (8 one after another could: CI took
    // over 1.6 s for them once, and every one was accepted.)
    const began = Date.now();
    const replies = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const res = await fetch(`${stack.url}/ingest`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json', 'ce-id': `q-${i}`, 'ce-source': '/quota', 'ce-type': TYPE, 'ce-specversion': '1.0' },
          body: '{}',
        });
        return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as unknown };
      }),
    );
    const seconds = (Date.now() - began) / 1000;
    const statuses = replies.map((r) => r.status);
    const accepted = statuses.filter((s) => s === 202).length;
    // Some get in; never more than the bucket holds plus what it refilled while they were answered.
    expect(accepted).toBeGreaterThanOrEqual(1);
    expect(accepted).toBeLessThanOrEqual(5 + Math.ceil(seconds * 5));
    expect(statuses).toContain(429);
    expect(statuses.filter((s) => s !== 202 && s !== 429)).toEqual([]);
    const refused = replies.find((r) => r.status === 429)!;
    expect(refused.retryAfter).toBe('1');
    expect(refused.body).toMatchObject({ error: expect.stringMatching(/account chatty is over its publish quota of 5 events per second; nothing accepted/) });
    // Another account is not held back by chatty's empty bucket.
    expect((await publish(keys.acme.key, 'not-held-back')).status).toBe(202);
    // A second later the bucket has refilled.
    await new Promise((r) => setTimeout(r, 1100));
    expect((await publish(key.key, 'later')).status).toBe(202);
    // A batch bigger than the quota can never fit: said so.
    const batch = Array.from({ length: 6 }, (_, i) => ({ specversion: '1.0', id: `b-${i}`, source: '/quota', type: TYPE, data: {} }));
    const big = await fetch(`${stack.url}/ingest`, { method: 'POST', headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/cloudevents-batch+json' }, body: JSON.stringify(batch) });
    expect(big.status).toBe(429);
    expect(((await big.json()) as { error: string }).error).toMatch(/split it into requests of at most 5/);
  });

  test('a new destination past the destination quota is 409 with what to do; replacing one is not counted', async () => {
    const writer = await mintKey('chatty', { name: 'writer', scopes: ['write', 'read'] });
    const spec = { url: `${receiver.url}/chatty`, eventTypes: [TYPE] };
    expect((await as(writer.key, 'PUT', '/destinations/one', spec)).status).toBe(201);
    expect((await as(writer.key, 'PUT', '/destinations/two', spec)).status).toBe(201);
    expect(await as(writer.key, 'PUT', '/destinations/three', spec)).toEqual({
      status: 409,
      body: { error: 'account chatty has 2 destinations, its quota (2): delete one it no longer needs, or ask the operator to raise quotas.destinations (PATCH /admin/accounts/chatty)' },
    });
    expect((await as(writer.key, 'PUT', '/destinations/two', { ...spec, eventTypes: ['*'] })).status).toBe(200);
    expect((await as(writer.key, 'GET', '/destinations/three')).status).toBe(404);
  });
});

describe('accounts', () => {
  test('only the operator creates, renames and deletes; a key lists its own account alone', async () => {
    expect(await operator('POST', '/accounts', { id: 'acme', name: 'again' })).toMatchObject({ status: 409, body: { error: expect.stringMatching(/taken/) } });
    expect(await as(keys.acme.key, 'POST', '/accounts', { name: 'mine' })).toMatchObject({ status: 403, body: { error: expect.stringMatching(/operator/) } });
    expect(await as(keys.acme.key, 'PATCH', '/accounts/acme', { name: 'Acme!' })).toMatchObject({ status: 403 });
    expect(await as(keys.acme.key, 'GET', '/accounts')).toMatchObject({ status: 200, body: { accounts: [{ id: 'acme', name: 'Acme Corp' }] } });
    const all = (await operator('GET', '/accounts')).body as { accounts: { id: string }[] };
    expect(all.accounts.map((a) => a.id)).toEqual(expect.arrayContaining(['acme', 'default', 'globex']));
    expect(await operator('DELETE', '/accounts/acme')).toMatchObject({ status: 409, body: { error: expect.stringMatching(/still has 1 destination/) } });
    expect(await operator('DELETE', '/accounts/default')).toMatchObject({ status: 409 });
  });

  test('an account made from a name gets an id from it; deleting it deletes its keys', async () => {
    const made = await operator('POST', '/accounts', { name: 'Initech Ltd' });
    expect(made).toMatchObject({ status: 201, body: { id: 'initech-ltd', name: 'Initech Ltd', settings: {} } });
    const key = await mintKey('initech-ltd', { name: 'k' });
    expect((await as(key.key, 'GET', '/destinations')).status).toBe(200);
    expect((await operator('DELETE', '/accounts/initech-ltd')).status).toBe(204);
    expect((await as(key.key, 'GET', '/destinations')).status).toBe(401);
    expect((await operator('GET', '/accounts/initech-ltd')).status).toBe(404);
    // The same name again: its id was a deleted account's, so it gets another.
    expect(await operator('POST', '/accounts', { name: 'Initech Ltd' })).toMatchObject({ status: 201, body: { id: expect.stringMatching(/^initech-ltd-[a-z0-9]+$/) as unknown } });
  });
});

describe('a deleted account: its id is never reused, and nothing of it is readable afterwards', () => {
  /** How many documents of `account` each store still holds (its destinations are `<account>_…` inside Herald). */
  async function storedOf(account: string) {
    const db = stack.runtime.firestore;
    const { FieldPath } = await import('@google-cloud/firestore');
    const prefixed = async (collection: string, prefix: string) =>
      (await db.collection(collection).where(FieldPath.documentId(), '>=', prefix).where(FieldPath.documentId(), '<', `${prefix}\uf8ff`).select().get()).size;
    return {
      deliveries: await prefixed('deliveries', `${account}_`),
      // DELIVERED first attempts, in groups of one account each.
      deliveryGroups: await prefixed('delivery-groups', `${account}_`),
      counters: await prefixed('rates', `${account}_`),
      // A sparse destination's counters, in documents shared with the account's other sparse ones.
      sharedCounters: await prefixed('rates-shared', `${account}_`),
      rateControl: await prefixed('rate-control', `${account}_`),
      eventTypes: await prefixed('event-types', `${account}~`),
      replays: (await db.collection('replays').where('request.account', '==', account).select().get()).size,
      keys: (await db.collection('account-keys').where('account', '==', account).select().get()).size,
      publishQuota: (await db.collection('publish-quotas').doc(account).get()).exists ? 1 : 0,
    };
  }
  const nothing = { deliveries: 0, deliveryGroups: 0, counters: 0, sharedCounters: 0, rateControl: 0, eventTypes: 0, replays: 0, keys: 0, publishQuota: 0 };

  async function openPortal(account: string): Promise<string> {
    const link = await operator('POST', `/accounts/${account}/portal-links`, { ttlSeconds: 600 });
    expect(link.status).toBe(201);
    const token = (link.body as { url: string }).url.split('#portal=')[1]!;
    const res = await fetch(`${stack.url}/admin/portal/sessions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token }) });
    expect(res.status).toBe(200);
    return ((await res.json()) as { sessionToken: string }).sessionToken;
  }

  test('delete, then create the same id: 409; its delivery, log, event types, stats and replays answer 404 or are gone, to the operator and to its old key and session', async () => {
    expect((await operator('POST', '/accounts', { id: 'hooli', name: 'Hooli' })).status).toBe(201);
    const key = await mintKey('hooli', { name: 'hooli app' });
    expect((await as(key.key, 'PUT', '/destinations/hook', { url: `${receiver.url}/hooli`, eventTypes: [TYPE] })).status).toBe(201);
    expect((await publish(key.key, 'h-1')).status).toBe(202);
    type Listed = { deliveries: { id: string; status: string }[] };
    const delivery = await eventually('h-1 delivered', async () => {
      const first = ((await as(key.key, 'GET', '/destinations/hook/deliveries')).body as Listed).deliveries[0];
      return first?.status === 'DELIVERED' ? first : undefined;
    });
    await eventually("hooli's event type sampled", async () => {
      await catalogueNow(stack);
      return ((await as(key.key, 'GET', '/event-types')).body as { eventTypes: unknown[] }).eventTypes.length > 0 ? true : undefined;
    });
    const replay = (await operator('POST', '/accounts/hooli/replays', { dryRun: true })).body as { id: string };
    await eventually("hooli's replay ended", async () => (['done', 'incomplete', 'failed', 'rejected'].includes(((await operator('GET', `/replays/${replay.id}`)).body as { status: string }).status) ? true : undefined));
    const session = await openPortal('hooli');
    expect((await as(session, 'GET', `/deliveries/${delivery.id}`)).status).toBe(200);
    await eventually("hooli's counters flushed", async () => {
      const stored = await storedOf('hooli');
      return stored.counters + stored.sharedCounters > 0 ? true : undefined;
    });

    expect((await as(key.key, 'DELETE', '/destinations/hook')).status).toBe(204);
    const began = Date.now();
    expect(await operator('DELETE', '/accounts/hooli')).toEqual({ status: 204, body: undefined });
    // It purges for at most PURGE_INLINE_MS (3 s) before it answers, the rest left to the schedule.
    expect(Date.now() - began).toBeLessThan(patient(5000));

    expect(await operator('POST', '/accounts', { id: 'hooli', name: 'Hooli again' })).toEqual({
      status: 409,
      body: { error: 'the account id "hooli" belonged to an account that was deleted, and ids of deleted accounts are never reused; give another "id"' },
    });
    expect((await operator('GET', '/accounts/hooli')).status).toBe(404);
    expect(((await operator('GET', '/accounts?limit=500')).body as { accounts: { id: string }[] }).accounts.map((a) => a.id)).not.toContain('hooli');
    for (const path of [`/accounts/hooli/deliveries/${delivery.id}`, '/accounts/hooli/destinations/hook/deliveries', '/accounts/hooli/deliveries?status=dead', '/accounts/hooli/event-types', '/accounts/hooli/stats', '/accounts/hooli/replays', `/accounts/hooli/replays/${replay.id}`, '/accounts/hooli/keys']) {
      expect([path, (await operator('GET', path)).status]).toEqual([path, 404]);
    }
    // The operator's own routes, across accounts: the delivery is not there, nor the replay.
    expect((await operator('GET', `/deliveries/${delivery.id}`)).status).toBe(404);
    expect((await operator('GET', `/replays/${replay.id}`)).status).toBe(404);
    expect(((await operator('GET', '/replays?limit=100')).body as { replays: { id: string }[] }).replays.map((r) => r.id)).not.toContain(replay.id);
    // Its key and its portal session are refused everywhere.
    for (const path of ['/destinations', `/deliveries/${delivery.id}`, '/event-types', '/stats', '/replays', '/accounts/hooli']) {
      expect([path, (await as(key.key, 'GET', path)).status, (await as(session, 'GET', path)).status]).toEqual([path, 401, 401]);
    }
    expect((await publish(key.key, 'h-2')).status).toBe(401);
    // And nothing of it is left stored: deliveries, counters and log heads, rate control, samples, replays, keys, its quota bucket.
    expect(await eventually('nothing of hooli stored', async () => {
      const left = await storedOf('hooli');
      return JSON.stringify(left) === JSON.stringify(nothing) ? left : undefined;
    }, 10_000)).toEqual(nothing);
  });

  test('what arrives after the deletion (a late counter, sample or record) is deleted by the scheduled purge', async () => {
    expect((await operator('POST', '/accounts', { id: 'late', name: 'Late' })).status).toBe(201);
    expect((await operator('DELETE', '/accounts/late')).status).toBe(204);
    const db = stack.runtime.firestore;
    await Promise.all([
      db.collection('deliveries').doc('late_hook.k1').set({ destinationId: 'late_hook', status: 'PENDING' }),
      db.collection('delivery-groups').doc('late_~w1~0').set({ account: 'late', ids: ['late_hook.k2'], destinations: ['late_hook'], members: [] }),
      db.collection('rates').doc('late_hook~1000~0').set({ destinationId: 'late_hook', bucketStart: 1000 }),
      db.collection('rates-shared').doc('late_~w1~0~1000').set({ destinations: ['late_hook'], bucketStart: 1000 }),
      db.collection('event-types').doc('late~abc').set({ account: 'late', type: 't' }),
    ]);
    expect((await storedOf('late')).deliveries).toBe(1);
    // Each reconciler interval in local mode (5 s), each pump run on GCP.
    await eventually('the late documents purged', async () => (JSON.stringify(await storedOf('late')) === JSON.stringify(nothing) ? true : undefined), 20_000, 250);
  });
});

describe("isolation: account A's key on account B's resources, for every route the router has", () => {
  /** What a route's path looks like filled in with globex's resources. */
  async function globexPath(path: string): Promise<string> {
    const deliveries = (await operator('GET', '/accounts/globex/destinations/orders/deliveries')).body as { deliveries: { id: string }[] };
    const deliveryId = deliveries.deliveries[0]?.id ?? 'globex_orders.nothing';
    return path.replace('{accountId}', 'globex').replace('{linkId}', globexPortal.linkId).replace('{sessionId}', globexPortal.sessionId).replace('{keyId}', keys.globex.id).replace('/deliveries/{id}', `/deliveries/${deliveryId}`).replace('{id}', 'orders');
  }

  const bodyFor: Record<string, unknown> = {
    'PUT /destinations/{id}': { url: 'https://attacker.example/hook', eventTypes: ['*'] },
    'POST /accounts/{accountId}/settings': { 'notification.webhook.failure.policy': 'queue' },
    'PATCH /accounts/{accountId}/settings': { 'notification.webhook.failure.policy': 'queue' },
    'PATCH /accounts/{accountId}': { name: 'pwned' },
    'POST /accounts/{accountId}/keys': { name: 'stolen' },
    'POST /destinations/{id}/rotate-secret': {},
    'POST /destinations/{id}/filter-test': { filter: 'true' },
    'POST /destinations/{id}/redeliver': {},
    'POST /destinations/{id}/suspend': { reason: 'pwned' },
    'POST /deliveries/redeliver': {},
    'POST /accounts/{accountId}/portal-links': { ttlSeconds: 600 },
  };

  /** acme's portal sessions: one that may change things, one read-only (a portal is a caller of its own kind). */
  const sessions = { write: '', readOnly: '' };
  async function portalSession(spec: Record<string, unknown>): Promise<string> {
    const link = await operator('POST', '/accounts/acme/portal-links', spec);
    expect(link.status).toBe(201);
    const token = (link.body as { url: string }).url.split('#portal=')[1]!;
    const res = await fetch(`${stack.url}/admin/portal/sessions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token }) });
    expect(res.status).toBe(200);
    return ((await res.json()) as { sessionToken: string }).sessionToken;
  }

  /** Routes without an account in the path: what a key may do with them, decided here one by one. */
  const UNSCOPED: Record<string, (key: string) => Promise<void>> = {
    // The key's own account: globex's `orders` is out of reach whatever the verb (checked through globex's state below).
    'GET /destinations': async (key) => expect(((await as(key, 'GET', '/destinations')).body as { destinations: { account: string }[] }).destinations.every((d) => d.account === 'acme')).toBe(true),
    'PUT /destinations/{id}': async (key) => expect(await as(key, 'PUT', '/destinations/orders', { url: `${receiver.url}/acme`, eventTypes: ['com.example.order.*'], technicalEmail: 'new@acme.example' })).toMatchObject({ status: 200, body: { account: 'acme', technicalEmail: 'new@acme.example' } }),
    'GET /destinations/{id}': async (key) => expect((await as(key, 'GET', '/destinations/orders')).body).toMatchObject({ account: 'acme' }),
    'POST /destinations/{id}/reactivate': async (key) => expect(await as(key, 'POST', '/destinations/orders/reactivate')).toMatchObject({ status: 409, body: { error: expect.stringMatching(/not suspended/) } }),
    // Suspended by hand, as the caller (the audit's actor), refused twice, and reactivated: acme's own `orders` only.
    'POST /destinations/{id}/suspend': async (key) => {
      const made = await as(key, 'POST', '/destinations/orders/suspend', { reason: 'maintenance' });
      expect(made).toMatchObject({ status: 200, body: { destination: { account: 'acme', id: 'orders', status: 'suspended', suspension: { cause: 'manual', reason: 'maintenance', by: expect.stringMatching(/^(key|portal):/) } } } });
      expect(await as(key, 'POST', '/destinations/orders/suspend')).toMatchObject({ status: 409, body: { error: expect.stringMatching(/already suspended/) } });
      expect(await as(key, 'POST', '/destinations/orders/reactivate')).toMatchObject({ status: 200, body: { destination: { status: 'active' } } });
    },
    'POST /destinations/{id}/redeliver': async (key) => expect(await as(key, 'POST', '/destinations/orders/redeliver', {})).toMatchObject({ status: 202 }),
    // acme's orders is not ordered per key: its own, answered (no held keys; nothing to skip).
    'GET /destinations/{id}/ordered-keys/blocked': async (key) => expect(await as(key, 'GET', '/destinations/orders/ordered-keys/blocked')).toMatchObject({ status: 200, body: { keys: [] } }),
    // Tried on acme's own samples only: every sample answered is of acme's account.
    'POST /destinations/{id}/filter-test': async (key) => {
      const tried = await as(key, 'POST', '/destinations/orders/filter-test', { filter: 'ce.type.startsWith("com.example.")' });
      expect(tried).toMatchObject({ status: 200, body: { filter: 'ce.type.startsWith("com.example.")' } });
      expect(await as(key, 'POST', '/destinations/orders/filter-test', {})).toMatchObject({ status: 400, body: { error: 'the destination has no filter: give one to try' } });
    },
    'POST /destinations/{id}/ordered-keys/skip': async (key) => expect(await as(key, 'POST', '/destinations/orders/ordered-keys/skip', { key: 'k' })).toMatchObject({ status: 409, body: { error: expect.stringMatching(/ordering/) } }),
    'POST /destinations/{id}/rotate-secret': async (key) => expect(await as(key, 'POST', '/destinations/orders/rotate-secret', {})).toMatchObject({ status: 200, body: { account: 'acme', secret: expect.stringMatching(/^whsec_/) } }),
    // acme's orders has no receiver auth: its own, answered (nothing to rotate).
    'POST /destinations/{id}/rotate-auth': async (key) => expect(await as(key, 'POST', '/destinations/orders/rotate-auth', { auth: { type: 'apiKey', header: 'X-Api-Key', value: 'new-key' } })).toMatchObject({ status: 409 }),
    // Herald's own health is the operator's: no account key or portal session reads it.
    'GET /overview': async (key) => expect((await as(key, 'GET', '/overview')).status).toBe(403),
    // Every account's usage is the operator's (the console's page); an account reads its own under /accounts/{accountId}/usage.
    'GET /usage': async (key) => {
      expect((await as(key, 'GET', '/usage')).status).toBe(403);
      expect(await as(key, 'GET', '/accounts/acme/usage')).toMatchObject({ status: 200, body: { account: 'acme', days: expect.any(Array) as unknown } });
    },
    'GET /destinations/{id}/deliveries': async (key) => expect(((await as(key, 'GET', '/destinations/orders/deliveries')).body as { deliveries: { account: string }[] }).deliveries.every((d) => d.account === 'acme')).toBe(true),
    'GET /deliveries': async (key) => expect(((await as(key, 'GET', '/deliveries?status=dead')).body as { deliveries: { account: string }[] }).deliveries.every((d) => d.account === 'acme')).toBe(true),
    'POST /deliveries/redeliver': async (key) => {
      expect(await as(key, 'POST', '/deliveries/redeliver', { status: 'dead' })).toMatchObject({ status: 202 });
      // By id: globex's delivery is not found for acme, and stays as it is (globexState).
      const globexDelivery = (await globexPath('/deliveries/{id}')).slice('/deliveries/'.length);
      expect(await as(key, 'POST', '/deliveries/redeliver', { ids: [globexDelivery] })).toEqual({ status: 202, body: { redelivered: 0, results: [{ id: globexDelivery, outcome: 'not-found' }], suspended: [] } });
    },
    'GET /deliveries/{id}': async (key) => expect((await as(key, 'GET', await globexPath('/deliveries/{id}'))).status).toBe(404),
    'POST /accounts': async (key) => expect((await as(key, 'POST', '/accounts', { id: 'evil', name: 'evil' })).status).toBe(403),
    'GET /accounts': async (key) => expect((await as(key, 'GET', '/accounts')).body).toEqual({ accounts: [expect.objectContaining({ id: 'acme' })] }),
    // A key's replay is its own account's (replay.test.ts shows what it selects); globex's replays stay out of sight.
    'POST /replays': async (key) => expect(await as(key, 'POST', '/replays', { dryRun: true })).toMatchObject({ status: 202, body: { request: { account: 'acme', dryRun: true } } }),
    'GET /replays': async (key) => expect(((await as(key, 'GET', '/replays')).body as { replays: { request: { account?: string } }[] }).replays.every((r) => r.request.account === 'acme')).toBe(true),
    'GET /replays/{id}': async (key) => expect((await as(key, 'GET', `/replays/${globexReplay}`)).status).toBe(404),
    'GET /event-types': async (key) => expect(((await as(key, 'GET', '/event-types')).body as { eventTypes: { type: string; sample: { heraldaccount?: string } }[] }).eventTypes.every((t) => t.sample.heraldaccount === 'acme' && t.type !== 'com.example.globex.only')).toBe(true),
    'GET /stats': async (key) => expect(await as(key, 'GET', '/stats?window=1h')).toMatchObject({ status: 200, body: { window: '1h', series: expect.any(Array) as unknown } }),
    // Public: the link is the credential; a bearer token changes nothing, and a made-up link opens nothing.
    'POST /portal/sessions': async (key) => expect(await as(key, 'POST', '/portal/sessions', { token: 'hpl_e30.AAAA' })).toEqual({ status: 401, body: { error: expect.stringMatching(/not valid/) as unknown, reason: 'invalid' } }),
    // Last: it removes acme's own `orders`, and globex's stays.
    'DELETE /destinations/{id}': async (key) => expect((await as(key, 'DELETE', '/destinations/orders')).status).toBe(204),
  };

  /** A replay of globex's, made by the operator: a key of acme's never sees it. */
  let globexReplay = '';
  /** A portal link of globex's and a session opened from it: no route of acme's revokes either. */
  const globexPortal = { linkId: '', sessionId: '', sessionToken: '' };
  beforeAll(async () => {
    const made = await operator('POST', '/accounts/globex/replays', { dryRun: true });
    expect(made.status).toBe(202);
    globexReplay = (made.body as { id: string }).id;
    const link = await operator('POST', '/accounts/globex/portal-links', { ttlSeconds: 3600 });
    globexPortal.linkId = (link.body as { id: string }).id;
    const opened = await fetch(`${stack.url}/admin/portal/sessions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: (link.body as { url: string }).url.split('#portal=')[1] }) });
    const session = (await opened.json()) as { sessionId: string; sessionToken: string };
    Object.assign(globexPortal, { sessionId: session.sessionId, sessionToken: session.sessionToken });
    sessions.write = await portalSession({ ttlSeconds: 3600 });
    sessions.readOnly = await portalSession({ ttlSeconds: 3600, readOnly: true });
  });

  async function globexState(): Promise<unknown> {
    const [account, settings, keyList, destination, deliveries, replays, portalLinks, portalSessions, portal] = await Promise.all([
      operator('GET', '/accounts/globex'),
      operator('GET', '/accounts/globex/settings'),
      operator('GET', '/accounts/globex/keys'),
      operator('GET', '/accounts/globex/destinations/orders'),
      operator('GET', '/accounts/globex/destinations/orders/deliveries'),
      operator('GET', '/accounts/globex/replays'),
      operator('GET', '/accounts/globex/portal-links'),
      operator('GET', '/accounts/globex/portal-sessions'),
      as(globexPortal.sessionToken, 'GET', '/accounts/globex'),
    ]);
    const { stats: _stats, ...spec } = destination.body as { stats: unknown };
    return { account, settings, keyList, spec, deliveries, replays: (replays.body as { replays: { id: string }[] }).replays.map((r) => r.id), portalLinks, portalSessions, portal: portal.status };
  }

  test('every route is covered: with the account in the path, or decided above', () => {
    const uncovered = ROUTES.filter((r) => !r.accountParam && !(`${r.method} ${r.path}` in UNSCOPED)).map((r) => `${r.method} ${r.path}`);
    expect(uncovered).toEqual([]);
  });

  test.each(ROUTES.filter((r) => r.accountParam).map((r) => [`${r.method} ${r.path}`, r] as const))('%s → 404, and globex unchanged', async (name, route) => {
    const before = await globexState();
    for (const key of [keys.acme.key, keys.acmeReader.key, sessions.write, sessions.readOnly]) {
      const reply = await as(key, route.method, await globexPath(route.path), bodyFor[name.replace('/accounts/{accountId}/destinations', '/destinations').replace('/accounts/{accountId}/deliveries', '/deliveries')] ?? bodyFor[name]);
      expect([name, reply.status]).toEqual([name, 404]);
      expect(reply.body).toEqual({ error: 'no account "globex"; list them with GET /admin/accounts' });
    }
    expect(await globexState()).toEqual(before);
  });

  // Before the keys' turn, which ends by deleting acme's `orders`; a portal session replays nothing here (the keys' replay follows).
  test.each(Object.keys(UNSCOPED).filter((n) => n !== 'DELETE /destinations/{id}' && n !== 'POST /replays'))('%s with a portal session: its own account only', async (name) => {
    const before = await globexState();
    await UNSCOPED[name]!(sessions.write);
    expect(await globexState()).toEqual(before);
  });

  test('a portal session may never manage keys, settings, links or accounts (403), nor change anything when read-only', async () => {
    for (const [method, path, body] of [
      ['POST', '/accounts/acme/keys', { name: 'k' }],
      ['GET', '/accounts/acme/keys', undefined],
      ['DELETE', `/accounts/acme/keys/${keys.acme.id}`, undefined],
      ['POST', '/accounts/acme/portal-links', { ttlSeconds: 600 }],
      ['GET', '/accounts/acme/portal-links', undefined],
      ['DELETE', `/accounts/acme/portal-links/${'A'.repeat(22)}`, undefined],
      ['GET', '/accounts/acme/portal-sessions', undefined],
      ['DELETE', `/accounts/acme/portal-sessions/${'A'.repeat(22)}`, undefined],
      ['POST', '/accounts/acme/portal-sessions/revoke', undefined],
      ['POST', '/accounts/acme/settings', { 'notification.webhook.failure.policy': 'queue' }],
      ['PATCH', '/accounts/acme', { quotas: { destinations: 1 } }],
      ['DELETE', '/accounts/acme', undefined],
      ['POST', '/accounts', { name: 'mine' }],
    ] as const) {
      expect([method, path, (await as(sessions.write, method, path, body)).status]).toEqual([method, path, 403]);
    }
    expect(await as(sessions.readOnly, 'POST', '/destinations/orders/rotate-secret', {})).toEqual({ status: 403, body: { error: 'this portal session is read-only: it can look but not change anything' } });
    expect(await as(sessions.readOnly, 'POST', '/destinations/orders/suspend', {})).toEqual({ status: 403, body: { error: 'this portal session is read-only: it can look but not change anything' } });
    expect(await as(sessions.readOnly, 'POST', '/accounts/acme/destinations/orders/suspend')).toEqual({ status: 403, body: { error: 'this portal session is read-only: it can look but not change anything' } });
    expect(await as(sessions.readOnly, 'POST', '/deliveries/redeliver', { ids: ['acme_orders.anything'] })).toMatchObject({ status: 403 });
    expect((await as(sessions.readOnly, 'GET', '/destinations/orders')).status).toBe(200);
  });

  test('a portal session narrowed to some destinations sees only those', async () => {
    expect((await operator('PUT', '/accounts/acme/destinations/side', { url: `${receiver.url}/acme-side`, eventTypes: [TYPE] })).status).toBe(201);
    const narrow = await portalSession({ ttlSeconds: 600, destinations: ['side'] });
    expect(((await as(narrow, 'GET', '/destinations')).body as { destinations: { id: string }[] }).destinations.map((d) => d.id)).toEqual(['side']);
    expect((await as(narrow, 'GET', '/destinations/side')).status).toBe(200);
    for (const [method, path] of [
      ['GET', '/destinations/orders'],
      ['GET', '/accounts/acme/destinations/orders'],
      ['GET', '/destinations/orders/deliveries'],
      ['POST', '/destinations/orders/rotate-secret'],
      ['POST', '/destinations/orders/suspend'],
      ['POST', '/accounts/acme/destinations/orders/suspend'],
      ['DELETE', '/destinations/orders'],
    ] as const) {
      expect([method, path, (await as(narrow, method, path, method === 'POST' ? {} : undefined)).status]).toEqual([method, path, 404]);
    }
    const delivery = ((await operator('GET', '/accounts/acme/destinations/orders/deliveries')).body as { deliveries: { id: string }[] }).deliveries[0];
    if (delivery) {
      expect((await as(narrow, 'GET', `/deliveries/${delivery.id}`)).status).toBe(404);
      expect(await as(narrow, 'POST', '/deliveries/redeliver', { ids: [delivery.id] })).toEqual({ status: 202, body: { redelivered: 0, results: [{ id: delivery.id, outcome: 'not-found' }], suspended: [] } });
    }
    expect(((await as(narrow, 'GET', '/deliveries?status=dead')).body as { deliveries: { destinationId: string }[] }).deliveries.every((d) => d.destinationId === 'side')).toBe(true);
    expect(await as(narrow, 'POST', '/replays', { destination: 'orders', dryRun: true })).toMatchObject({ status: 403, body: { error: expect.stringMatching(/only the destinations side/) as unknown } });
    expect((await as(narrow, 'GET', '/replays')).body).toEqual({ replays: [] });
    const types = (await as(narrow, 'GET', '/event-types')).body as { eventTypes: { type: string; destinations: string[] }[] };
    expect(types.eventTypes.find((t) => t.type === TYPE)?.destinations).toEqual(['side']);
    expect((await operator('DELETE', '/accounts/acme/destinations/side')).status).toBe(204);
  });

  test.each(Object.keys(UNSCOPED))('%s with a key: its own account only', async (name) => {
    const before = await globexState();
    await UNSCOPED[name]!(keys.acme.key);
    expect(await globexState()).toEqual(before);
  });
});
