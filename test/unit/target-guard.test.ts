import { checkWebhookTarget } from '../../shared/app/destinations/target-guard';
import { HostResolver } from '../../shared/ports/http';

const answers: Record<string, string[] | { code: string }> = {
  'hooks.example.com': ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
  'internal.example.com': ['10.20.30.40'],
  'mixed.example.com': ['93.184.215.14', '192.168.1.10'],
  'meta.example.com': ['169.254.169.254'],
  'cgnat.example.com': ['100.80.0.1'],
  'ula.example.com': ['fd12::1'],
  'mapped.example.com': ['::ffff:127.0.0.1'],
  'loop.example.com': ['127.0.0.1'],
  'flaky.example.com': { code: 'EAI_AGAIN' },
  'empty.example.com': [],
};
const resolver: HostResolver = {
  async lookup(host) {
    const a = answers[host];
    if (a === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    if (!Array.isArray(a)) throw Object.assign(new Error('temporary failure'), a);
    return a.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  },
};

const STRICT = { allowLoopback: false };

describe('registration: the URL, then every address its host resolves to', () => {
  test('a public name passes', async () => {
    expect(await checkWebhookTarget('https://hooks.example.com/orders', STRICT, resolver)).toBeUndefined();
  });

  test.each<[string, RegExp]>([
    ['https://internal.example.com/x', /^url host internal\.example\.com resolves to a private address: 10\.20\.30\.40 is in 10\.0\.0\.0\/8/],
    ['https://mixed.example.com/x', /resolves to a private address: 192\.168\.1\.10/],
    ['https://meta.example.com/x', /resolves to a metadata address: 169\.254\.169\.254/],
    ['https://cgnat.example.com/x', /resolves to a shared \(CGNAT\) address/],
    ['https://ula.example.com/x', /resolves to a unique-local IPv6 address: fd12::1/],
    ['https://mapped.example.com/x', /resolves to a loopback address: ::ffff:127\.0\.0\.1 is the IPv4-mapped form of 127\.0\.0\.1/],
    ['https://loop.example.com/x', /resolves to a loopback address/],
    ['https://10.0.0.1/x', /^url points at a private address/],
    ['http://hooks.example.com/x', /must use https/],
    ['https://nowhere.example.com/x', /url host nowhere\.example\.com does not resolve \(ENOTFOUND\)/],
    ['https://empty.example.com/x', /has no address/],
  ])('%s → 400: %s', async (url, message) => {
    const problem = await checkWebhookTarget(url, STRICT, resolver);
    expect(problem).toEqual({ kind: 'invalid', message: expect.stringMatching(message) as string });
  });

  test('DNS unreachable → 503, try again', async () => {
    expect(await checkWebhookTarget('https://flaky.example.com/x', STRICT, resolver)).toEqual({ kind: 'unavailable', message: expect.stringContaining('EAI_AGAIN') as string });
  });

  test('local mode with loopback allowed: a name resolving to loopback passes, nothing else private', async () => {
    const local = { allowLoopback: true };
    expect(await checkWebhookTarget('https://loop.example.com/x', local, resolver)).toBeUndefined();
    expect(await checkWebhookTarget('https://internal.example.com/x', local, resolver)).toMatchObject({ kind: 'invalid' });
  });

  test('local mode: a name resolving to loopback at one of its own services’ ports → 400 naming the service; at another port it passes', async () => {
    const local = { allowLoopback: true, localServices: [{ what: 'the Pub/Sub emulator', host: '127.0.0.1', port: 8085 }] };
    expect(await checkWebhookTarget('https://loop.example.com:8085/v1/projects/p/topics/t:publish', local, resolver)).toEqual({
      kind: 'invalid',
      message:
        'url host loop.example.com resolves to a port local mode keeps for itself: 127.0.0.1:8085 is on loopback, at the port of the Pub/Sub emulator (127.0.0.1:8085); ' +
        'a destination may not reach the emulators or Herald itself: run the receiver on another port',
    });
    expect(await checkWebhookTarget('https://mapped.example.com:8085/x', local, resolver)).toMatchObject({ kind: 'invalid', message: expect.stringContaining('[::ffff:127.0.0.1]:8085') as string });
    expect(await checkWebhookTarget('https://loop.example.com:9000/x', local, resolver)).toBeUndefined();
  });
});
