import http from 'node:http';
import { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';

/**
 * Sent and received times of one run's events, by id. Times are `performance.now()` in this
 * process: sender and receiver share the clock, so latencies are exact to a fraction of a ms.
 */
export class Tracker {
  readonly sent = new Map<string, number>();
  readonly arrived = new Map<string, number>();
  duplicates = 0;
  /** Requests whose id this tracker never sent (leftovers of an earlier run, say). */
  strays = 0;
  private listeners: (() => void)[] = [];

  constructor(readonly label: string) {}

  markSent(ids: readonly string[], at: number): void {
    for (const id of ids) this.sent.set(id, at);
  }

  record(id: string | undefined, at: number): void {
    if (id === undefined || !this.sent.has(id)) this.strays++;
    else if (this.arrived.has(id)) this.duplicates++;
    else this.arrived.set(id, at);
    for (const listener of this.listeners) listener();
  }

  /** Resolves when `id` has arrived. */
  arrival(id: string): Promise<number> {
    return new Promise((resolve) => {
      const check = (): boolean => {
        const at = this.arrived.get(id);
        if (at === undefined) return false;
        resolve(at);
        return true;
      };
      if (check()) return;
      const listener = (): void => {
        if (check()) this.listeners = this.listeners.filter((l) => l !== listener);
      };
      this.listeners.push(listener);
    });
  }
}

/**
 * How the ids of a request are found: Herald delivers binary-mode CloudEvents (one), or to a
 * batched destination a JSON array of them (`batch-body`); Pub/Sub pushes an envelope.
 */
export type IdFrom = 'ce-id-header' | 'push-envelope' | 'batch-body';

function idsOf(idFrom: IdFrom, headers: http.IncomingHttpHeaders, body: Buffer): (string | undefined)[] {
  if (idFrom === 'ce-id-header') {
    const id = headers['ce-id'];
    return [typeof id === 'string' ? id : undefined];
  }
  try {
    const parsed = JSON.parse(body.toString('utf8')) as unknown;
    if (idFrom === 'batch-body') return Array.isArray(parsed) ? parsed.map((e) => (e as { id?: string }).id) : [undefined];
    return [(parsed as { message?: { attributes?: Record<string, string> } }).message?.attributes?.['ce-id']];
  } catch {
    return [undefined];
  }
}

export interface RouteOptions {
  /** Answer 503 to the first request for each event id (it is not an arrival), 204 after. */
  failFirst?: boolean;
}

/**
 * A lean loopback receiver: one path per tracker, records the arrival time of each event id (each of a batch's)
 * and answers 204 at once (an ack for both Herald and the Pub/Sub emulator).
 */
export class BenchReceiver {
  private readonly routes = new Map<string, { tracker: Tracker; idFrom: IdFrom; failFirst: boolean; failed: Set<string>; requests: number }>();
  private server?: http.Server;
  url = '';
  requests = 0;

  route(path: string, tracker: Tracker, idFrom: IdFrom, options: RouteOptions = {}): string {
    this.routes.set(path, { tracker, idFrom, failFirst: options.failFirst ?? false, failed: new Set(), requests: 0 });
    return `${this.url}${path}`;
  }

  /** Requests on a path since it was last routed, failed ones included. */
  requestsOn(path: string): number {
    return this.routes.get(path)?.requests ?? 0;
  }

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const at = performance.now();
        this.requests++;
        const route = this.routes.get((req.url ?? '/').split('?')[0] ?? '/');
        if (!route) {
          res.writeHead(404);
          res.end();
          return;
        }
        route.requests++;
        const ids = idsOf(route.idFrom, req.headers, Buffer.concat(chunks));
        const first = ids[0];
        if (route.failFirst && first !== undefined && !route.failed.has(first)) {
          route.failed.add(first);
          res.writeHead(503);
          res.end();
          return;
        }
        for (const id of ids) route.tracker.record(id, at);
        res.writeHead(204);
        res.end();
      });
    });
    this.server.keepAliveTimeout = 60_000;
    const server = this.server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }
}
