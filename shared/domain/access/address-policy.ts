import { isIP } from 'node:net';
import { hostPort, LocalService, localServiceAt } from './local-services';

/**
 * The SSRF rules for webhook targets, as pure functions: which IP addresses and host names
 * Herald refuses to connect to, and why. The adapters apply them twice: when a destination
 * is registered (its host resolved) and on every connection an attempt opens, after DNS
 * resolution, to exactly the address that passed (shared/adapters/guarded-lookup.ts).
 */

export const ADDRESS_CLASSES = [
  'loopback',
  'private',
  'shared',
  'link-local',
  'metadata',
  'unique-local',
  'unspecified',
  'multicast',
  'broadcast',
  'documentation',
  'benchmarking',
  'reserved',
  'local-service',
] as const;
export type AddressClass = (typeof ADDRESS_CLASSES)[number];

export interface AddressRules {
  /** Local mode only (HERALD_ALLOW_LOOPBACK): 127.0.0.0/8, ::1 and localhost pass; nothing else private does. */
  allowLoopback: boolean;
  /** Local mode: the emulators and Herald's own port, refused even where loopback is allowed (domain/access/local-services.ts). */
  localServices?: readonly LocalService[];
}

/** Why an address (or a host name) is refused. */
export interface BlockedAddress {
  address: string;
  addressClass: AddressClass;
  /** Completes "<address> is …": e.g. "in 10.0.0.0/8 (RFC 1918)". */
  detail: string;
}

interface Range {
  cidr: string;
  addressClass: AddressClass;
  what: string;
}

// First match wins: the narrower ranges come before the ones that contain them.
const IPV4_RANGES: Range[] = [
  { cidr: '169.254.169.254/32', addressClass: 'metadata', what: 'the cloud metadata service' },
  { cidr: '0.0.0.0/8', addressClass: 'unspecified', what: '"this network", RFC 1122' },
  { cidr: '10.0.0.0/8', addressClass: 'private', what: 'RFC 1918' },
  { cidr: '100.64.0.0/10', addressClass: 'shared', what: 'shared address space, carrier-grade NAT, RFC 6598' },
  { cidr: '127.0.0.0/8', addressClass: 'loopback', what: 'RFC 1122' },
  { cidr: '169.254.0.0/16', addressClass: 'link-local', what: 'RFC 3927' },
  { cidr: '172.16.0.0/12', addressClass: 'private', what: 'RFC 1918' },
  { cidr: '192.0.0.0/24', addressClass: 'reserved', what: 'IETF protocol assignments, RFC 6890' },
  { cidr: '192.0.2.0/24', addressClass: 'documentation', what: 'TEST-NET-1, RFC 5737' },
  { cidr: '192.88.99.0/24', addressClass: 'reserved', what: '6to4 relay anycast, RFC 7526' },
  { cidr: '192.168.0.0/16', addressClass: 'private', what: 'RFC 1918' },
  { cidr: '198.18.0.0/15', addressClass: 'benchmarking', what: 'RFC 2544' },
  { cidr: '198.51.100.0/24', addressClass: 'documentation', what: 'TEST-NET-2, RFC 5737' },
  { cidr: '203.0.113.0/24', addressClass: 'documentation', what: 'TEST-NET-3, RFC 5737' },
  { cidr: '224.0.0.0/4', addressClass: 'multicast', what: 'RFC 5771' },
  { cidr: '255.255.255.255/32', addressClass: 'broadcast', what: 'limited broadcast' },
  { cidr: '240.0.0.0/4', addressClass: 'reserved', what: 'reserved for future use, RFC 1112' },
];

/** Inside ::/96 (IPv4-compatible), judged before it. */
const IPV6_SPECIAL: Range[] = [
  { cidr: '::/128', addressClass: 'unspecified', what: 'the unspecified address' },
  { cidr: '::1/128', addressClass: 'loopback', what: 'RFC 4291' },
];

const IPV6_RANGES: Range[] = [
  // Metadata services reachable over IPv6 (GCE, EC2): inside fc00::/7 too, named for the message.
  { cidr: 'fd20:ce::254/128', addressClass: 'metadata', what: 'the GCE metadata service' },
  { cidr: 'fd00:ec2::254/128', addressClass: 'metadata', what: 'the EC2 metadata service' },
  // Where the IPv4 address sits under a local-use prefix depends on the prefix length the
  // network chose (/48 to /96, RFC 6052 §2.2), and the registry marks it not globally reachable.
  { cidr: '64:ff9b:1::/48', addressClass: 'private', what: 'local-use NAT64, RFC 8215, refused whatever it embeds' },
  { cidr: '100::/64', addressClass: 'reserved', what: 'discard-only, RFC 6666' },
  { cidr: '100:0:0:1::/64', addressClass: 'reserved', what: 'dummy IPv6 prefix, RFC 9780' },
  // Teredo tunnels through NATs to a client behind one: refused whatever server and client it embeds.
  { cidr: '2001::/32', addressClass: 'reserved', what: 'Teredo, RFC 4380' },
  { cidr: '2001::/23', addressClass: 'reserved', what: 'IETF protocol assignments, RFC 2928' },
  { cidr: '2001:db8::/32', addressClass: 'documentation', what: 'RFC 3849' },
  { cidr: '3fff::/20', addressClass: 'documentation', what: 'RFC 9637' },
  { cidr: '5f00::/16', addressClass: 'reserved', what: 'SRv6 SIDs, RFC 9602' },
  { cidr: 'fc00::/7', addressClass: 'unique-local', what: 'RFC 4193' },
  { cidr: 'fe80::/10', addressClass: 'link-local', what: 'RFC 4291' },
  { cidr: 'fec0::/10', addressClass: 'private', what: 'site-local, deprecated, RFC 3879' },
  { cidr: 'ff00::/8', addressClass: 'multicast', what: 'RFC 4291' },
  // Only 2000::/3 is global unicast (IANA IPv6 Address Space): everything else not judged above
  // is reserved by the IETF and reaches no public receiver.
  { cidr: '::/3', addressClass: 'reserved', what: 'outside global unicast 2000::/3, reserved by the IETF, RFC 4291' },
  { cidr: '4000::/2', addressClass: 'reserved', what: 'outside global unicast 2000::/3, reserved by the IETF, RFC 4291' },
  { cidr: '8000::/1', addressClass: 'reserved', what: 'outside global unicast 2000::/3, reserved by the IETF, RFC 4291' },
];

/**
 * IPv6 forms that carry an IPv4 address, judged by the IPv4 address they reach: `offset` is
 * where its 32 bits start. Only the mapped form is this host's own IPv4 stack; the others
 * leave it for a translator or relay, so a loopback address inside them is not "local".
 */
const EMBEDDING: { cidr: string; what: string; offset: number; thisHost?: true }[] = [
  { cidr: '::ffff:0:0/96', what: 'IPv4-mapped', offset: 96, thisHost: true },
  { cidr: '::ffff:0:0:0/96', what: 'IPv4-translated (RFC 2765)', offset: 96 },
  { cidr: '64:ff9b::/96', what: 'NAT64 (RFC 6052)', offset: 96 },
  { cidr: '2002::/16', what: '6to4 (RFC 3056)', offset: 16 },
];
/** IPv4-compatible addresses (::a.b.c.d) are deprecated (RFC 4291 §2.5.5.1): refused whatever they embed. */
const IPV4_COMPATIBLE: Range = { cidr: '::/96', addressClass: 'reserved', what: 'IPv4-compatible IPv6, deprecated, RFC 4291' };

/** Host names of cloud metadata services, refused before any DNS lookup. */
const METADATA_HOSTS = new Set(['metadata', 'metadata.google.internal', 'metadata.goog', 'instance-data', 'instance-data.ec2.internal']);

const ARTICLE: Record<AddressClass, string> = {
  loopback: 'a loopback address',
  private: 'a private address',
  shared: 'a shared (CGNAT) address',
  'link-local': 'a link-local address',
  metadata: 'a metadata address',
  'unique-local': 'a unique-local IPv6 address',
  unspecified: 'an unspecified address',
  multicast: 'a multicast address',
  broadcast: 'a broadcast address',
  documentation: 'a documentation address',
  benchmarking: 'a benchmarking address',
  reserved: 'a reserved address',
  'local-service': 'a port local mode keeps for itself',
};

// ---------------------------------------------------------------- parsing

/** 32 or 128 bits as a bigint; undefined for anything that is not an IP address. */
export function ipToBigInt(ip: string): { bits: bigint; version: 4 | 6 } | undefined {
  const address = ip.replace(/%.*$/, ''); // a zone id (fe80::1%eth0) names an interface, not an address
  const version = isIP(address);
  if (version === 4) return { bits: ipv4Bits(address), version: 4 };
  if (version === 6) return { bits: ipv6Bits(address), version: 6 };
  return undefined;
}

function ipv4Bits(ip: string): bigint {
  return ip.split('.').reduce((acc, octet) => (acc << 8n) | BigInt(Number(octet)), 0n);
}

function ipv6Bits(ip: string): bigint {
  let text = ip.toLowerCase();
  // A trailing dotted quad (::ffff:1.2.3.4) is the last 32 bits.
  const quad = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (quad) {
    const v4 = ipv4Bits(quad[1]!);
    text = `${text.slice(0, -quad[1]!.length)}${((v4 >> 16n) & 0xffffn).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, undefined];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return groups.reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g, 16)), 0n);
}

const cidrs = new Map<string, { bits: bigint; prefix: number; version: 4 | 6 }>();

function parseCidr(cidr: string): { bits: bigint; prefix: number; version: 4 | 6 } {
  const known = cidrs.get(cidr);
  if (known) return known;
  const [ip, prefix] = cidr.split('/');
  const parsed = ipToBigInt(ip!);
  if (!parsed) throw new Error(`bad CIDR in the address table: ${cidr}`);
  const range = { ...parsed, prefix: Number(prefix) };
  cidrs.set(cidr, range);
  return range;
}

function inRange(address: { bits: bigint; version: 4 | 6 }, cidr: string): boolean {
  const range = parseCidr(cidr);
  if (range.version !== address.version) return false;
  const width = BigInt(address.version === 4 ? 32 : 128);
  const shift = width - BigInt(range.prefix);
  return address.bits >> shift === range.bits >> shift;
}

function bigIntToIpv4(bits: bigint): string {
  return [24n, 16n, 8n, 0n].map((s) => String((bits >> s) & 0xffn)).join('.');
}

// ---------------------------------------------------------------- classification

/** The class of a blocked address, or undefined for a public unicast one. Not an IP: undefined. */
export function classifyAddress(ip: string): BlockedAddress | undefined {
  const parsed = ipToBigInt(ip);
  if (!parsed) return undefined;
  if (parsed.version === 4) return match(ip, parsed, IPV4_RANGES);
  const direct = match(ip, parsed, IPV6_SPECIAL);
  if (direct) return direct;
  for (const e of EMBEDDING) {
    if (!inRange(parsed, e.cidr)) continue;
    const v4 = embeddedIpv4(parsed.bits, e.offset);
    const inner = classifyAddress(v4);
    if (!inner) return undefined;
    const addressClass = inner.addressClass === 'loopback' && !e.thisHost ? 'reserved' : inner.addressClass;
    return { address: ip, addressClass, detail: `the ${e.what} form of ${v4}, ${inner.detail}` };
  }
  if (inRange(parsed, IPV4_COMPATIBLE.cidr)) return { ...blockedBy(ip, IPV4_COMPATIBLE), detail: `the IPv4-compatible form of ${embeddedIpv4(parsed.bits, 96)}, in ::/96 (deprecated, RFC 4291): refused whatever it embeds` };
  const range = match(ip, parsed, IPV6_RANGES);
  return range && inRange(parsed, '2001::/32') ? { ...range, detail: `${range.detail}, to server ${embeddedIpv4(parsed.bits, 32)} and client ${embeddedIpv4(~parsed.bits, 96)}: refused whatever it embeds` } : range;
}

/** The 32 bits from `offset` on, as an IPv4 address (Teredo's client is stored inverted: pass ~bits). */
function embeddedIpv4(bits: bigint, offset: number): string {
  return bigIntToIpv4((bits >> BigInt(128 - offset - 32)) & 0xffffffffn);
}

function match(ip: string, parsed: { bits: bigint; version: 4 | 6 }, ranges: Range[]): BlockedAddress | undefined {
  const range = ranges.find((r) => inRange(parsed, r.cidr));
  return range && blockedBy(ip, range);
}

function blockedBy(ip: string, range: Range): BlockedAddress {
  return { address: ip, addressClass: range.addressClass, detail: `in ${range.cidr} (${range.what})` };
}

/**
 * Refused under `rules`: every blocked class, but loopback where local mode allows it; and,
 * given the port a connection goes to, local mode's own services (domain/access/local-services.ts).
 */
export function refusedAddress(ip: string, rules: AddressRules, port?: number): BlockedAddress | undefined {
  const blocked = classifyAddress(ip);
  if (blocked && !(blocked.addressClass === 'loopback' && rules.allowLoopback)) return blocked;
  return port === undefined ? undefined : localServiceRefusal(rules, ip, port, blocked !== undefined);
}

/** The refusal of `host` at `port` when that is one of local mode's own services. */
function localServiceRefusal(rules: AddressRules, host: string, port: number, loopback: boolean): BlockedAddress | undefined {
  const service = localServiceAt(rules.localServices, host, port, loopback);
  if (!service) return undefined;
  const where = `${service.what} (${hostPort(service.host, service.port)})`;
  return { address: hostPort(host, port), addressClass: 'local-service', detail: loopback ? `on loopback, at the port of ${where}` : where };
}

/** A host name as Herald compares it: no brackets, lower case, no trailing dot. */
export function normalizeHost(hostname: string): string {
  return hostname.replace(/^\[|\]$/g, '').toLowerCase().replace(/\.$/, '');
}

/** A name that means loopback without asking DNS (RFC 6761 reserves localhost and *.localhost). */
export function isLoopbackName(host: string): boolean {
  return host === 'localhost' || host.endsWith('.localhost');
}

// ---------------------------------------------------------------- URLs

export type UrlVerdict =
  | {
      ok: true;
      host: string;
      /** The port a connection goes to (the scheme's default when the URL names none). */
      port: number;
      /** The host is an IP literal or a loopback name: no DNS lookup decides anything more. */
      literal: boolean;
    }
  | { ok: false; message: string; blocked?: BlockedAddress };

const POLICY = 'Herald does not deliver to private, loopback, link-local, metadata or other non-public addresses';

function why(blocked: BlockedAddress): string {
  if (blocked.addressClass === 'local-service') return 'a destination may not reach the emulators or Herald itself: run the receiver on another port';
  return blocked.addressClass === 'loopback' ? 'only local mode with HERALD_ALLOW_LOOPBACK=true may use one' : POLICY;
}

/** Refusal text for a URL whose host is (or names) a blocked address. */
export function literalRefusal(blocked: BlockedAddress): string {
  return `url points at ${ARTICLE[blocked.addressClass]}: ${blocked.address} is ${blocked.detail}; ${why(blocked)}`;
}

/**
 * The first address a host resolved to that the rules refuse, for a connection to `port`: one
 * refuses the host, since a name answering with a public and a private address is what DNS
 * rebinding looks like.
 */
export function firstRefused(addresses: readonly { address: string }[], rules: AddressRules, port: number): BlockedAddress | undefined {
  for (const { address } of addresses) {
    const blocked = refusedAddress(address, rules, port);
    if (blocked) return blocked;
  }
  return undefined;
}

/** Refusal text for an address a host name resolved to. */
export function resolvedRefusal(host: string, blocked: BlockedAddress): string {
  return `url host ${host} resolves to ${ARTICLE[blocked.addressClass]}: ${blocked.address} is ${blocked.detail}; ${why(blocked)}`;
}

/**
 * What can be judged from the URL alone: scheme, credentials, metadata host names, IP
 * literals and loopback names. A host name that passes still has to resolve to allowed
 * addresses (at registration and at every connection).
 */
export function checkTargetUrl(raw: string, rules: AddressRules): UrlVerdict {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, message: 'url must be an absolute URL' };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return { ok: false, message: 'url must use https' };
  if (url.username || url.password) return { ok: false, message: 'url must not carry credentials; Herald signs every request instead' };
  const host = normalizeHost(url.hostname);
  const port = Number(url.port) || (url.protocol === 'https:' ? 443 : 80);
  const blocked: BlockedAddress | undefined = METADATA_HOSTS.has(host)
    ? { address: host, addressClass: 'metadata', detail: 'the name of a cloud metadata service' }
    : isLoopbackName(host)
      ? { address: host, addressClass: 'loopback', detail: 'a loopback name (RFC 6761)' }
      : classifyAddress(host);
  if (blocked) {
    if (blocked.addressClass !== 'loopback' || !rules.allowLoopback) return { ok: false, message: literalRefusal(blocked), blocked };
    // Loopback in local mode: plain http is allowed, as for any local receiver, but not at local mode's own services.
    const service = localServiceRefusal(rules, host, port, true);
    return service ? { ok: false, message: literalRefusal(service), blocked: service } : { ok: true, host, port, literal: true };
  }
  if (url.protocol !== 'https:') return { ok: false, message: 'url must use https' };
  const service = localServiceRefusal(rules, host, port, false);
  return service ? { ok: false, message: literalRefusal(service), blocked: service } : { ok: true, host, port, literal: isIP(host) !== 0 };
}
