import { BlockList, isIPv4 } from 'node:net';
import { AddressClass, checkTargetUrl, classifyAddress, ipToBigInt, refusedAddress } from '../../../shared/domain/access/address-policy';

const STRICT = { allowLoopback: false };
const LOCAL = { allowLoopback: true };

describe('classifyAddress: every blocked class', () => {
  test.each<[string, AddressClass, RegExp]>([
    ['127.0.0.1', 'loopback', /in 127\.0\.0\.0\/8/],
    ['127.255.255.254', 'loopback', /127\.0\.0\.0\/8/],
    ['::1', 'loopback', /::1\/128/],
    ['10.0.0.1', 'private', /10\.0\.0\.0\/8 \(RFC 1918\)/],
    ['172.16.0.1', 'private', /172\.16\.0\.0\/12/],
    ['172.31.255.255', 'private', /172\.16\.0\.0\/12/],
    ['192.168.1.1', 'private', /192\.168\.0\.0\/16/],
    ['100.64.0.1', 'shared', /carrier-grade NAT/],
    ['100.127.255.255', 'shared', /100\.64\.0\.0\/10/],
    ['169.254.169.254', 'metadata', /metadata service/],
    ['169.254.0.1', 'link-local', /169\.254\.0\.0\/16/],
    ['fe80::1', 'link-local', /fe80::\/10/],
    ['fe80::1%eth0', 'link-local', /fe80::\/10/],
    ['fd00::1', 'unique-local', /fc00::\/7/],
    ['fc00::1', 'unique-local', /fc00::\/7/],
    ['fd20:ce::254', 'metadata', /GCE metadata/],
    ['fd00:ec2::254', 'metadata', /EC2 metadata/],
    ['0.0.0.0', 'unspecified', /0\.0\.0\.0\/8/],
    ['0.1.2.3', 'unspecified', /0\.0\.0\.0\/8/],
    ['::', 'unspecified', /::\/128/],
    ['224.0.0.1', 'multicast', /224\.0\.0\.0\/4/],
    ['239.255.255.250', 'multicast', /224\.0\.0\.0\/4/],
    ['ff02::1', 'multicast', /ff00::\/8/],
    ['255.255.255.255', 'broadcast', /limited broadcast/],
    ['240.0.0.1', 'reserved', /240\.0\.0\.0\/4/],
    ['192.0.0.8', 'reserved', /192\.0\.0\.0\/24/],
    ['198.18.0.1', 'benchmarking', /198\.18\.0\.0\/15/],
    ['198.19.255.255', 'benchmarking', /198\.18\.0\.0\/15/],
    ['192.0.2.1', 'documentation', /TEST-NET-1/],
    ['198.51.100.7', 'documentation', /TEST-NET-2/],
    ['203.0.113.9', 'documentation', /TEST-NET-3/],
    ['2001:db8::1', 'documentation', /2001:db8::\/32/],
    ['2001::1', 'reserved', /Teredo/],
    ['fec0::1', 'private', /site-local/],
    ['64:ff9b:1::1', 'private', /local-use NAT64/],
  ])('%s is %s', (ip, addressClass, detail) => {
    const blocked = classifyAddress(ip);
    expect(blocked).toMatchObject({ address: ip, addressClass });
    expect(blocked!.detail).toMatch(detail);
  });

  test.each<[string, AddressClass, string]>([
    ['::ffff:127.0.0.1', 'loopback', 'IPv4-mapped form of 127.0.0.1'],
    ['::ffff:7f00:1', 'loopback', 'IPv4-mapped form of 127.0.0.1'],
    ['0:0:0:0:0:ffff:a00:1', 'private', 'IPv4-mapped form of 10.0.0.1'],
    ['::ffff:169.254.169.254', 'metadata', 'IPv4-mapped form of 169.254.169.254'],
    ['::ffff:100.64.1.1', 'shared', 'IPv4-mapped form of 100.64.1.1'],
    ['64:ff9b::a9fe:a9fe', 'metadata', 'NAT64 (RFC 6052) form of 169.254.169.254'],
    ['2002:c0a8:101::1', 'private', '6to4 (RFC 3056) form of 192.168.1.1'],
  ])('%s (an IPv6 form of an IPv4 address) is judged by the address it reaches: %s', (ip, addressClass, detail) => {
    expect(classifyAddress(ip)).toMatchObject({ addressClass, detail: expect.stringContaining(detail) as string });
  });

  test.each(['::127.0.0.1', '::8.8.8.8', '::a00:1'])('%s (IPv4-compatible, deprecated) is refused whatever it embeds', (ip) => {
    expect(classifyAddress(ip)).toMatchObject({ addressClass: 'reserved', detail: expect.stringContaining('IPv4-compatible') as string });
  });

  test('a loopback reached through 6to4 or NAT64 is not the local host: it stays refused in local mode', () => {
    expect(refusedAddress('2002:7f00:1::', LOCAL)).toBeDefined();
    expect(refusedAddress('64:ff9b::7f00:1', LOCAL)).toBeDefined();
    expect(refusedAddress('::ffff:127.0.0.1', LOCAL)).toBeUndefined();
  });

  test.each(['8.8.8.8', '1.1.1.1', '93.184.215.14', '100.128.0.1', '172.32.0.1', '198.20.0.1', '223.255.255.255', '2606:4700:4700::1111', '2a00:1450:4001::200e', '::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1'])(
    '%s is public',
    (ip) => expect(classifyAddress(ip)).toBeUndefined(),
  );

  test('not an IP address: no class', () => {
    expect(classifyAddress('example.com')).toBeUndefined();
    expect(classifyAddress('')).toBeUndefined();
  });
});

describe('the CIDR arithmetic agrees with node:net BlockList', () => {
  const ranges4 = ['0.0.0.0/8', '10.0.0.0/8', '100.64.0.0/10', '127.0.0.0/8', '169.254.0.0/16', '172.16.0.0/12', '192.0.0.0/24', '192.0.2.0/24', '192.88.99.0/24', '192.168.0.0/16', '198.18.0.0/15', '198.51.100.0/24', '203.0.113.0/24', '224.0.0.0/4', '240.0.0.0/4'];
  // Beside the named ranges, everything outside global unicast 2000::/3: ::/3, 4000::/2, 8000::/1.
  const ranges6 = ['fc00::/7', 'fe80::/10', 'fec0::/10', 'ff00::/8', '2001:db8::/32', '2001::/23', '100::/64', '100:0:0:1::/64', '3fff::/20', '5f00::/16', '64:ff9b:1::/48', '::/3', '4000::/2', '8000::/1'];
  // One list per family: a BlockList also matches an IPv4 address against IPv6 rules by its mapped form (inside ::/3).
  const list4 = new BlockList();
  const list6 = new BlockList();
  for (const r of ranges4) list4.addSubnet(r.split('/')[0]!, Number(r.split('/')[1]), 'ipv4');
  for (const r of ranges6) list6.addSubnet(r.split('/')[0]!, Number(r.split('/')[1]), 'ipv6');

  // A deterministic spread of addresses, many near range edges.
  let seed = 42;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
  const v4 = Array.from({ length: 3000 }, () => [next() % 256, next() % 256, next() % 256, next() % 256].join('.'));
  const edges = ranges4.flatMap((r) => {
    const [ip, prefix] = r.split('/') as [string, string];
    const base = Number(ipToBigInt(ip)!.bits);
    const size = 2 ** (32 - Number(prefix));
    return [base - 1, base, base + size - 1, base + size].filter((n) => n >= 0 && n < 2 ** 32).map((n) => [24, 16, 8, 0].map((s) => (n >>> s) & 255).join('.'));
  });
  const hex = () => (next() % 0x10000).toString(16);
  const v6 = Array.from({ length: 3000 }, (_, i) => {
    const firsts = ['fc00', 'fdff', 'fe7f', 'fe80', 'febf', 'fec0', 'feff', 'ff00', '2001', '2001', '0100', '3fff', '3fff', '5f00', '0064', hex()];
    const first = firsts[i % firsts.length]!;
    const second = first === '2001' ? (i % 3 === 0 ? '0db8' : (next() % 0x300).toString(16)) : first === '0064' ? (i % 2 ? 'ff9b' : hex()) : hex();
    return [first, second, ...Array.from({ length: 6 }, hex)].join(':');
  });

  test(`IPv4 addresses: ${v4.length} spread out, and both sides of every range's edges`, () => {
    const disagreements = [...v4, ...edges].filter((ip) => (classifyAddress(ip) !== undefined) !== list4.check(ip, 'ipv4'));
    expect(edges.length).toBeGreaterThan(40);
    // 255.255.255.255 is inside 240.0.0.0/4 for the node list too; the metadata address inside 169.254.0.0/16.
    expect(disagreements).toEqual([]);
  });

  test(`IPv6 addresses: ${v6.length}, many in or next to a range`, () => {
    const disagreements = v6.filter((ip) => {
      const inNodeList = list6.check(ip, 'ipv6');
      const ours = classifyAddress(ip);
      // Herald also refuses the IPv6 forms of blocked IPv4 addresses and a few exact addresses; compare on the plain ranges.
      const embeds = /^(0064:ff9b|2002|0000)/.test(ip);
      return !embeds && (ours !== undefined) !== inNodeList;
    });
    expect(disagreements).toEqual([]);
  });

  test('every table address parses back to itself', () => {
    for (const ip of ['1.2.3.4', '::ffff:1.2.3.4', '1:2:3:4:5:6:7:8', '1::8', '::', 'fe80::1']) expect(ipToBigInt(ip)).toBeDefined();
    expect(isIPv4('1.2.3.4')).toBe(true);
  });
});

describe('checkTargetUrl: what the URL alone decides', () => {
  test.each<[string, RegExp]>([
    ['http://hooks.example.com/x', /must use https/],
    ['ftp://hooks.example.com/x', /must use https/],
    ['https://user:pass@hooks.example.com/x', /must not carry credentials/],
    ['https://10.0.0.1/x', /url points at a private address: 10\.0\.0\.1 is in 10\.0\.0\.0\/8 \(RFC 1918\)/],
    ['https://127.0.0.1/x', /url points at a loopback address: 127\.0\.0\.1.*HERALD_ALLOW_LOOPBACK=true/],
    ['https://2130706433/x', /loopback address: 127\.0\.0\.1/],
    ['https://0x7f.1/x', /loopback address: 127\.0\.0\.1/],
    ['https://[::1]/x', /loopback address: ::1/],
    ['https://[::ffff:169.254.169.254]/x', /metadata address: ::ffff:a9fe:a9fe is the IPv4-mapped form of 169\.254\.169\.254/],
    ['https://169.254.169.254/computeMetadata/v1/', /metadata address: 169\.254\.169\.254/],
    ['https://metadata.google.internal/computeMetadata/v1/', /metadata address: metadata\.google\.internal is the name of a cloud metadata service/],
    ['https://METADATA.Google.Internal./x', /metadata address: metadata\.google\.internal/],
    ['https://metadata/x', /metadata address: metadata /],
    ['https://localhost/x', /loopback address: localhost is a loopback name/],
    ['https://hooks.localhost/x', /loopback address: hooks\.localhost/],
    ['https://[fe80::1]/x', /link-local address/],
    ['https://[fd12:3456::1]/x', /unique-local IPv6 address/],
    ['https://100.100.100.100/x', /shared \(CGNAT\) address/],
    ['https://0.0.0.0/x', /unspecified address/],
    ['https://224.0.0.251/x', /multicast address/],
    ['https://255.255.255.255/x', /broadcast address/],
    ['https://198.18.5.5/x', /benchmarking address/],
    ['https://240.1.2.3/x', /reserved address/],
    ['not a url', /absolute URL/],
  ])('%s → refused: %s', (url, message) => {
    const verdict = checkTargetUrl(url, STRICT);
    expect(verdict.ok).toBe(false);
    expect(verdict.ok ? '' : verdict.message).toMatch(message);
  });

  test.each([
    ['https://hooks.example.com/x', { host: 'hooks.example.com', port: 443, literal: false }],
    ['https://93.184.215.14:8443/x', { host: '93.184.215.14', port: 8443, literal: true }],
    ['https://[2606:4700::1111]/x', { host: '2606:4700::1111', port: 443, literal: true }],
  ])('%s passes (a name still has to resolve to allowed addresses)', (url, expected) => {
    expect(checkTargetUrl(url, STRICT)).toEqual({ ok: true, ...expected });
  });

  test('local mode with loopback allowed: 127.0.0.0/8, ::1 and localhost pass, over http too; nothing else private does', () => {
    for (const url of ['http://127.0.0.1:9000/hook', 'https://127.1.2.3/x', 'http://[::1]:8080/', 'http://localhost:3000/']) expect(checkTargetUrl(url, LOCAL).ok).toBe(true);
    for (const url of ['http://10.0.0.1/', 'https://192.168.0.1/', 'https://169.254.169.254/', 'https://metadata.google.internal/', 'https://[fd00::1]/']) expect(checkTargetUrl(url, LOCAL).ok).toBe(false);
    expect(checkTargetUrl('http://hooks.example.com/', LOCAL)).toEqual({ ok: false, message: 'url must use https' });
  });
});
