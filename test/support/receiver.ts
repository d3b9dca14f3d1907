import http from 'node:http';
import { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  at: number;
}

export type Responder = (req: ReceivedRequest, index: number) => { status: number; headers?: Record<string, string>; body?: string; delayMs?: number };

/** A real HTTP receiver on loopback that records every request and answers as told. */
export class Receiver {
  readonly requests: ReceivedRequest[] = [];
  private waiters: { count: number; path?: string; resolve: () => void }[] = [];
  private server?: http.Server;
  /** Replies held back (delayMs): cancelled on stop, so a test never waits on them. */
  private readonly delayed = new Set<NodeJS.Timeout>();
  url = '';

  constructor(private respond: Responder = () => ({ status: 204 })) {}

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const received: ReceivedRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks), at: Date.now() };
        const index = this.requests.push(received) - 1;
        const answer = this.respond(received, index);
        const reply = () => {
          res.writeHead(answer.status, answer.headers);
          res.end(answer.body ?? '');
          this.notify();
        };
        if (answer.delayMs) {
          const timer = setTimeout(() => {
            this.delayed.delete(timer);
            reply();
          }, answer.delayMs);
          this.delayed.add(timer);
        } else reply();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  setResponder(respond: Responder): void {
    this.respond = respond;
  }

  on(path: string): ReceivedRequest[] {
    return this.requests.filter((r) => r.path === path);
  }

  /** Resolves once `count` requests (to `path`, if given) have been answered. */
  waitFor(count: number, path?: string, timeoutMs = 30_000): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out waiting for ${count} request(s)${path ? ` to ${path}` : ''}; got ${path ? this.on(path).length : this.requests.length}`)), timeoutMs);
      this.waiters.push({ count, ...(path !== undefined ? { path } : {}), resolve: () => (clearTimeout(timer), resolve()) });
      this.notify();
    });
  }

  private notify(): void {
    this.waiters = this.waiters.filter((w) => {
      const n = w.path ? this.on(w.path).length : this.requests.length;
      if (n >= w.count) w.resolve();
      return n < w.count;
    });
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    for (const timer of this.delayed) clearTimeout(timer);
    this.delayed.clear();
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }
}
