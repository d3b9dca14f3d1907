import { AddressClass, checkTargetUrl, classifyAddress, ipToBigInt, refusedAddress } from '../../../shared/domain/access/address-policy';

/**
 * Every entry of the IANA IPv4 and IPv6 Special-Purpose Address Registries (RFC 6890 and the
 * RFCs that added to them; written from the registries as they stood in 2025) against the SSRF
 * guard: each block that is not globally reachable is refused, at its first and last address,
 * in production and in local mode (loopback aside, which local mode allows). A "globally
 * reachable" entry is allowed unless it sits inside a larger block Herald refuses whole; each
 * such entry says what Herald does and why. IPv6 forms that embed an IPv4 address are judged by
 * that address, or refused whole where the table says so.
 */

const STRICT = { allowLoopback: false };
const LOCAL = { allowLoopback: true };

type Verdict =
  /** Refused at every address of the block. */
  | { herald: 'refused'; why?: string }
  /** Allowed: a public unicast or anycast block no rule of Herald's covers. */
  | { herald: 'allowed'; why: string }
  /** Judged by the IPv4 address it embeds: `embed` builds the IPv6 form of an IPv4 address. */
  | { herald: 'embedded'; embed: (v4: string) => string; why: string };

interface Entry {
  block: string;
  name: string;
  rfc: string;
  /** The registry's "Globally Reachable": N/A where it gives none. */
  global: boolean | 'N/A';
  verdict: Verdict;
}

const refused: Verdict = { herald: 'refused' };
/** Anycast to "the nearest" server of a protocol: a box of the network Herald runs in, never a webhook receiver. */
const NEAREST = 'anycast that reaches the nearest such server, a device of the network Herald itself runs in; inside a block Herald refuses whole';
/** Inside 2001::/23: Herald refuses the IETF protocol assignments whole rather than follow its sub-assignments one by one. */
const IETF_BLOCK = 'inside 2001::/23, the IETF protocol assignments, which Herald refuses whole (new sub-assignments are refused before anyone looks at them); no webhook receiver lives here';

const IPV4: Entry[] = [
  { block: '0.0.0.0/8', name: '"This network"', rfc: 'RFC 791, section 3.2', global: false, verdict: refused },
  { block: '0.0.0.0/32', name: '"This host on this network"', rfc: 'RFC 1122, section 3.2.1.3', global: false, verdict: refused },
  { block: '10.0.0.0/8', name: 'Private-Use', rfc: 'RFC 1918', global: false, verdict: refused },
  { block: '100.64.0.0/10', name: 'Shared Address Space', rfc: 'RFC 6598', global: false, verdict: refused },
  { block: '127.0.0.0/8', name: 'Loopback', rfc: 'RFC 1122, section 3.2.1.3', global: false, verdict: refused },
  { block: '169.254.0.0/16', name: 'Link Local', rfc: 'RFC 3927', global: false, verdict: refused },
  { block: '172.16.0.0/12', name: 'Private-Use', rfc: 'RFC 1918', global: false, verdict: refused },
  { block: '192.0.0.0/24', name: 'IETF Protocol Assignments', rfc: 'RFC 6890, section 2.1', global: false, verdict: refused },
  { block: '192.0.0.0/29', name: 'IPv4 Service Continuity Prefix', rfc: 'RFC 7335', global: false, verdict: refused },
  { block: '192.0.0.8/32', name: 'IPv4 dummy address', rfc: 'RFC 7600', global: false, verdict: refused },
  { block: '192.0.0.9/32', name: 'Port Control Protocol Anycast', rfc: 'RFC 7723', global: true, verdict: { herald: 'refused', why: `PCP: ${NEAREST} (192.0.0.0/24)` } },
  { block: '192.0.0.10/32', name: 'Traversal Using Relays around NAT Anycast', rfc: 'RFC 8155', global: true, verdict: { herald: 'refused', why: `TURN: ${NEAREST} (192.0.0.0/24)` } },
  { block: '192.0.0.170/32', name: 'NAT64/DNS64 Discovery', rfc: 'RFC 8880, RFC 7050 section 2.2', global: false, verdict: refused },
  { block: '192.0.0.171/32', name: 'NAT64/DNS64 Discovery', rfc: 'RFC 8880, RFC 7050 section 2.2', global: false, verdict: refused },
  { block: '192.0.2.0/24', name: 'Documentation (TEST-NET-1)', rfc: 'RFC 5737', global: false, verdict: refused },
  { block: '192.31.196.0/24', name: 'AS112-v4', rfc: 'RFC 7535', global: true, verdict: { herald: 'allowed', why: 'public anycast DNS sinks, inside no block Herald refuses' } },
  { block: '192.52.193.0/24', name: 'AMT', rfc: 'RFC 7450', global: true, verdict: { herald: 'allowed', why: 'public anycast relays, inside no block Herald refuses' } },
  { block: '192.88.99.0/24', name: 'Deprecated (6to4 Relay Anycast)', rfc: 'RFC 7526', global: 'N/A', verdict: refused },
  {
    block: '192.88.99.2/32',
    name: '6a44-relay anycast address',
    rfc: 'RFC 6751',
    global: true,
    verdict: { herald: 'refused', why: `6a44 relay: ${NEAREST} (192.88.99.0/24, deprecated 6to4 relay anycast)` },
  },
  { block: '192.168.0.0/16', name: 'Private-Use', rfc: 'RFC 1918', global: false, verdict: refused },
  { block: '192.175.48.0/24', name: 'Direct Delegation AS112 Service', rfc: 'RFC 7534', global: true, verdict: { herald: 'allowed', why: 'public anycast DNS sinks, inside no block Herald refuses' } },
  { block: '198.18.0.0/15', name: 'Benchmarking', rfc: 'RFC 2544', global: false, verdict: refused },
  { block: '198.51.100.0/24', name: 'Documentation (TEST-NET-2)', rfc: 'RFC 5737', global: false, verdict: refused },
  { block: '203.0.113.0/24', name: 'Documentation (TEST-NET-3)', rfc: 'RFC 5737', global: false, verdict: refused },
  { block: '240.0.0.0/4', name: 'Reserved', rfc: 'RFC 1112, section 4', global: false, verdict: refused },
  { block: '255.255.255.255/32', name: 'Limited Broadcast', rfc: 'RFC 8190, RFC 919 section 7', global: false, verdict: refused },
];

const mapped = (v4: string) => `::ffff:${v4}`;
const nat64 = (v4: string) => `64:ff9b::${v4}`;
const sixToFour = (v4: string) => {
  const [a, b, c, d] = v4.split('.').map(Number) as [number, number, number, number];
  const hex = (x: number, y: number) => ((x << 8) | y).toString(16);
  return `2002:${hex(a, b)}:${hex(c, d)}::1`;
};

const IPV6: Entry[] = [
  { block: '::1/128', name: 'Loopback Address', rfc: 'RFC 4291', global: false, verdict: refused },
  { block: '::/128', name: 'Unspecified Address', rfc: 'RFC 4291', global: false, verdict: refused },
  {
    block: '::ffff:0:0/96',
    name: 'IPv4-mapped Address',
    rfc: 'RFC 4291',
    global: false,
    verdict: { herald: 'embedded', embed: mapped, why: 'not an IPv6 destination at all: a dual-stack socket connects to the IPv4 address it embeds, so that address decides' },
  },
  {
    block: '64:ff9b::/96',
    name: 'IPv4-IPv6 Translat.',
    rfc: 'RFC 6052',
    global: true,
    verdict: { herald: 'embedded', embed: nat64, why: 'a NAT64 translator connects on to the IPv4 address it embeds, so that address decides' },
  },
  { block: '64:ff9b:1::/48', name: 'IPv4-IPv6 Translat.', rfc: 'RFC 8215', global: false, verdict: refused },
  { block: '100::/64', name: 'Discard-Only Address Block', rfc: 'RFC 6666', global: false, verdict: refused },
  { block: '100:0:0:1::/64', name: 'Dummy IPv6 Prefix', rfc: 'RFC 9780', global: false, verdict: refused },
  { block: '2001::/23', name: 'IETF Protocol Assignments', rfc: 'RFC 2928', global: false, verdict: refused },
  {
    block: '2001::/32',
    name: 'TEREDO',
    rfc: 'RFC 4380, RFC 8190',
    global: 'N/A',
    verdict: { herald: 'refused', why: 'a tunnel through NATs to a client behind one: refused whatever server and client it embeds (the refusal names both)' },
  },
  { block: '2001:1::1/128', name: 'Port Control Protocol Anycast', rfc: 'RFC 7723', global: true, verdict: { herald: 'refused', why: `PCP: ${NEAREST} (2001::/23)` } },
  { block: '2001:1::2/128', name: 'Traversal Using Relays around NAT Anycast', rfc: 'RFC 8155', global: true, verdict: { herald: 'refused', why: `TURN: ${NEAREST} (2001::/23)` } },
  { block: '2001:1::3/128', name: 'DNS-SD Service Registration Protocol Anycast Address', rfc: 'RFC 9665', global: true, verdict: { herald: 'refused', why: `SRP registrar: ${NEAREST} (2001::/23)` } },
  { block: '2001:2::/48', name: 'Benchmarking', rfc: 'RFC 5180, RFC Errata 1752', global: false, verdict: refused },
  { block: '2001:3::/32', name: 'AMT', rfc: 'RFC 7450', global: true, verdict: { herald: 'refused', why: `multicast tunnel relays; ${IETF_BLOCK} (the IPv4 AMT block, in no refused block, is allowed)` } },
  { block: '2001:4:112::/48', name: 'AS112-v6', rfc: 'RFC 7535', global: true, verdict: { herald: 'refused', why: `DNS sinks; ${IETF_BLOCK} (the AS112 blocks outside it are allowed)` } },
  { block: '2001:10::/28', name: 'Deprecated (previously ORCHID)', rfc: 'RFC 4843', global: 'N/A', verdict: refused },
  { block: '2001:20::/28', name: 'ORCHIDv2', rfc: 'RFC 7343', global: true, verdict: { herald: 'refused', why: `cryptographic identifiers for overlays, not locators a socket connects to; ${IETF_BLOCK}` } },
  {
    block: '2001:30::/28',
    name: 'Drone Remote ID Protocol Entity Tags (DETs) Prefix',
    rfc: 'RFC 9374',
    global: true,
    verdict: { herald: 'refused', why: `identifiers of drones (HHITs), not webhook receivers; ${IETF_BLOCK}` },
  },
  { block: '2001:db8::/32', name: 'Documentation', rfc: 'RFC 3849', global: false, verdict: refused },
  {
    block: '2002::/16',
    name: '6to4',
    rfc: 'RFC 3056',
    global: 'N/A',
    verdict: { herald: 'embedded', embed: sixToFour, why: 'a 6to4 relay tunnels to the IPv4 address in bits 16-47, so that address decides' },
  },
  { block: '2620:4f:8000::/48', name: 'Direct Delegation AS112 Service', rfc: 'RFC 7534', global: true, verdict: { herald: 'allowed', why: 'public anycast DNS sinks, inside no block Herald refuses' } },
  { block: '3fff::/20', name: 'Documentation', rfc: 'RFC 9637', global: false, verdict: refused },
  { block: '5f00::/16', name: 'Segment Routing (SRv6) SIDs', rfc: 'RFC 9602', global: false, verdict: refused },
  { block: 'fc00::/7', name: 'Unique-Local', rfc: 'RFC 4193, RFC 8190', global: false, verdict: refused },
  { block: 'fe80::/10', name: 'Link-Local Unicast', rfc: 'RFC 4291', global: false, verdict: refused },
];

/** The first and the last address of a block, as IP strings (IPv6 uncompressed, which every parser takes). */
function edgesOf(block: string): [string, string] {
  const [ip, prefix] = block.split('/') as [string, string];
  const { bits, version } = ipToBigInt(ip)!;
  const width = version === 4 ? 32 : 128;
  const host = (1n << BigInt(width - Number(prefix))) - 1n;
  const first = bits & ~host;
  const format = (n: bigint) =>
    version === 4
      ? [24n, 16n, 8n, 0n].map((s) => String((n >> s) & 0xffn)).join('.')
      : Array.from({ length: 8 }, (_, i) => ((n >> BigInt(112 - 16 * i)) & 0xffffn).toString(16)).join(':');
  return [format(first), format(first | host)];
}

const LOOPBACK_BLOCKS = new Set(['127.0.0.0/8', '::1/128']);

describe.each([
  ['IPv4', IPV4],
  ['IPv6', IPV6],
])('the IANA %s Special-Purpose Address Registry, entry by entry', (_, entries) => {
  test.each(entries.filter((e) => e.verdict.herald === 'refused').map((e) => [e.block, e.name, e.rfc, e.global, e] as const))(
    '%s (%s, %s; globally reachable: %s) is refused',
    (block, _name, _rfc, global, entry) => {
      // A globally reachable entry refused must say why.
      if (global === true) expect(entry.verdict.herald === 'refused' && entry.verdict.why).toBeTruthy();
      for (const address of edgesOf(block)) {
        expect(refusedAddress(address, STRICT)).toMatchObject({ address });
        if (LOOPBACK_BLOCKS.has(block)) expect(refusedAddress(address, LOCAL)).toBeUndefined();
        else expect(refusedAddress(address, LOCAL)).toMatchObject({ address });
      }
    },
  );

  test.each(entries.filter((e) => e.verdict.herald === 'allowed').map((e) => [e.block, e.name, e.rfc, e] as const))('%s (%s, %s; globally reachable) is allowed', (block, _name, _rfc, entry) => {
    expect(entry.global).toBe(true);
    for (const address of edgesOf(block)) expect(classifyAddress(address)).toBeUndefined();
  });

  test('the table is the whole registry: no block twice', () => {
    expect(new Set(entries.map((e) => e.block)).size).toBe(entries.length);
  });
});

describe('the IPv6 registry entries that embed an IPv4 address', () => {
  test.each(IPV6.filter((e) => e.verdict.herald === 'embedded').map((e) => [e.block, e.name, e.rfc, e] as const))(
    'IPv6 %s (%s, %s) is judged by the IPv4 address it embeds',
    (_block, _name, _rfc, entry) => {
      const { embed } = entry.verdict as Extract<Verdict, { herald: 'embedded' }>;
      expect(classifyAddress(embed('8.8.8.8'))).toBeUndefined();
      expect(classifyAddress(embed('169.254.169.254'))).toMatchObject({ addressClass: 'metadata' });
      expect(classifyAddress(embed('10.0.0.1'))).toMatchObject({ addressClass: 'private' });
      expect(classifyAddress(embed('0.0.0.0'))).toMatchObject({ addressClass: 'unspecified' });
    },
  );

});

describe('IPv6 forms of an IPv4 address the registries do not list', () => {
  test.each<[string, string, AddressClass | undefined, RegExp | undefined]>([
    // IPv4-translated, ::ffff:0:a.b.c.d (RFC 2765, SIIT): judged by the address a translator connects on to.
    ['translated: metadata', '::ffff:0:a9fe:a9fe', 'metadata', /IPv4-translated \(RFC 2765\) form of 169\.254\.169\.254/],
    ['translated: 10.0.0.1', '::ffff:0:a00:1', 'private', /IPv4-translated \(RFC 2765\) form of 10\.0\.0\.1/],
    ['translated: a loopback address leaves this host, so it is no local receiver', '::ffff:0:7f00:1', 'reserved', /form of 127\.0\.0\.1/],
    ['translated: public', '::ffff:0:808:808', undefined, undefined],
    // IPv4-compatible, ::a.b.c.d (deprecated, RFC 4291 §2.5.5.1): refused whatever it embeds.
    ['compatible: public', '::808:808', 'reserved', /IPv4-compatible form of 8\.8\.8\.8.*refused whatever it embeds/],
    ['compatible: metadata', '::a9fe:a9fe', 'reserved', /IPv4-compatible form of 169\.254\.169\.254/],
    // NAT64 and 6to4 reaching a loopback address: not this host's, so not what local mode allows.
    ['NAT64: loopback', '64:ff9b::7f00:1', 'reserved', /NAT64 \(RFC 6052\) form of 127\.0\.0\.1/],
    ['6to4: loopback', '2002:7f00:1::1', 'reserved', /6to4 \(RFC 3056\) form of 127\.0\.0\.1/],
    // Local-use NAT64: where the IPv4 address sits depends on the network's prefix length: refused whatever it embeds.
    ['local-use NAT64 of a public address', '64:ff9b:1::808:808', 'private', /local-use NAT64, RFC 8215, refused whatever it embeds/],
    // Teredo: server 65.54.227.120, client 192.0.2.45 (stored inverted): refused, both named.
    ['Teredo', '2001:0:4136:e378:8000:63bf:3fff:fdd2', 'reserved', /Teredo, RFC 4380\), to server 65\.54\.227\.120 and client 192\.0\.2\.45: refused whatever it embeds/],
    ['Teredo with a public client', '2001:0:4136:e378:8000:63bf:f7f7:f7f7', 'reserved', /client 8\.8\.8\.8/],
  ])('%s (%s)', (_, ip, addressClass, detail) => {
    const blocked = classifyAddress(ip);
    if (addressClass === undefined) {
      expect(blocked).toBeUndefined();
      return;
    }
    expect(blocked).toMatchObject({ address: ip, addressClass });
    expect(blocked!.detail).toMatch(detail!);
    expect(refusedAddress(ip, LOCAL)).toBeDefined();
  });

  test.each(['::1:0:0:1', '400::1', '8000::1', 'e000::1', 'fe00::1', '1fff:ffff::1'])('%s, outside global unicast 2000::/3 and every named block, is refused as reserved', (ip) => {
    expect(classifyAddress(ip)).toMatchObject({ addressClass: 'reserved', detail: expect.stringContaining('outside global unicast 2000::/3') as string });
  });

  test.each(['2000::1', '2606:4700:4700::1111', '2a00:1450:4001::200e', '3ffe::1'])('%s, global unicast, is allowed', (ip) => {
    expect(classifyAddress(ip)).toBeUndefined();
  });
});

describe('host spellings that reach these: the guard sees the address Node’s URL parser (and so the connection) uses', () => {
  test.each<[string, string, AddressClass]>([
    ['https://2852039166/', '169.254.169.254', 'metadata'],
    ['https://0251.0376.0251.0376/', '169.254.169.254', 'metadata'],
    ['https://0xa9fea9fe/', '169.254.169.254', 'metadata'],
    ['https://0xA9.0xFE.0xA9.0xFE/', '169.254.169.254', 'metadata'],
    ['https://169.254.43518/', '169.254.169.254', 'metadata'],
    ['https://169.16689662/', '169.254.169.254', 'metadata'],
    ['https://[::ffff:a9fe:a9fe]/', '::ffff:a9fe:a9fe', 'metadata'],
    ['https://[::ffff:169.254.169.254]/', '::ffff:a9fe:a9fe', 'metadata'],
    ['https://[::FFFF:A9FE:A9FE]/', '::ffff:a9fe:a9fe', 'metadata'],
    ['https://[0:0:0:0:0:ffff:0a00:0001]/', '::ffff:a00:1', 'private'],
    ['https://[::ffff:0:a9fe:a9fe]/', '::ffff:0:a9fe:a9fe', 'metadata'],
    ['https://[::ffff:0:169.254.169.254]/', '::ffff:0:a9fe:a9fe', 'metadata'],
    ['https://[::ffff:0:a00:1]/', '::ffff:0:a00:1', 'private'],
    ['https://[64:ff9b::169.254.169.254]/', '64:ff9b::a9fe:a9fe', 'metadata'],
    ['https://[2002:a9fe:a9fe::1]/', '2002:a9fe:a9fe::1', 'metadata'],
    ['https://[::169.254.169.254]/', '::a9fe:a9fe', 'reserved'],
    ['https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/', '2001:0:4136:e378:8000:63bf:3fff:fdd2', 'reserved'],
    ['https://[100:0:0:1::1]/', '100:0:0:1::1', 'reserved'],
    ['https://10.1/', '10.0.0.1', 'private'],
    ['https://0x0a.0.0.1/', '10.0.0.1', 'private'],
    ['https://0/', '0.0.0.0', 'unspecified'],
    ['https://017700000001/', '127.0.0.1', 'loopback'],
    ['https://127.000.000.001/', '127.0.0.1', 'loopback'],
    ['https://127.0.0.1./', '127.0.0.1', 'loopback'],
    ['https://%31%32%37.0.0.1/', '127.0.0.1', 'loopback'],
    ['https://１２７.０.０.１/', '127.0.0.1', 'loopback'],
    ['https://[0000:0000:0000:0000:0000:0000:0000:0001]/', '::1', 'loopback'],
    ['https://LOCALHOST./', 'localhost', 'loopback'],
    ['https://ⓛⓞⓒⓐⓛⓗⓞⓢⓣ/', 'localhost', 'loopback'],
  ])('%s is %s (%s)', (url, address, addressClass) => {
    const verdict = checkTargetUrl(url, STRICT);
    expect(verdict).toMatchObject({ ok: false, blocked: { address, addressClass } });
  });
});
