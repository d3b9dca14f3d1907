import { EventEmitter } from 'node:events';
import http from 'node:http';
import { AddressInfo } from 'node:net';
import { installGracefulStop } from '../../functions/index';

/**
 * A deployed function on SIGTERM (Cloud Run allows 10 s): the framework's own handler would
 * exit at once; Herald's refuses new requests, lets the one under way finish, then exits.
 */
test('SIGTERM: the request under way finishes, a new one gets 503, then the process exits', async () => {
  let endedAt = 0;
  const server = http.createServer((_req, res) => {
    setTimeout(() => {
      endedAt = Date.now();
      res.end('done');
    }, 400);
  });
  const signals = new EventEmitter();
  // What the functions framework registers once it listens: an immediate exit.
  const exits: { code: number; at: number }[] = [];
  server.once('listening', () => signals.on('SIGTERM', () => exits.push({ code: 99, at: Date.now() })));
  installGracefulStop(server, { signals: signals as unknown as Pick<NodeJS.Process, 'on' | 'removeAllListeners'>, exit: (code) => exits.push({ code, at: Date.now() }), drainMs: 5_000 });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  await new Promise((r) => setImmediate(r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;

  const inFlight = fetch(url).then(async (r) => ({ status: r.status, body: await r.text() }));
  await new Promise((r) => setTimeout(r, 100));
  signals.emit('SIGTERM');
  const refused = await fetch(url).then((r) => r.status).catch(() => 'closed');
  const done = await inFlight;
  expect(endedAt).toBeGreaterThan(0);
  await new Promise((r) => setTimeout(r, 50));

  expect(done).toMatchObject({ status: 200, body: 'done' });
  expect([503, 'closed']).toContain(refused);
  expect(exits.map((e) => e.code)).toEqual([0]);
  expect(exits[0]!.at).toBeGreaterThanOrEqual(endedAt);
  server.closeAllConnections();
});
