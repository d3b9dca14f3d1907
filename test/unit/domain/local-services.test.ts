import { checkTargetUrl, refusedAddress } from '../../../shared/domain/access/address-policy';
import { LocalService } from '../../../shared/domain/access/local-services';

/** Local mode's own services: refused even where loopback is allowed, on any loopback spelling of their port. */

const SERVICES: LocalService[] = [
  { what: 'the Pub/Sub emulator', host: '127.0.0.1', port: 8085 },
  { what: 'the Firestore emulator', host: 'localhost', port: 8681 },
  { what: 'Herald itself', host: '127.0.0.1', port: 8080 },
  { what: 'the Pub/Sub emulator', host: 'emulators.example.com', port: 9443 },
];
const LOCAL = { allowLoopback: true, localServices: SERVICES };

describe('checkTargetUrl: a URL at one of local mode’s own services', () => {
  test.each<[string, string, RegExp]>([
    ['http://127.0.0.1:8085/v1/projects/p/topics/herald-events:publish', '127.0.0.1:8085', /the Pub\/Sub emulator \(127\.0\.0\.1:8085\)/],
    ['http://127.0.0.2:8085/', '127.0.0.2:8085', /on loopback, at the port of the Pub\/Sub emulator/],
    ['http://localhost:8085/', 'localhost:8085', /Pub\/Sub emulator/],
    ['http://hooks.localhost:8085/', 'hooks.localhost:8085', /Pub\/Sub emulator/],
    ['http://[::1]:8085/', '[::1]:8085', /Pub\/Sub emulator/],
    ['http://[::ffff:127.0.0.1]:8085/', '[::ffff:7f00:1]:8085', /Pub\/Sub emulator/],
    ['http://2130706433:8085/', '127.0.0.1:8085', /Pub\/Sub emulator/],
    ['http://127.0.0.1:8681/v1/projects/p/databases/(default)/documents/destinations', '127.0.0.1:8681', /the Firestore emulator \(localhost:8681\)/],
    ['http://127.0.0.1:8080/admin/destinations', '127.0.0.1:8080', /Herald itself \(127\.0\.0\.1:8080\)/],
    ['https://emulators.example.com:9443/', 'emulators.example.com:9443', /^emulators\.example\.com:9443 is the Pub\/Sub emulator \(emulators\.example\.com:9443\)$/],
  ])('%s is refused', (url, address, detail) => {
    const verdict = checkTargetUrl(url, LOCAL);
    expect(verdict).toMatchObject({ ok: false, blocked: { address, addressClass: 'local-service' } });
    const message = verdict.ok ? '' : verdict.message;
    expect(message).toMatch(new RegExp(`^url points at a port local mode keeps for itself: ${address.replace(/[[\].]/g, '\\$&')} is `));
    expect(message).toMatch(/a destination may not reach the emulators or Herald itself: run the receiver on another port$/);
    expect(`${verdict.ok ? '' : verdict.blocked!.address} is ${verdict.ok ? '' : verdict.blocked!.detail}`).toMatch(detail);
  });

  test.each(['http://127.0.0.1:9000/hook', 'http://localhost:8086/', 'http://[::1]:8079/', 'https://emulators.example.com:9444/', 'https://hooks.example.com:8085/'])('%s passes', (url) => {
    expect(checkTargetUrl(url, LOCAL)).toMatchObject({ ok: true });
  });

  test('where loopback is refused anyway, the refusal is the loopback one', () => {
    expect(checkTargetUrl('http://127.0.0.1:8085/', { allowLoopback: false, localServices: SERVICES })).toMatchObject({ ok: false, blocked: { addressClass: 'loopback' } });
  });

  test('the scheme’s default port counts: a service on 80 or 443 is refused at a URL naming no port', () => {
    const rules = { allowLoopback: true, localServices: [{ what: 'Herald itself', host: '127.0.0.1', port: 80 }] };
    expect(checkTargetUrl('http://localhost/hook', rules)).toMatchObject({ ok: false, blocked: { address: 'localhost:80' } });
    expect(checkTargetUrl('https://localhost/hook', rules)).toMatchObject({ ok: true, port: 443 });
  });
});

describe('refusedAddress: an address a name resolved to, for a connection to a port', () => {
  test('any loopback address at a service’s port', () => {
    for (const ip of ['127.0.0.1', '127.9.9.9', '::1', '::ffff:127.0.0.1']) {
      expect(refusedAddress(ip, LOCAL, 8085)).toMatchObject({ addressClass: 'local-service' });
      expect(refusedAddress(ip, LOCAL, 9000)).toBeUndefined();
    }
  });

  test('a service at a public address: that address at that port only', () => {
    const rules = { allowLoopback: true, localServices: [{ what: 'the Firestore emulator', host: '93.184.215.14', port: 8681 }] };
    expect(refusedAddress('93.184.215.14', rules, 8681)).toMatchObject({ address: '93.184.215.14:8681', addressClass: 'local-service' });
    expect(refusedAddress('93.184.215.14', rules, 443)).toBeUndefined();
    expect(refusedAddress('93.184.215.15', rules, 8681)).toBeUndefined();
  });

  test('without a port, only the address classes judge', () => {
    expect(refusedAddress('127.0.0.1', LOCAL)).toBeUndefined();
  });
});
