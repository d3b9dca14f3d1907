import { deliveryId } from '../../shared/domain/retry/delivery';
import { applySpec, DestinationSpec } from '../../shared/domain/destinations/destination';
import { eventKey } from '../../shared/domain/events/event';
import type { Suspension } from '../../shared/domain/destinations/suspension';
import { HostResolver } from '../../shared/ports/http';
import { eventually } from '../support/eventually';
import { startTestStack, TestStack } from '../support/stack';
import { SubscriptionTap } from '../support/subscription-tap';

/**
 * Local mode allows loopback webhooks, but none at its own services: a destination at the
 * Pub/Sub emulator could publish forged events onto Herald's topics (or any other), one at the
 * Firestore emulator could write Herald's records, one at Herald's port could call its
 * functions. On a real local stack (loopback allowed, as `npm start` runs it), with the shared
 * test emulators: registration refuses each, spelled every loopback way, and a destination
 * stored before the rule (written straight to the registry) fails its attempt without
 * connecting — the forged publish and the forged document it carries never land. And
 * `/healthz`, which used to name the emulator hosts to anyone, says only "ok" without the
 * admin token.
 */

const RUN = Date.now().toString(36);
const PROJECT = `local-services-${RUN}`;
const SOURCE = '/local-services-test';
const FORGED_TYPE = 'local.forged';

/** emu.hooks.test resolves to loopback: the guard must judge the port after DNS too. */
const DNS_NAME = `emu-${RUN}.hooks.test`;
const resolver: HostResolver = {
  async lookup(host) {
    if (host === DNS_NAME) return [{ address: '127.0.0.1', family: 4 }];
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  },
};

let stack: TestStack;
let pubsubPort: number;
let firestorePort: number;
let probe: SubscriptionTap;
const PROBE_TOPIC = `forged-probe-${RUN}`;
const PROBE_COLLECTION = `forged-probe-${RUN}`;

const portOf = (hostPort: string) => Number(new URL(`http://${hostPort}`).port);

beforeAll(async () => {
  stack = await startTestStack(PROJECT, { HERALD_TIME_SCALE: '1000' }, { resolver });
  pubsubPort = portOf(stack.emulators.pubsubHost);
  firestorePort = portOf(stack.emulators.firestoreHost);
  await stack.runtime.pubsub.createTopic(PROBE_TOPIC);
  probe = await SubscriptionTap.create(PROJECT, `${PROBE_TOPIC}-tap`, PROBE_TOPIC);
});

afterAll(async () => {
  await probe?.close();
  await stack?.stop({ purge: true });
});

type ErrorBody = { error: string; issues: { path: string; message: string }[] };

describe('registration refuses a webhook at local mode’s own services (400 naming which)', () => {
  const eventsPublish = () => `/v1/projects/${PROJECT}/topics/${stack.runtime.topology.topics.events.name}:publish`;
  const cases: [string, () => string, RegExp][] = [
    ['the Pub/Sub emulator’s publish URL, as PUBSUB_EMULATOR_HOST gives it', () => `http://${stack.emulators.pubsubHost}${eventsPublish()}`, /the Pub\/Sub emulator/],
    ['the Pub/Sub emulator as localhost', () => `http://localhost:${pubsubPort}${eventsPublish()}`, /the Pub\/Sub emulator/],
    ['the Pub/Sub emulator at another loopback address', () => `http://127.0.0.2:${pubsubPort}${eventsPublish()}`, /on loopback, at the port of the Pub\/Sub emulator/],
    ['the Pub/Sub emulator as [::1]', () => `http://[::1]:${pubsubPort}/v1/projects/${PROJECT}/subscriptions`, /the Pub\/Sub emulator/],
    ['the Pub/Sub emulator as an IPv4-mapped [::ffff:127.0.0.1]', () => `http://[::ffff:127.0.0.1]:${pubsubPort}/`, /the Pub\/Sub emulator/],
    ['the Pub/Sub emulator as 2130706433', () => `http://2130706433:${pubsubPort}/`, /the Pub\/Sub emulator/],
    ['the Firestore emulator', () => `http://${stack.emulators.firestoreHost}/v1/projects/${PROJECT}/databases/(default)/documents/destinations`, /the Firestore emulator/],
    ['the Firestore emulator as localhost', () => `http://localhost:${firestorePort}/emulator/v1/projects/${PROJECT}/databases/(default)/documents`, /the Firestore emulator/],
    ['Herald’s own port', () => `${stack.url}/admin/destinations`, /Herald itself/],
    ['Herald’s own port as localhost', () => `http://localhost:${stack.port}/ingest`, /Herald itself/],
  ];

  test.each(cases)('%s', async (_, url, service) => {
    const res = await stack.admin('PUT', '/destinations/at-own-service', { url: url(), eventTypes: [FORGED_TYPE] });
    expect(res.status).toBe(400);
    const body = res.body as ErrorBody;
    expect(body.error).toBe('invalid destination spec');
    expect(body.issues).toEqual([{ path: 'url', message: expect.stringMatching(/^url points at a port local mode keeps for itself: .* run the receiver on another port$/) as string }]);
    expect(body.issues[0]!.message).toMatch(service);
  });

  test('a host name that resolves to loopback at the emulator’s port, after DNS', async () => {
    const res = await stack.admin('PUT', '/destinations/at-own-service', { url: `https://${DNS_NAME}:${pubsubPort}/`, eventTypes: [FORGED_TYPE] });
    expect(res.status).toBe(400);
    expect((res.body as ErrorBody).issues[0]!.message).toMatch(new RegExp(`^url host ${DNS_NAME.replace(/\./g, '\\.')} resolves to a port local mode keeps for itself: 127\\.0\\.0\\.1:${pubsubPort} is on loopback, at the port of the Pub/Sub emulator`));
  });

  test('none was created; a receiver on another loopback port still is', async () => {
    expect((await stack.admin('GET', '/destinations/at-own-service')).status).toBe(404);
    expect((await stack.admin('PUT', '/destinations/local-receiver', { url: 'http://127.0.0.1:9/hook', eventTypes: ['local.other'] })).status).toBe(201);
  });
});

describe('a destination stored before the rule: its attempt is refused before any connection', () => {
  // Each event's data is the body its destination would get: a valid Pub/Sub publish request, a valid Firestore document.
  const forgedPublish = JSON.stringify({ messages: [{ data: Buffer.from('forged by a destination').toString('base64'), attributes: { forged: RUN } }] });
  const forgedDocument = JSON.stringify({ fields: { forged: { stringValue: RUN } } });
  const stored = () => [
    { id: 'stored-pubsub', url: `http://${stack.emulators.pubsubHost}/v1/projects/${PROJECT}/topics/${PROBE_TOPIC}:publish`, data: forgedPublish, service: /the Pub\/Sub emulator/ },
    { id: 'stored-firestore', url: `http://${stack.emulators.firestoreHost}/v1/projects/${PROJECT}/databases/(default)/documents/${PROBE_COLLECTION}?documentId=forged`, data: forgedDocument, service: /the Firestore emulator/ },
    { id: 'stored-herald', url: `http://127.0.0.1:${stack.port}/admin/destinations/forged`, data: '{}', service: /Herald itself/ },
    { id: 'stored-dns', url: `https://${DNS_NAME}:${pubsubPort}/v1/projects/${PROJECT}/topics/${PROBE_TOPIC}:publish`, data: forgedPublish, service: /resolves to a port local mode keeps for itself.*the Pub\/Sub emulator/ },
  ];
  const recordOf = (id: string) => stack.runtime.deliveries.get(deliveryId(id, eventKey({ source: SOURCE, id: `forged-${id}-${RUN}` })));

  beforeAll(async () => {
    // Written as a registry from before the rule holds them: straight to the store, then told to the directory as the admin API does.
    for (const { id, url } of stored()) {
      const spec: DestinationSpec = { url, eventTypes: [`${FORGED_TYPE}.${id}`], technicalEmail: 'ops@example.com' };
      const destination = applySpec(id, spec, undefined, new Date());
      await stack.runtime.destinations.put(destination);
      stack.runtime.directory.changed(id, destination);
    }
    for (const { id, data } of stored()) {
      const headers = { 'ce-id': `forged-${id}-${RUN}`, 'ce-source': SOURCE, 'ce-type': `${FORGED_TYPE}.${id}`, 'ce-specversion': '1.0', 'content-type': 'application/json' };
      expect((await stack.ingest(headers, data)).status).toBe(202);
    }
  });

  test.each(['stored-pubsub', 'stored-firestore', 'stored-herald', 'stored-dns'])('%s: suspended (blocked-address) naming the service, its event QUEUED', async (id) => {
    const { service } = stored().find((s) => s.id === id)!;
    const suspension = await eventually(`${id} to be suspended`, async () => ((await stack.admin('GET', `/destinations/${id}`)).body as { suspension?: Suspension }).suspension);
    expect(suspension.cause).toBe('blocked-address');
    expect(suspension.reason).toMatch(service);
    expect(suspension.reason).toMatch(/a destination may not reach the emulators or Herald itself/);
    const record = await recordOf(id);
    expect(record).toMatchObject({ status: 'QUEUED', attempts: 1 });
    expect(record!.lastError!.error).toMatch(/^refused by the SSRF guard: /);
  });

  test('nothing reached the emulators: no forged message on the probe topic, no forged document', async () => {
    // Each destination's attempt made, whatever came of it.
    for (const { id } of stored()) {
      await eventually(`${id}'s first attempt`, async () => {
        const record = await recordOf(id);
        return record && record.attempts >= 1 ? record : undefined;
      });
    }
    // A marker published after every attempt: once it is in, a forged publish would have been too.
    await stack.runtime.pubsub.topic(PROBE_TOPIC).publishMessage({ data: Buffer.from('marker'), attributes: { marker: RUN } });
    await probe.find('the marker', (m) => m.attributes.marker === RUN);
    const forgedDocument = (await stack.runtime.firestore.collection(PROBE_COLLECTION).doc('forged').get()).exists;
    expect({ probeTopic: probe.received.map((m) => m.attributes), forgedDocument }).toEqual({ probeTopic: [{ marker: RUN }], forgedDocument: false });
  });
});

describe('/healthz', () => {
  test('unauthenticated: only "ok", nothing that names the emulators', async () => {
    const res = await fetch(`${stack.url}/healthz`);
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(JSON.parse(text)).toEqual({ status: 'ok' });
    for (const host of [stack.emulators.pubsubHost, stack.emulators.firestoreHost, String(pubsubPort), PROJECT]) expect(text).not.toContain(host);
  });

  test('with a token that is not the admin token: still only "ok"', async () => {
    const res = await fetch(`${stack.url}/healthz`, { headers: { authorization: `Bearer ${stack.config.ingestToken}` } });
    expect(await res.json()).toEqual({ status: 'ok' });
  });

  test('with the admin token: the details', async () => {
    const res = await fetch(`${stack.url}/healthz`, { headers: { authorization: `Bearer ${stack.config.adminToken}` } });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ status: 'ok', projectId: PROJECT, emulators: { pubsub: stack.emulators.pubsubHost, firestore: stack.emulators.firestoreHost } });
  });
});
