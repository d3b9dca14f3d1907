/**
 * Local mode's own services on this machine — the Pub/Sub and Firestore emulators and Herald's
 * own port — which no destination may reach even where loopback is allowed: a webhook at the
 * Pub/Sub emulator could publish forged events onto Herald's own topics, pull dead letters or
 * trigger replays, and one at Herald's port could call its internal endpoints. Pure rules; local
 * mode (apps/local/local-services.ts) fills them in, and the SSRF guard applies them with
 * the address rules (shared/domain/access/address-policy.ts), at registration and on every connection.
 */

export interface LocalService {
  /** What listens there, as the refusal names it: "the Pub/Sub emulator", "Herald itself". */
  what: string;
  /** The host it was given as, normalised ("127.0.0.1", "localhost", "emulators.internal"). */
  host: string;
  port: number;
}

/**
 * The local service a connection to `host` (a name or an address) at `port` would reach. A
 * service's port is refused on every loopback address and loopback name (127.0.0.2, ::1 and
 * localhost reach a service bound to 0.0.0.0 or :: just as well, and which loopback address a
 * name resolves to is DNS's choice), and at its own host whatever that is.
 */
export function localServiceAt(services: readonly LocalService[] | undefined, host: string, port: number, loopback: boolean): LocalService | undefined {
  return services?.find((s) => s.port === port && (loopback || s.host === host));
}

/** `host:port`, with an IPv6 address in brackets. */
export function hostPort(host: string, port: number): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}
