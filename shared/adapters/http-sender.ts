import { Agent, Dispatcher, request } from 'undici';
import { AddressRules, checkTargetUrl } from '../domain/access/address-policy';
import { keptResponseHeaders } from '../domain/retry/attempt-detail';
import { AttemptResult } from '../domain/retry/delivery';
import { USER_AGENT } from '../domain/delivery/signing';
import { HostResolver, HttpRequest, HttpSender } from '../ports/http';
import { blockedCause, guardedConnector, systemResolver } from './guarded-lookup';
import { ClientIdentityPools } from './tls-dispatchers';

const EXCERPT_BYTES = 1024;
export { USER_AGENT };

function firstHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

export interface UndiciHttpSenderOptions {
  /** The SSRF rules every attempt is held to (HERALD_ALLOW_LOOPBACK, local mode's own services). */
  rules: AddressRules;
  /** DNS for the guard; the system resolver by default (tests map names to addresses). */
  resolver?: HostResolver;
  /** Extra trusted CAs for webhook TLS (tests: a receiver with a self-signed certificate). */
  tls?: { ca?: string };
}

/**
 * POSTs with undici: no redirect is ever followed (undici's request() has no redirect
 * handling unless asked), and one deadline covers DNS, connect, headers and the body excerpt.
 *
 * The SSRF guard runs on every attempt: the URL itself (scheme, IP literals, metadata and
 * loopback names) before anything is sent, and the resolved addresses inside the Agent's
 * connect — every new connection resolves, checks and connects to exactly a checked address
 * (guardedLookup), so a name re-pointed after registration (DNS rebinding) is refused too.
 * A pooled keep-alive connection stays on the address it was checked with.
 */
export class UndiciHttpSender implements HttpSender {
  private readonly dispatcher: Dispatcher;
  /** mTLS receivers' pools, one per client identity (tls-dispatchers.ts). */
  private readonly identities: ClientIdentityPools;

  constructor(private readonly options: UndiciHttpSenderOptions) {
    this.dispatcher = new Agent({
      keepAliveTimeout: 10_000,
      connections: 256,
      connect: guardedConnector(options.resolver ?? systemResolver, options.rules, options.tls?.ca ? { ca: options.tls.ca } : {}),
    });
    this.identities = new ClientIdentityPools(options.resolver ?? systemResolver, options.rules, options.tls?.ca);
  }

  async send(req: HttpRequest): Promise<AttemptResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const verdict = checkTargetUrl(req.url, this.options.rules);
    if (!verdict.ok) {
      const blocked = verdict.blocked;
      if (blocked) return { kind: 'blocked', durationMs: elapsed(), address: blocked.address, addressClass: blocked.addressClass, error: verdict.message };
      // Registration refuses such URLs; one stored before the rules changed fails as a network error would.
      return { kind: 'network', durationMs: elapsed(), error: `EHERALD_BAD_URL: ${verdict.message}` };
    }
    const signal = AbortSignal.timeout(req.timeoutMs);
    try {
      const res = await request(req.url, {
        method: 'POST',
        headers: { 'user-agent': USER_AGENT, ...req.headers },
        body: req.body,
        signal,
        dispatcher: req.tls ? this.identities.for(req.tls) : this.dispatcher,
      });
      const bodyExcerpt = await readExcerpt(res.body);
      const retryAfter = firstHeader(res.headers['retry-after']);
      const location = firstHeader(res.headers.location);
      return {
        kind: 'response',
        status: res.statusCode,
        durationMs: elapsed(),
        bodyExcerpt,
        headers: keptResponseHeaders(res.headers),
        ...(retryAfter !== undefined ? { retryAfter } : {}),
        ...(location !== undefined ? { location } : {}),
      };
    } catch (e) {
      const blocked = blockedCause(e);
      if (blocked) return { kind: 'blocked', durationMs: elapsed(), address: blocked.blocked.address, addressClass: blocked.blocked.addressClass, error: blocked.message };
      if (signal.aborted) return { kind: 'timeout', durationMs: elapsed(), timeoutMs: req.timeoutMs };
      const err = e as Error & { code?: string; cause?: { code?: string } };
      const code = err.code ?? err.cause?.code;
      return { kind: 'network', durationMs: elapsed(), error: code ? `${code}: ${err.message}` : err.message };
    }
  }

  async close(): Promise<void> {
    await Promise.all([this.dispatcher.close(), this.identities.close()]);
  }
}

async function readExcerpt(body: Dispatcher.ResponseData['body']): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk as Buffer);
    size += (chunk as Buffer).length;
    if (size >= EXCERPT_BYTES) break; // the rest is not ours to wait for
  }
  if (size >= EXCERPT_BYTES) body.destroy();
  return Buffer.concat(chunks).subarray(0, EXCERPT_BYTES).toString('utf8');
}
