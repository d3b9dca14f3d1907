import { createHash } from 'node:crypto';
import { rootCertificates } from 'node:tls';
import { Agent, Dispatcher } from 'undici';
import type { AddressRules } from '../domain/access/address-policy';
import type { HostResolver, HttpRequest } from '../ports/http';
import { guardedConnector } from './guarded-lookup';

/** Client identities kept at once; the least recently used pool is closed beyond it. */
const MAX_POOLS = 256;

/**
 * Connection pools for mTLS receivers, one per client certificate, key and CA: a pooled
 * connection was handshaken with one identity, so it must never carry another destination's
 * requests. Each pool's connections go through the same SSRF guard as every other attempt.
 * Keyed by a digest of the PEMs (never the PEMs themselves), so a rotated certificate gets
 * a pool of its own at once and the old one ages out.
 */
export class ClientIdentityPools {
  private readonly pools = new Map<string, Agent>();

  constructor(
    private readonly resolver: HostResolver,
    private readonly rules: AddressRules,
    /** The sender's extra trusted CA (tests), kept beside a receiver's own. */
    private readonly baseCa?: string,
  ) {}

  for(tls: NonNullable<HttpRequest['tls']>): Dispatcher {
    const key = createHash('sha256').update(tls.clientCertificate).update('\0').update(tls.clientKey).update('\0').update(tls.ca ?? '').digest('hex');
    const found = this.pools.get(key);
    if (found) {
      this.pools.delete(key);
      this.pools.set(key, found);
      return found;
    }
    // A receiver's CA is trusted besides the public roots: one with a public certificate still verifies.
    const ca = tls.ca !== undefined || this.baseCa !== undefined ? [...rootCertificates, ...(this.baseCa ? [this.baseCa] : []), ...(tls.ca ? [tls.ca] : [])] : undefined;
    const agent = new Agent({
      keepAliveTimeout: 10_000,
      connections: 64,
      connect: guardedConnector(this.resolver, this.rules, { cert: tls.clientCertificate, key: tls.clientKey, ...(ca ? { ca } : {}) }),
    });
    this.pools.set(key, agent);
    if (this.pools.size > MAX_POOLS) {
      const [oldest, pool] = this.pools.entries().next().value!;
      this.pools.delete(oldest);
      void pool.close();
    }
    return agent;
  }

  async close(): Promise<void> {
    const all = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(all.map((a) => a.close()));
  }
}
