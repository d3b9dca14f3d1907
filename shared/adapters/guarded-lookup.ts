import { promises as dns, LookupOptions } from 'node:dns';
import { isIP, LookupFunction } from 'node:net';
import { buildConnector } from 'undici';
import { AddressRules, BlockedAddress, firstRefused, normalizeHost, resolvedRefusal } from '../domain/access/address-policy';
import { HostResolver, ResolvedAddress } from '../ports/http';

/** The operating system's resolver (getaddrinfo: /etc/hosts, then DNS), every address in the order it gave. */
export const systemResolver: HostResolver = {
  async lookup(hostname) {
    const found = await dns.lookup(hostname, { all: true, order: 'verbatim' });
    return found.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
  },
};

/** A host name that resolved to an address the SSRF rules refuse. */
export class BlockedAddressError extends Error {
  override name = 'BlockedAddressError';
  readonly code = 'EHERALD_BLOCKED_ADDRESS';
  constructor(
    readonly host: string,
    readonly blocked: BlockedAddress,
  ) {
    super(resolvedRefusal(host, blocked));
  }
}

/** Every address `host` resolves to, once all have passed the rules for a connection to `port` (firstRefused). */
export async function resolveAllowed(resolver: HostResolver, rules: AddressRules, hostname: string, port: number): Promise<ResolvedAddress[]> {
  const host = normalizeHost(hostname);
  const family = isIP(host);
  const addresses = family === 0 ? await resolver.lookup(host) : [{ address: host, family: family as 4 | 6 }];
  if (addresses.length === 0) throw Object.assign(new Error(`${host} has no address`), { code: 'ENOTFOUND' });
  const blocked = firstRefused(addresses, rules, port);
  if (blocked) throw new BlockedAddressError(host, blocked);
  return addresses;
}

/**
 * A `lookup` for net/tls.connect to `port`: it resolves, checks every address and hands the
 * socket only addresses that passed, so the connection goes to exactly an address that was
 * checked — a name that re-resolves elsewhere between a check and the connect (DNS
 * rebinding) cannot slip through. TLS SNI and the Host header keep the host name: only the
 * address is chosen here.
 */
export function guardedLookup(resolver: HostResolver, rules: AddressRules, port: number): LookupFunction {
  return (hostname: string, options: LookupOptions, callback) => {
    resolveAllowed(resolver, rules, hostname, port).then(
      (addresses) => {
        const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : options.family;
        const usable = family === 4 || family === 6 ? addresses.filter((a) => a.family === family) : addresses;
        const first = usable[0];
        if (!first) {
          callback(Object.assign(new Error(`${hostname} has no IPv${family} address`), { code: 'ENOTFOUND' }), '', undefined);
          return;
        }
        if (options.all) callback(null, usable.map((a) => ({ address: a.address, family: a.family })));
        else callback(null, first.address, first.family);
      },
      (e: NodeJS.ErrnoException) => callback(e, '', undefined),
    );
  };
}

/**
 * An undici connector (an Agent's `connect`) whose every connection resolves through
 * guardedLookup. A lookup is not told the port, and the rules judge some addresses by it
 * (local mode's own services), so each port gets a connector of its own, made on first use.
 */
export function guardedConnector(resolver: HostResolver, rules: AddressRules, tls: { ca?: string | string[]; cert?: string; key?: string } = {}): buildConnector.connector {
  const byPort = new Map<number, buildConnector.connector>();
  return (options, callback) => {
    const port = Number(options.port) || (options.protocol === 'https:' ? 443 : 80);
    let connect = byPort.get(port);
    if (!connect) byPort.set(port, (connect = buildConnector({ ...tls, lookup: guardedLookup(resolver, rules, port) })));
    return connect(options, callback);
  };
}

/** The guard's refusal, wherever undici wrapped it. */
export function blockedCause(e: unknown): BlockedAddressError | undefined {
  for (let cause = e, depth = 0; cause instanceof Error && depth < 5; cause = cause.cause, depth++) {
    if (cause instanceof BlockedAddressError) return cause;
  }
  return undefined;
}
