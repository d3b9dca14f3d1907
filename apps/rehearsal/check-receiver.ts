import http from 'node:http';
import { AddressInfo } from 'node:net';

export interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** How a path answers its n-th request (from 0); default 204. */
export type Answer = (n: number) => number;

/** A webhook receiver on loopback for the checks: records every request, answers each path as told. */
export class CheckReceiver {
  readonly received: Received[] = [];
  readonly answers = new Map<string, Answer>();
  private readonly server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      const path = req.url ?? '/';
      const n = this.received.filter((r) => r.path === path).length;
      this.received.push({ path, headers: req.headers, body });
      res.writeHead(this.answers.get(path)?.(n) ?? 204);
      res.end();
    });
  });
  url = '';

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', () => resolve()));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  on(path: string, eventId?: string): Received[] {
    return this.received.filter((r) => r.path === path && (eventId === undefined || r.headers['ce-id'] === eventId || r.body.includes(eventId)));
  }

  stop(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
