import { promises as dns, LookupOptions } from 'node:dns';
import { isIP, LookupFunction } from 'node:net';
import { AddressRules, BlockedAddress, firstRefused, normalizeHost, resolvedRefusal } from '../domain/address-policy';
import { HostResolver, ResolvedAddress } from '../ports';

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

/** Every address `host` resolves to, once all have passed the rules (firstRefused). */
export async function resolveAllowed(resolver: HostResolver, rules: AddressRules, hostname: string): Promise<ResolvedAddress[]> {
  const host = normalizeHost(hostname);
  const family = isIP(host);
  const addresses = family === 0 ? await resolver.lookup(host) : [{ address: host, family: family as 4 | 6 }];
  if (addresses.length === 0) throw Object.assign(new Error(`${host} has no address`), { code: 'ENOTFOUND' });
  const blocked = firstRefused(addresses, rules);
  if (blocked) throw new BlockedAddressError(host, blocked);
  return addresses;
}

/**
 * A `lookup` for net/tls.connect (an undici Agent's `connect.lookup`): it resolves, checks
 * every address and hands the socket only addresses that passed, so the connection goes to
 * exactly an address that was checked — a name that re-resolves elsewhere between a check
 * and the connect (DNS rebinding) cannot slip through. TLS SNI and the Host header keep the
 * host name: only the address is chosen here.
 */
export function guardedLookup(resolver: HostResolver, rules: AddressRules): LookupFunction {
  return (hostname: string, options: LookupOptions, callback) => {
    resolveAllowed(resolver, rules, hostname).then(
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
