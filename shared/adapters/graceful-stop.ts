import http from 'node:http';
import { Logger } from '../ports';

/**
 * Stopping without losing work, for local mode and for a deployed function (Cloud Run sends
 * SIGTERM and allows 10 s): new requests get 503 (Pub/Sub pushes them again later), those
 * under way get a bounded time to finish and record what they did, then the caller closes
 * its clients. A request still running when time is up is cut off: its push comes again,
 * and a delivery it had attempted may be attempted twice — never lost.
 */
export class GracefulStop {
  private readonly active = new Set<http.ServerResponse>();
  private drained: (() => void) | undefined;
  stopping = false;

  /** Wraps a request listener: refused with 503 once stopping, tracked until it ends otherwise. */
  guard(listener: http.RequestListener): http.RequestListener {
    return (req, res) => {
      if (this.stopping) {
        res.writeHead(503, { 'content-type': 'application/json', connection: 'close', 'retry-after': '1' });
        res.end(JSON.stringify({ error: 'Herald is stopping; send this again' }));
        return;
      }
      this.active.add(res);
      res.on('close', () => {
        this.active.delete(res);
        if (this.active.size === 0) this.drained?.();
      });
      listener(req, res);
    };
  }

  /** Refuses new requests and waits up to `drainMs` for those under way; resolves how many were still running. */
  async drain(drainMs: number, log: Logger): Promise<number> {
    this.stopping = true;
    if (this.active.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve) => {
        this.drained = resolve;
        timer = setTimeout(resolve, drainMs);
      });
      clearTimeout(timer);
    }
    const left = this.active.size;
    if (left > 0) log.warn(`stopping with ${left} requests still in progress after ${drainMs} ms; their pushes will come again`, { inProgress: left });
    return left;
  }
}
