import http from 'node:http';
import { AddressInfo } from 'node:net';
import { z } from 'zod';
import { bearerOf, matchesDigest } from '../../shared/app/access/push-auth';
import { FUNCTION_NAMES, FunctionName } from '../../shared/topology';
import { healthAnswer } from '../local/health';
import { FunctionProcess } from './processes';

/** What the proxy needs to know, filled in as the rehearsal starts. */
export interface ProxyState {
  ready: boolean;
  /** Shown on /healthz to a caller with the admin token. */
  health: Record<string, unknown>;
  adminDigest?: Buffer;
  processes: readonly FunctionProcess[];
  /** Once stopping: every function request gets 503, as a stopping instance answers. */
  stopping: boolean;
  /** Told of each request a process ended under (answered 503). */
  note?: (line: string) => void;
  /** Replaces one process as a rollout does (the supervisor's `restart`); resolves once the old one has exited. */
  restart?: (fn: FunctionName, index: number) => Promise<unknown>;
}

const RESTART_PATH = /^\/rehearsal\/processes\/([^/]+)\/([^/]+)\/restart$/;
const restartTarget = z.object({ fn: z.enum(FUNCTION_NAMES), index: z.coerce.number().int().nonnegative() });

/** A reused keep-alive socket the process was closing: the request reached no handler, so another process may take it. */
const SOCKET_RACES = new Set(['ECONNRESET', 'EPIPE']);

const BODY_LIMIT = 64 * 1024 * 1024;

function json(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

/**
 * The rehearsal's one URL, standing in for `https://REGION-PROJECT.cloudfunctions.net`:
 * `/<function>/rest` goes to the next live process of that function with the function's name
 * taken off the path, as Cloud Functions hands it over. `/healthz` and `/console` answer as in
 * local mode; `/rehearsal/processes` (admin token) lists the processes, for tests that kill one,
 * and `POST /rehearsal/processes/<function>/<index>/restart` replaces one as a rollout does.
 */
export class RoundRobinProxy {
  private readonly turn = new Map<FunctionName, number>();
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  readonly server: http.Server;

  constructor(private readonly state: ProxyState) {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    // As local mode: idle keep-alive connections are closed by their clients.
    this.server.keepAliveTimeout = 65_000;
  }

  async listen(port: number): Promise<string> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', (e: NodeJS.ErrnoException) => reject(e.code === 'EADDRINUSE' ? new Error(`port ${port} is in use: set PORT to a free port (PORT=0 picks one)`) : e));
      this.server.listen(port, '127.0.0.1', () => resolve());
    });
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  close(): Promise<void> {
    this.server.closeIdleConnections();
    this.agent.destroy();
    return new Promise((resolve) => {
      const timer = setTimeout(() => (this.server.closeAllConnections(), resolve()), 1000);
      this.server.close(() => (clearTimeout(timer), resolve()));
    });
  }

  private next(fn: FunctionName, tried: ReadonlySet<FunctionProcess>): FunctionProcess | undefined {
    // A draining process is not live: a rollout takes it out of routing before its SIGTERM.
    const live = this.state.processes.filter((p) => p.fn === fn && p.live && !p.draining && !tried.has(p));
    if (live.length === 0) return undefined;
    const n = this.turn.get(fn) ?? 0;
    this.turn.set(fn, n + 1);
    return live[n % live.length];
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://rehearsal');
    if (url.pathname === '/healthz') {
      const answer = healthAnswer(this.state.ready && !this.state.stopping, this.state.health, req.headers.authorization, this.state.adminDigest);
      return json(res, answer.status, answer.body);
    }
    if (url.pathname === '/console' || url.pathname.startsWith('/console/')) {
      res.writeHead(308, { location: `/admin${url.pathname === '/console' ? '/console/' : url.pathname}${url.search}` });
      return void res.end();
    }
    if (url.pathname === '/rehearsal/processes' || RESTART_PATH.test(url.pathname)) {
      if (!this.state.adminDigest || !matchesDigest(bearerOf(req.headers.authorization), this.state.adminDigest)) return json(res, 401, { error: 'the admin token is required' });
      if (url.pathname !== '/rehearsal/processes') return this.restart(req, res, url.pathname);
      return json(res, 200, { processes: this.state.processes.map(({ fn, index, port, pid, live, restarts, draining }) => ({ function: fn, index, port, pid, live, restarts, draining: draining ?? false })) });
    }
    const [, name, ...rest] = url.pathname.split('/');
    const fn = FUNCTION_NAMES.find((f) => f === name);
    if (fn === undefined) {
      return json(res, this.state.ready ? 404 : 503, { error: this.state.ready ? `no function at /${name ?? ''}; functions: ${FUNCTION_NAMES.map((f) => `/${f}`).join(', ')}` : 'starting' });
    }
    if (this.state.stopping) return json(res, 503, { error: 'stopping' }, { 'retry-after': '1' });
    // Held whole, so a request that found a process gone may be sent to another (a refused connection reached no one).
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > BODY_LIMIT) return json(res, 413, { error: `request body over ${BODY_LIMIT} bytes` });
      chunks.push(chunk);
    }
    const body = Buffer.concat(chunks);
    const path = `/${rest.join('/')}${url.search}`;
    const tried = new Set<FunctionProcess>();
    for (let attempt = 0; attempt < 3; attempt++) {
      const target = this.next(fn, tried);
      if (!target) break;
      tried.add(target);
      const outcome = await this.forward(req, res, target, path, body);
      if (outcome !== 'unreached') return;
    }
    json(res, 503, { error: `no ${fn} process answers` }, { 'retry-after': '1' });
  }

  private async restart(req: http.IncomingMessage, res: http.ServerResponse, pathname: string): Promise<void> {
    if (req.method !== 'POST') return json(res, 405, { error: 'POST restarts a process' }, { allow: 'POST' });
    const [, fn, index] = RESTART_PATH.exec(pathname) ?? [];
    const target = restartTarget.safeParse({ fn, index });
    if (!target.success) return json(res, 404, { error: `no process ${fn ?? ''}#${index ?? ''}` });
    if (!this.state.restart) return json(res, 503, { error: 'processes cannot be restarted yet' }, { 'retry-after': '1' });
    try {
      await this.state.restart(target.data.fn, target.data.index);
    } catch (e) {
      const reason = (e as { reason?: unknown }).reason;
      return json(res, reason === 'unknown' ? 404 : 409, { error: (e as Error).message });
    }
    const now = this.state.processes.find((p) => p.fn === target.data.fn && p.index === target.data.index);
    json(res, 200, { function: target.data.fn, index: target.data.index, pid: now?.pid, port: now?.port, live: now?.live ?? false });
  }

  private forward(req: http.IncomingMessage, res: http.ServerResponse, target: FunctionProcess, path: string, body: Buffer): Promise<'done' | 'unreached'> {
    return new Promise((resolve) => {
      const headers = { ...req.headers, host: `127.0.0.1:${target.port}`, 'content-length': String(body.length) };
      delete headers['transfer-encoding'];
      const upstream = http.request({ host: '127.0.0.1', port: target.port, method: req.method, path, headers, agent: this.agent }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
        answer.once('end', () => resolve('done'));
        answer.once('error', () => (res.destroy(), resolve('done')));
      });
      upstream.once('error', (e: NodeJS.ErrnoException) => {
        // Cloud Run's front end does not surface connection races: a refused connection, or a reset
        // before any answer on a reused keep-alive socket the process was closing, reached no one.
        if (!res.headersSent && (e.code === 'ECONNREFUSED' || (upstream.reusedSocket && SOCKET_RACES.has(e.code ?? '')))) return resolve('unreached');
        // The process went away with the request: Cloud Run answers 503 ("the connection to the
        // instance had an error"), with Retry-After; Pub/Sub takes any non-2xx as a nack and pushes again.
        this.state.note?.(`${target.fn}#${target.index} ended under ${req.method ?? ''} /${target.fn}${path.split('?')[0]!}: ${res.headersSent ? 'cut off' : '503'} (${e.code ?? e.message})`);
        if (!res.headersSent) json(res, 503, { error: `the ${target.fn} process ended while handling the request (${e.code ?? e.message})` }, { 'retry-after': '1' });
        else res.destroy();
        resolve('done');
      });
      res.once('close', () => {
        if (!res.writableFinished) upstream.destroy();
      });
      upstream.end(body);
    });
  }
}
