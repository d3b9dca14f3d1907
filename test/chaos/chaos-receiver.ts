import http from 'node:http';
import { AddressInfo } from 'node:net';
import { FLAKY_503_SHARE, ReceiverPlan, SLOW_REPLY_MS } from './scenario';
import { ReceiverCounts } from './ledger';
import { BATCH_CONTENT_TYPE } from '../../shared/domain/modes/batching';
import { eventKey } from '../../shared/domain/events/event';
import { webhookIdFor } from '../../shared/domain/delivery/signing';

/**
 * One destination's receiver on loopback, misbehaving as its plan says: healthy; flaky (503
 * to a share of requests); outage (closed — connections refused — through its window, then
 * open again on the same port); slow (answers after SLOW_REPLY_MS through its window). It
 * counts every request and every 2xx answer per webhook-id — for a batch, per event of it, under
 * the webhook-id that event would have alone.
 */
export class ChaosReceiver {
  readonly counts: Required<ReceiverCounts> = { requests: new Map(), accepted: new Map(), firstAccepted: [], answered: new Map(), answered2xx: new Map() };
  private server: http.Server | undefined;
  private port = 0;
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(
    readonly plan: ReceiverPlan,
    private readonly random: () => number,
    private readonly startedAt: () => number,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  async start(): Promise<void> {
    await this.open();
    const w = this.plan.window;
    if (this.plan.behaviour === 'outage' && w) {
      this.later(w.fromMs, () => void this.close());
      this.later(w.toMs, () => void this.open());
    }
  }

  async stop(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    await this.close();
  }

  private later(atMs: number, run: () => void): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      run();
    }, Math.max(0, atMs - (Date.now() - this.startedAt())));
    this.timers.add(timer);
  }

  private inWindow(): boolean {
    const w = this.plan.window;
    const t = Date.now() - this.startedAt();
    return w !== undefined && t >= w.fromMs && t < w.toMs;
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const ids = idsOf(req.headers, Buffer.concat(chunks));
      for (const id of ids) this.counts.requests.set(id, (this.counts.requests.get(id) ?? 0) + 1);
      const status = this.plan.behaviour === 'flaky' && this.random() < FLAKY_503_SHARE ? 503 : 204;
      if (status === 204) {
        for (const id of ids) {
          const n = this.counts.accepted.get(id) ?? 0;
          if (n === 0) this.counts.firstAccepted.push(id);
          this.counts.accepted.set(id, n + 1);
        }
      }
      const reply = () => {
        if (res.destroyed) return;
        // Counted once the answer is out: a client that gave up on a slow answer never got it.
        res.once('finish', () => {
          for (const id of ids) {
            bump(this.counts.answered, id);
            if (status === 204) bump(this.counts.answered2xx, id);
          }
        });
        res.writeHead(status).end();
      };
      if (this.plan.behaviour === 'slow' && this.inWindow()) this.later(Date.now() - this.startedAt() + SLOW_REPLY_MS, reply);
      else reply();
    });
  }

  private open(): Promise<void> {
    if (this.server) return Promise.resolve();
    const server = http.createServer((req, res) => this.handle(req, res));
    this.server = server;
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => {
        this.port = (server.address() as AddressInfo).port;
        resolve();
      });
    });
  }

  private close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return Promise.resolve();
    return new Promise((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }
}

function bump(counts: Map<string, number>, id: string): void {
  counts.set(id, (counts.get(id) ?? 0) + 1);
}

/** The webhook-ids a request carries: its own, or, for a batch, each event's as if sent alone. */
function idsOf(headers: http.IncomingHttpHeaders, body: Buffer): string[] {
  if (!String(headers['content-type'] ?? '').startsWith(BATCH_CONTENT_TYPE)) return [String(headers['webhook-id'] ?? '')];
  try {
    return (JSON.parse(body.toString('utf8')) as { id: string; source: string }[]).map((e) => webhookIdFor(eventKey({ source: e.source, id: e.id })));
  } catch {
    return [String(headers['webhook-id'] ?? '')];
  }
}
