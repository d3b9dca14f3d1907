import { AttemptResult } from '../domain/retry/delivery';

/** Sending HTTP requests, resolving addresses, verifying ID tokens. Only shared/adapters/ implements these with SDKs and sockets. */

export interface HttpRequest {
  url: string;
  headers: Record<string, string>;
  body: Buffer;
  timeoutMs: number;
  /** A client certificate (mTLS) and the CA to trust for this receiver, PEM; sent on connections of their own. */
  tls?: { clientCertificate: string; clientKey: string; ca?: string };
}

/** One address a host name resolves to. */
export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** DNS as Herald's SSRF guard sees it (tests map names to the addresses they need). */
export interface HostResolver {
  /** Every address of `hostname`; rejects with the resolver's error (`code` ENOTFOUND, EAI_AGAIN, …). */
  lookup(hostname: string): Promise<ResolvedAddress[]>;
}

/** Verifies the Google-signed OIDC token a push or scheduler request carries. */
export interface IdTokenVerifier {
  /** The token's claims once its signature, issuer, expiry and audience check out; rejects otherwise. */
  verify(idToken: string, audience: string): Promise<Record<string, unknown>>;
}

export interface HttpSender {
  /** Never throws for the receiver's faults: a timeout or a refused connection is a result. */
  send(request: HttpRequest): Promise<AttemptResult>;
}
