import http from 'node:http';
import { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';

/**
 * A loopback receiver for the rate and isolation benches: each path behaves as scripted and
 * logs every request it answered (time, status, CloudEvents id). Times are performance.now()
 * of this process, when the request body had arrived.
 *
 *   - `throttle`: accepts `capacity` requests in any sliding 1 s window (204) and answers 429
 *     to the rest — a receiver whose limit is "C requests per second", counted over the last
 *     1000 ms rather than per calendar second, so no two adjacent seconds can add up to 2C.
 *     `retryAfter` (seconds), when set, goes on every 429 as Retry-After.
 *   - `ok`: 204 at once.
 *   - `slow`: 204 after `delayMs` (longer than Herald's attempt timeout: a destination that
 *     times out on every request).
 */
export type Behaviour = { kind: 'throttle'; capacity: number; retryAfter?: number } | { kind: 'ok' } | { kind: 'slow'; delayMs: number };

export interface LoggedRequest {
  at: number;
  /** 0: not answered (a `slow` request whose sender gave up first). */
  status: number;
  id?: string;
}

interface Route {
  behaviour: Behaviour;
  log: LoggedRequest[];
  /** Accepted times within the last second (throttle), oldest first from `head`. */
  window: number[];
  head: number;
}

export class ScriptedReceiver {
  private readonly routes = new Map<string, Route>();
  private server?: http.Server;
  private readonly timers = new Set<NodeJS.Timeout>();
  url = '';

  /** Sets (or resets, with an empty log) what `path` does; returns its URL. */
  route(path: string, behaviour: Behaviour): string {
    this.routes.set(path, { behaviour, log: [], window: [], head: 0 });
    return `${this.url}${path}`;
  }

  log(path: string): readonly LoggedRequest[] {
    return this.routes.get(path)?.log ?? [];
  }

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      req.on('data', () => undefined);
      req.on('end', () => {
        const at = performance.now();
        const route = this.routes.get((req.url ?? '/').split('?')[0] ?? '/');
        if (!route) {
          res.writeHead(404);
          res.end();
          return;
        }
        const header = req.headers['ce-id'];
        const id = typeof header === 'string' ? header : undefined;
        const answer = (status: number, headers: Record<string, string> = {}) => {
          route.log.push({ at, status, ...(id !== undefined ? { id } : {}) });
          res.writeHead(status, headers);
          res.end();
        };
        const b = route.behaviour;
        if (b.kind === 'ok') return answer(204);
        if (b.kind === 'slow') {
          // Logged on arrival: the sender has usually given up (status 0) before the answer.
          const entry: LoggedRequest = { at, status: 0, ...(id !== undefined ? { id } : {}) };
          route.log.push(entry);
          const timer = setTimeout(() => {
            this.timers.delete(timer);
            if (res.destroyed) return;
            entry.status = 204;
            res.writeHead(204);
            res.end();
          }, b.delayMs);
          this.timers.add(timer);
          return;
        }
        while (route.head < route.window.length && route.window[route.head]! <= at - 1000) route.head++;
        if (route.head > 4096) {
          route.window = route.window.slice(route.head);
          route.head = 0;
        }
        if (route.window.length - route.head < b.capacity) {
          route.window.push(at);
          return answer(204);
        }
        answer(429, b.retryAfter !== undefined ? { 'retry-after': String(b.retryAfter) } : {});
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
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }
}
