import http from 'node:http';
import { AddressInfo } from 'node:net';
import { parseRehearsalArgs } from '../../apps/rehearsal/args';
import { FunctionProcess } from '../../apps/rehearsal/processes';
import { ProxyState, RoundRobinProxy } from '../../apps/rehearsal/proxy';
import { periodMsOf, SchedulerStandIn } from '../../apps/rehearsal/scheduler';
import { digestOf } from '../../shared/app/access/push-auth';
import { FunctionName, heraldTopology } from '../../shared/topology';

describe('npm run rehearse arguments', () => {
  test('defaults, flags and the wrong ones named', () => {
    expect(parseRehearsalArgs([])).toEqual({ check: false, build: true, processes: 2 });
    expect(parseRehearsalArgs(['--check', '--no-build', '--processes', '3'])).toEqual({ check: true, build: false, processes: 3 });
    expect(parseRehearsalArgs(['--processes=4']).processes).toBe(4);
    expect(() => parseRehearsalArgs(['--instances', '2'])).toThrow(/unknown argument '--instances'/);
    expect(() => parseRehearsalArgs(['--processes', '0'])).toThrow(/1 to 8, not '0'/);
    expect(() => parseRehearsalArgs(['--processes'])).toThrow(/none was given/);
  });
});

describe('the scheduler stand-in', () => {
  test("runs the topology's cron, a minute divided by the time scale", () => {
    expect(periodMsOf('* * * * *', 1)).toBe(60_000);
    expect(periodMsOf('* * * * *', 60)).toBe(1_000);
    expect(periodMsOf('*/5 * * * *', 1)).toBe(300_000);
    expect(() => periodMsOf('0 3 * * *', 1)).toThrow(/runs '\* \* \* \* \*'/);
    for (const schedule of heraldTopology().schedules) expect(() => periodMsOf(schedule.cron, 1)).not.toThrow();
  });

  test("the pump's runSeconds scaled with the minute, as the job's query carries it", () => {
    const [pump, check] = heraldTopology().schedules;
    expect(SchedulerStandIn.runSecondsOf(pump!, 1)).toBe(55);
    expect(SchedulerStandIn.runSecondsOf(pump!, 60)).toBe(1);
    expect(SchedulerStandIn.runSecondsOf(check!, 1)).toBeUndefined();
  });
});

describe('the round-robin proxy', () => {
  const backends: http.Server[] = [];
  const seen: { backend: number; url: string; body: string }[] = [];
  let proxy: RoundRobinProxy;
  let base: string;
  const state: ProxyState = { ready: true, health: { projectId: 'p' }, adminDigest: digestOf('admin-token-0123456789'), processes: [], stopping: false };

  beforeAll(async () => {
    const procs: FunctionProcess[] = [];
    for (let i = 0; i < 2; i++) {
      const server = http.createServer((req, res) => {
        let body = '';
        req.on('data', (c: Buffer) => (body += c.toString()));
        req.on('end', () => {
          seen.push({ backend: i, url: req.url ?? '', body });
          res.writeHead(200, { 'content-type': 'text/plain' });
          res.end(`backend ${i}`);
        });
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
      backends.push(server);
      procs.push({ fn: 'deliver', index: i, port: (server.address() as AddressInfo).port, live: true, restarts: 0, pid: 1000 + i });
    }
    // A process whose port nobody listens on: its connection is refused, and the request goes to another.
    procs.push({ fn: 'deliver', index: 2, port: 1, live: true, restarts: 0 });
    state.processes = procs;
    proxy = new RoundRobinProxy(state);
    base = await proxy.listen(0);
  });

  afterAll(async () => {
    await proxy.close();
    await Promise.all(backends.map((s) => new Promise((r) => s.close(r))));
  });

  test("takes the function's name off the path and sends each request to the next process", async () => {
    seen.length = 0;
    for (let i = 0; i < 6; i++) {
      const res = await fetch(`${base}/deliver/x?token=t&n=${i}`, { method: 'POST', body: `b${i}` });
      expect(res.status).toBe(200);
    }
    expect(seen.map((s) => s.url)).toEqual([0, 1, 2, 3, 4, 5].map((i) => `/x?token=t&n=${i}`));
    expect(seen.map((s) => s.body)).toEqual(['b0', 'b1', 'b2', 'b3', 'b4', 'b5']);
    expect(new Set(seen.map((s) => s.backend))).toEqual(new Set([0, 1]));
  });

  test('a function with no live process is 503 with Retry-After; an unknown one 404', async () => {
    const none = await fetch(`${base}/ingest`, { method: 'POST' });
    expect(none.status).toBe(503);
    expect(none.headers.get('retry-after')).toBe('1');
    expect((await fetch(`${base}/nope`)).status).toBe(404);
  });

  test('/healthz, /console and /rehearsal/processes answer as local mode does', async () => {
    expect(await (await fetch(`${base}/healthz`)).json()).toEqual({ status: 'ok' });
    const auth = { authorization: 'Bearer admin-token-0123456789' };
    expect(await (await fetch(`${base}/healthz`, { headers: auth })).json()).toEqual({ status: 'ok', projectId: 'p' });
    const redirect = await fetch(`${base}/console`, { redirect: 'manual' });
    expect([redirect.status, redirect.headers.get('location')]).toEqual([308, '/admin/console/']);
    expect((await fetch(`${base}/rehearsal/processes`)).status).toBe(401);
    const listed = (await (await fetch(`${base}/rehearsal/processes`, { headers: auth })).json()) as { processes: { function: string; pid?: number }[] };
    expect(listed.processes.map((p) => p.pid)).toEqual([1000, 1001, undefined]);
  });
});

const TOKEN = 'admin-token-0123456789';
const servers: http.Server[] = [];
const proxies: RoundRobinProxy[] = [];

async function backend(handle: http.RequestListener): Promise<number> {
  const server = http.createServer(handle);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  servers.push(server);
  return (server.address() as AddressInfo).port;
}

function answer(name: string): http.RequestListener {
  return (req, res) => {
    req.resume();
    req.on('end', () => res.end(name));
  };
}

async function proxyFor(state: Partial<ProxyState> & { processes: FunctionProcess[] }): Promise<string> {
  const proxy = new RoundRobinProxy({ ready: true, health: {}, adminDigest: digestOf(TOKEN), stopping: false, ...state });
  proxies.push(proxy);
  return proxy.listen(0);
}

const proc = (port: number, index: number, extra: Partial<FunctionProcess> = {}): FunctionProcess => ({ fn: 'ingest', index, port, live: true, restarts: 0, ...extra });

afterAll(async () => {
  await Promise.all(proxies.map((p) => p.close()));
  for (const s of servers) s.closeAllConnections();
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
});

describe('the rehearsal proxy during a rollout', () => {
  test('a draining process gets no new request', async () => {
    const base = await proxyFor({ processes: [proc(await backend(answer('old')), 0, { draining: true }), proc(await backend(answer('new')), 1)] });
    const bodies: string[] = [];
    for (let i = 0; i < 4; i++) bodies.push(await (await fetch(`${base}/ingest/x`, { method: 'POST', body: 'b' })).text());
    expect(bodies).toEqual(['new', 'new', 'new', 'new']);
  });

  test('POST /rehearsal/processes/<function>/<index>/restart needs the admin token and names a process', async () => {
    const restarted: [FunctionName, number][] = [];
    const processes = [proc(await backend(answer('a')), 0, { pid: 7 })];
    const base = await proxyFor({
      processes,
      restart: async (fn, index) => {
        if (index > 0) throw Object.assign(new Error(`no process ${fn}#${index}`), { reason: 'unknown' });
        restarted.push([fn, index]);
        processes[0] = { ...processes[0]!, pid: 8 };
      },
    });
    const auth = { authorization: `Bearer ${TOKEN}` };
    expect((await fetch(`${base}/rehearsal/processes/ingest/0/restart`, { method: 'POST' })).status).toBe(401);
    expect((await fetch(`${base}/rehearsal/processes/ingest/0/restart`, { headers: auth })).status).toBe(405);
    expect((await fetch(`${base}/rehearsal/processes/nope/0/restart`, { method: 'POST', headers: auth })).status).toBe(404);
    expect((await fetch(`${base}/rehearsal/processes/ingest/3/restart`, { method: 'POST', headers: auth })).status).toBe(404);
    const done = await fetch(`${base}/rehearsal/processes/ingest/0/restart`, { method: 'POST', headers: auth });
    expect(done.status).toBe(200);
    expect(await done.json()).toMatchObject({ function: 'ingest', index: 0, pid: 8 });
    expect(restarted).toEqual([['ingest', 0]]);
    const listed = (await (await fetch(`${base}/rehearsal/processes`, { headers: auth })).json()) as { processes: { draining: boolean }[] };
    expect(listed.processes.map((p) => p.draining)).toEqual([false]);
  });

  test('a reset before any answer on a reused keep-alive socket goes to another process', async () => {
    // Answers the first request on each connection, then drops the connection at the next, as a process closing idle sockets.
    const closing = await backend((req, res) => {
      const socket = req.socket as typeof req.socket & { served?: boolean };
      if (socket.served) return void socket.destroy();
      socket.served = true;
      answer('closing')(req, res);
    });
    const notes: string[] = [];
    const base = await proxyFor({ processes: [proc(closing, 0), proc(await backend(answer('other')), 1)], note: (l) => notes.push(l) });
    const bodies: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${base}/ingest/x`, { method: 'POST', body: `b${i}` });
      expect(res.status).toBe(200);
      bodies.push(await res.text());
    }
    // The third went to `closing` on the socket the first had used, was dropped, and was answered by `other`.
    expect(bodies).toEqual(['closing', 'other', 'other']);
    expect(notes).toEqual([]);
  });

  test('a process that dies with the request is 503 with Retry-After, and noted', async () => {
    const dying = await backend((req) => {
      req.resume();
      req.on('end', () => req.socket.destroy());
    });
    const notes: string[] = [];
    const base = await proxyFor({ processes: [proc(dying, 0)], note: (l) => notes.push(l) });
    const res = await fetch(`${base}/ingest/x`, { method: 'POST', body: 'b' });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(notes).toEqual([expect.stringMatching(/^ingest#0 ended under POST \/ingest\/x: 503/)]);
  });
});
