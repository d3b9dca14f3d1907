import { createServer, IncomingMessage, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { callAdmin, DestinationInputs, destinationProvider } from '../../../infra/components/declared-destination';

/** A stand-in admin function answering from a script, recording each request. */
interface Seen {
  method: string;
  url: string;
  auth: string | undefined;
  body: string;
}
let server: Server;
let base: string;
let script: { status: number; body?: unknown }[] = [];
const seen: Seen[] = [];

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, auth: req.headers.authorization, body });
      const next = script.shift() ?? { status: 500 };
      res.writeHead(next.status, { 'content-type': 'application/json' });
      res.end(next.body === undefined ? '' : JSON.stringify(next.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/admin`;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));
beforeEach(() => {
  script = [];
  seen.length = 0;
});

const inputs = (): DestinationInputs => ({ adminUrl: base, adminToken: 'admin-token-0123456789', destinationId: 'orders', spec: { url: 'https://hooks.example.com/orders' } });

test('create registers the destination with PUT /admin/destinations/{id} and keeps the secret Herald answers', async () => {
  script = [{ status: 201, body: { id: 'orders', secret: 'whsec_abc' } }];
  const created = await destinationProvider.create(inputs());
  expect(created).toEqual({ id: 'orders', outs: { ...inputs(), secret: 'whsec_abc' } });
  expect(seen).toEqual([{ method: 'PUT', url: '/admin/destinations/orders', auth: 'Bearer admin-token-0123456789', body: JSON.stringify(inputs().spec) }]);
});

test('an update without a new secret keeps the one known', async () => {
  script = [{ status: 200, body: { id: 'orders' } }];
  const updated = await destinationProvider.update!('orders', { ...inputs(), secret: 'whsec_old' }, { ...inputs(), spec: { url: 'https://hooks.example.com/v2' } });
  expect(updated.outs?.secret).toBe('whsec_old');
});

test('a changed spec is an update; another id or admin URL a replacement', async () => {
  const olds = { ...inputs(), secret: 'whsec_x' };
  expect(await destinationProvider.diff!('orders', olds, inputs())).toMatchObject({ changes: false, replaces: [] });
  expect(await destinationProvider.diff!('orders', olds, { ...inputs(), spec: { url: 'https://other.example.com' } })).toMatchObject({ changes: true, replaces: [] });
  expect(await destinationProvider.diff!('orders', olds, { ...inputs(), destinationId: 'billing' })).toMatchObject({ changes: true, replaces: ['destinationId'] });
});

test('delete removes it; one already gone is fine', async () => {
  script = [{ status: 404, body: { error: 'no destination' } }];
  await destinationProvider.delete!('orders', { ...inputs(), secret: '' });
  expect(seen.map((s) => `${s.method} ${s.url}`)).toEqual(['DELETE /admin/destinations/orders']);
});

test('a fresh deployment that still answers 403 or 503 is retried; a 400 is not', async () => {
  script = [{ status: 403 }, { status: 503 }, { status: 201, body: { secret: 'whsec_z' } }];
  await expect(callAdmin(inputs(), 'PUT', 5, 1)).resolves.toEqual({ secret: 'whsec_z' });
  expect(seen).toHaveLength(3);
  seen.length = 0;
  script = [{ status: 400, body: { error: 'invalid destination spec' } }];
  await expect(callAdmin(inputs(), 'PUT', 5, 1)).rejects.toThrow(/HTTP 400: .*invalid destination spec/);
  expect(seen).toHaveLength(1);
});
