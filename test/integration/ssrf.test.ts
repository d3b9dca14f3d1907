import { deliveryId } from '../../shared/domain/retry/delivery';
import { eventKey } from '../../shared/domain/events/event';
import type { Suspension } from '../../shared/domain/destinations/suspension';
import { HostResolver } from '../../shared/ports/http';
import { eventually } from '../support/eventually';
import { startTestStack, TestStack } from '../support/stack';

/**
 * The SSRF guard on the emulators, with loopback NOT allowed (as in production): every
 * blocked address class is refused at registration — as an IP literal and as a host name
 * that resolves to it — and at delivery, when a name that passed registration resolves to
 * one later (DNS rebinding): the attempt is refused before any connection and the
 * destination is suspended with its events QUEUED.
 *
 * DNS is this file's: host names under hooks.test resolve to whatever `dns` says.
 */

const RUN = Date.now().toString(36);
const SOURCE = '/ssrf-test';
const PUBLIC = '93.184.215.14';

const dns = new Map<string, string[]>();
const resolver: HostResolver = {
  async lookup(host) {
    const addresses = dns.get(host);
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  },
};

/** One address of every class Herald refuses, and the words the refusal uses for it. */
const BLOCKED: [name: string, address: string, label: RegExp][] = [
  ['loopback', '127.0.0.1', /a loopback address/],
  ['loopback6', '::1', /a loopback address/],
  ['rfc1918-10', '10.1.2.3', /a private address: .* \(RFC 1918\)/],
  ['rfc1918-172', '172.20.0.5', /a private address/],
  ['rfc1918-192', '192.168.1.20', /a private address/],
  ['cgnat', '100.64.0.1', /a shared \(CGNAT\) address/],
  ['link-local', '169.254.1.1', /a link-local address/],
  ['metadata', '169.254.169.254', /a metadata address/],
  ['link-local6', 'fe80::1', /a link-local address/],
  ['unique-local', 'fd00::1', /a unique-local IPv6 address/],
  ['mapped', '::ffff:10.0.0.1', /a private address: .*IPv4-mapped form of 10\.0\.0\.1/],
  ['this-network', '0.0.0.0', /an unspecified address/],
  ['multicast', '224.0.0.1', /a multicast address/],
  ['broadcast', '255.255.255.255', /a broadcast address/],
  ['reserved', '240.0.0.1', /a reserved address/],
  ['benchmarking', '198.18.0.1', /a benchmarking address/],
  // IPv6 forms of an IPv4 address, judged by the address they reach (or refused whole).
  ['translated-metadata', '::ffff:0:a9fe:a9fe', /a metadata address: .*IPv4-translated \(RFC 2765\) form of 169\.254\.169\.254/],
  ['translated-private', '::ffff:0:a00:1', /a private address: .*IPv4-translated \(RFC 2765\) form of 10\.0\.0\.1/],
  ['nat64-metadata', '64:ff9b::a9fe:a9fe', /a metadata address: .*NAT64 \(RFC 6052\) form of 169\.254\.169\.254/],
  ['6to4-private', '2002:a00:1::1', /a private address: .*6to4 \(RFC 3056\) form of 10\.0\.0\.1/],
  ['compatible', '::a00:1', /a reserved address: .*IPv4-compatible form of 10\.0\.0\.1/],
  ['teredo', '2001:0:4136:e378:8000:63bf:3fff:fdd2', /a reserved address: .*Teredo, RFC 4380\), to server 65\.54\.227\.120 and client 192\.0\.2\.45/],
  ['dummy6', '100:0:0:1::1', /a reserved address: .*dummy IPv6 prefix, RFC 9780/],
  ['not-global-unicast', '4000::1', /a reserved address: .*outside global unicast 2000::\/3/],
];

/** Spellings of a blocked address that Node's URL parser (and so the connection) turns into it. */
const SPELLINGS: [url: string, message: RegExp][] = [
  ['https://2852039166/hook', /^url points at a metadata address: 169\.254\.169\.254 /],
  ['https://0251.0376.0251.0376/hook', /^url points at a metadata address: 169\.254\.169\.254 /],
  ['https://0xa9fea9fe/hook', /^url points at a metadata address: 169\.254\.169\.254 /],
  ['https://169.254.43518/hook', /^url points at a metadata address: 169\.254\.169\.254 /],
  ['https://[::ffff:169.254.169.254]/hook', /^url points at a metadata address: ::ffff:a9fe:a9fe is the IPv4-mapped form of 169\.254\.169\.254/],
  ['https://[::ffff:0:169.254.169.254]/hook', /^url points at a metadata address: ::ffff:0:a9fe:a9fe is the IPv4-translated \(RFC 2765\) form/],
  ['https://[0:0:0:0:0:ffff:0a00:0001]/hook', /^url points at a private address: ::ffff:a00:1 is the IPv4-mapped form of 10\.0\.0\.1/],
  ['https://0x0a.0.0.1/hook', /^url points at a private address: 10\.0\.0\.1 /],
  ['https://017700000001/hook', /^url points at a loopback address: 127\.0\.0\.1 /],
  ['https://%31%32%37.0.0.1/hook', /^url points at a loopback address: 127\.0\.0\.1 /],
];

const literalUrl = (address: string) => `https://${address.includes(':') ? `[${address}]` : address}/hook`;
const nameOf = (name: string) => `${name}-${RUN}.hooks.test`;

let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack(`ssrf-${RUN}`, { HERALD_ALLOW_LOOPBACK: 'false', HERALD_TIME_SCALE: '1000' }, { resolver });
});

afterAll(async () => {
  await stack?.stop({ purge: true });
});

type ErrorBody = { error: string; issues: { path: string; message: string }[] };

async function refusedRegistration(id: string, url: string, message: RegExp): Promise<void> {
  const res = await stack.admin('PUT', `/destinations/${id}`, { url });
  expect(res.status).toBe(400);
  const body = res.body as ErrorBody;
  expect(body.error).toBe('invalid destination spec');
  expect(body.issues).toEqual([{ path: 'url', message: expect.stringMatching(message) as string }]);
}

describe('registration refuses every blocked address class', () => {
  test.each(BLOCKED)('%s as an IP literal (%s)', async (name, address, label) => {
    await refusedRegistration(`lit-${name}`, literalUrl(address), new RegExp(`^url points at ${label.source}`));
  });

  test.each(BLOCKED)('%s behind a host name that resolves to it (%s)', async (name, address, label) => {
    dns.set(nameOf(name), [address]);
    await refusedRegistration(`dns-${name}`, `https://${nameOf(name)}/hook`, new RegExp(`^url host ${nameOf(name).replace(/\./g, '\\.')} resolves to ${label.source}`));
  });

  test.each(SPELLINGS)('%s, spelled to reach a blocked address', async (url, message) => {
    await refusedRegistration('spelled', url, message);
  });

  test('a name with one public and one private address', async () => {
    dns.set(nameOf('mixed'), [PUBLIC, '10.9.9.9']);
    await refusedRegistration('dns-mixed', `https://${nameOf('mixed')}/hook`, /resolves to a private address: 10\.9\.9\.9/);
  });

  test.each<[string, string, RegExp]>([
    ['the GCE metadata host', 'https://metadata.google.internal/computeMetadata/v1/', /metadata address: metadata\.google\.internal/],
    ['the short metadata host', 'https://metadata/computeMetadata/v1/', /metadata address: metadata /],
    ['localhost', 'https://localhost:8443/hook', /loopback address: localhost is a loopback name/],
    ['plain http', `http://${PUBLIC}/hook`, /^url must use https$/],
    ['a host that does not resolve', 'https://nowhere.hooks.test/hook', /does not resolve \(ENOTFOUND\)/],
  ])('%s', async (_, url, message) => {
    await refusedRegistration('dns-other', url, message);
  });

  test('none of them was created; a public name is', async () => {
    const list = (await stack.admin('GET', '/destinations')).body as { destinations: { id: string }[] };
    expect(list.destinations.map((d) => d.id)).toEqual([]);
    dns.set(nameOf('public'), [PUBLIC, '2606:2800:21f:cb07:6820:80da:af6b:8b2c']);
    expect((await stack.admin('PUT', '/destinations/public', { url: `https://${nameOf('public')}/hook`, eventTypes: ['ssrf.never'] })).status).toBe(201);
  });
});

describe('delivery: a registered name that now resolves to a blocked address is refused at connect time', () => {
  const rebinds = BLOCKED.map(([name, address, label], i) => ({ id: `rebind-${i}`, host: nameOf(`rebind-${name}`), name, address, label }));

  beforeAll(async () => {
    for (const r of rebinds) {
      dns.set(r.host, [PUBLIC]); // public when registered…
      const res = await stack.admin('PUT', `/destinations/${r.id}`, { url: `https://${r.host}/hook`, eventTypes: ['ssrf.rebind'], technicalEmail: 'ops@example.com' });
      expect(res.status).toBe(201);
    }
    for (const r of rebinds) dns.set(r.host, [r.address]); // …then pointed inside
    const res = await stack.ingest({ 'ce-id': `evt-${RUN}`, 'ce-source': SOURCE, 'ce-type': 'ssrf.rebind', 'ce-specversion': '1.0', 'content-type': 'application/json' }, '{"probe":true}');
    expect(res.status).toBe(202);
  });

  test.each(BLOCKED.map(([name], i) => [name, i]))('%s: the destination is suspended (blocked-address) and the event QUEUED, not lost', async (_, i) => {
    const r = rebinds[i as number]!;
    const suspension = await eventually(`${r.id} to be suspended`, async () => {
      const res = await stack.admin('GET', `/destinations/${r.id}`);
      return (res.body as { suspension?: Suspension }).suspension;
    });
    expect(suspension.cause).toBe('blocked-address');
    expect(suspension.reason).toMatch(new RegExp(`url host ${r.host.replace(/\./g, '\\.')} resolves to ${r.label.source}`));
    expect(suspension.notification.to).toBe('ops@example.com');
    const record = await stack.runtime.deliveries.get(deliveryId(r.id, eventKey({ source: SOURCE, id: `evt-${RUN}` })));
    expect(record).toMatchObject({ status: 'QUEUED', attempts: 1 });
    expect(record!.lastError!.error).toMatch(/^refused by the SSRF guard: /);
  });
});
