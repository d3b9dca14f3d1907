import { readFileSync } from 'node:fs';
import https from 'node:https';
import { AddressInfo } from 'node:net';
import { TLSSocket } from 'node:tls';
import path from 'node:path';
import { UndiciHttpSender } from '../../shared/adapters/http-sender';
import { AttemptResult } from '../../shared/domain/retry/delivery';
import { LocalService } from '../../shared/domain/access/local-services';
import { HostResolver } from '../../shared/ports/http';

/**
 * The SSRF guard at attempt time, on real sockets: a TLS receiver on 127.0.0.1 with a
 * certificate for hook.test (test/fixtures/tls, a test-only key), and a resolver the test
 * controls, so a name can be pointed anywhere between two attempts.
 */

const TLS_DIR = path.join(__dirname, '..', 'fixtures', 'tls');
const ca = readFileSync(path.join(TLS_DIR, 'hook.test.crt'), 'utf8');

type Seen = { host?: string; servername?: string | false | null; remote?: string };

let server: https.Server;
let port: number;
const seen: Seen[] = [];

/** hook.test and friends answer from this table, which each test sets. */
let dns: Record<string, string[]> = {};
const lookups: string[] = [];
const resolver: HostResolver = {
  async lookup(host) {
    lookups.push(host);
    const addresses = dns[host];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  },
};

const sender = (allowLoopback: boolean, localServices: LocalService[] = []) => new UndiciHttpSender({ rules: { allowLoopback, localServices }, resolver, tls: { ca } });
const post = (s: UndiciHttpSender, host: string, urlPath = '/hook'): Promise<AttemptResult> =>
  s.send({ url: `https://${host}:${port}${urlPath}`, headers: { 'content-type': 'application/json' }, body: Buffer.from('{}'), timeoutMs: 3000 });

beforeAll(async () => {
  server = https.createServer({ key: readFileSync(path.join(TLS_DIR, 'hook.test.key')), cert: readFileSync(path.join(TLS_DIR, 'hook.test.crt')) }, (req, res) => {
    seen.push({ host: req.headers.host, servername: (req.socket as TLSSocket).servername, remote: req.socket.remoteAddress });
    res.writeHead(204).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

beforeEach(() => {
  seen.length = 0;
  lookups.length = 0;
  dns = {};
});

describe('a name that resolves to an allowed address (loopback, allowed locally)', () => {
  test('connects to the checked address, with the name in TLS SNI, the certificate check and Host', async () => {
    dns = { 'hook.test': ['127.0.0.1'] };
    const s = sender(true);
    expect(await post(s, 'hook.test')).toMatchObject({ kind: 'response', status: 204 });
    expect(seen).toEqual([{ host: `hook.test:${port}`, servername: 'hook.test', remote: '127.0.0.1' }]);
    await s.close();
  });
});

describe('refused at connect time, after DNS: nothing is sent (loopback allowed, nothing else private)', () => {
  test.each<[string, string[], string]>([
    ['private', ['10.0.0.7'], 'private'],
    ['CGNAT', ['100.64.3.4'], 'shared'],
    ['link-local', ['169.254.10.10'], 'link-local'],
    ['the metadata address', ['169.254.169.254'], 'metadata'],
    ['unique-local IPv6', ['fd00::5'], 'unique-local'],
    ['link-local IPv6', ['fe80::1'], 'link-local'],
    ['an IPv4-mapped private address', ['::ffff:10.0.0.1'], 'private'],
    ['0.0.0.0', ['0.0.0.0'], 'unspecified'],
    ['multicast', ['239.1.1.1'], 'multicast'],
    ['a public and a private address (rebinding-shaped)', ['93.184.215.14', '10.0.0.7'], 'private'],
  ])('a name resolving to %s', async (_, addresses, addressClass) => {
    dns = { 'evil.hook.test': addresses };
    const s = sender(true);
    const result = await post(s, 'evil.hook.test');
    expect(result).toMatchObject({ kind: 'blocked', addressClass, error: expect.stringContaining('url host evil.hook.test resolves to') as string });
    expect(seen).toEqual([]);
    await s.close();
  });

  test('loopback without HERALD_ALLOW_LOOPBACK', async () => {
    dns = { 'hook.test': ['127.0.0.1'] };
    const s = sender(false);
    expect(await post(s, 'hook.test')).toMatchObject({ kind: 'blocked', addressClass: 'loopback' });
    expect(seen).toEqual([]);
    await s.close();
  });

  test('local mode: a name resolving to loopback at one of its own services’ ports is refused after DNS; the same name at another port connects', async () => {
    dns = { 'hook.test': ['127.0.0.1'], 'other.hook.test': ['127.0.0.1'] };
    const guarded = sender(true, [{ what: 'the Pub/Sub emulator', host: '127.0.0.1', port }]);
    const result = await post(guarded, 'hook.test');
    expect(result).toMatchObject({ kind: 'blocked', addressClass: 'local-service', address: `127.0.0.1:${port}`, error: expect.stringContaining('url host hook.test resolves to a port local mode keeps for itself') as string });
    expect(seen).toEqual([]);
    expect(lookups).toEqual(['hook.test']);
    await guarded.close();
    const elsewhere = sender(true, [{ what: 'the Pub/Sub emulator', host: '127.0.0.1', port: port === 65535 ? 1 : port + 1 }]);
    expect(await post(elsewhere, 'other.hook.test')).toMatchObject({ kind: 'response', status: 204 });
    expect(seen).toHaveLength(1);
    await elsewhere.close();
  });

  test('DNS rebinding: a name that passed once and now points inside is refused on the next connection', async () => {
    const s = sender(true);
    dns = { 'rebind.hook.test': ['127.0.0.1'] };
    expect(await post(s, 'rebind.hook.test')).toMatchObject({ kind: 'response', status: 204 });
    await s.close(); // no pooled connection: the next attempt connects (and resolves) again
    const again = sender(true);
    dns = { 'rebind.hook.test': ['169.254.169.254'] };
    expect(await post(again, 'rebind.hook.test')).toMatchObject({ kind: 'blocked', addressClass: 'metadata' });
    expect(seen).toHaveLength(1);
    expect(lookups).toEqual(['rebind.hook.test', 'rebind.hook.test']);
    await again.close();
  });

  test('IP literals and metadata names are refused before any DNS lookup', async () => {
    const s = sender(false);
    for (const [url, addressClass] of [
      ['https://10.1.2.3/x', 'private'],
      ['https://[::1]:9/x', 'loopback'],
      ['https://metadata.google.internal/computeMetadata/v1/', 'metadata'],
      ['https://169.254.169.254/latest/meta-data/', 'metadata'],
    ] as const) {
      expect(await s.send({ url, headers: {}, body: Buffer.alloc(0), timeoutMs: 1000 })).toMatchObject({ kind: 'blocked', addressClass });
    }
    expect(lookups).toEqual([]);
    await s.close();
  });
});

test('a name that does not resolve is a network error (retried by the policies), not a refusal', async () => {
  const s = sender(true);
  expect(await post(s, 'nowhere.hook.test')).toMatchObject({ kind: 'network', error: expect.stringContaining('ENOTFOUND') as string });
  await s.close();
});
