import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** PEMs of a throwaway CA and of a server and a client certificate it signed (openssl; EC P-256, quick). */
export interface ThrowawayPki {
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  /** A client certificate from another CA: a receiver trusting `ca` refuses it. */
  strangerCert: string;
  strangerKey: string;
  /** The other CA, which signed `strangerCert`. */
  otherCa: string;
}

export function makeThrowawayPki(serverNames = ['localhost', '127.0.0.1']): ThrowawayPki {
  const dir = mkdtempSync(join(tmpdir(), 'herald-pki-'));
  const at = (f: string) => join(dir, f);
  const ssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
  try {
    const key = (name: string) => ssl('ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', at(`${name}.key`));
    const pkcs8 = (name: string) => ssl('pkcs8', '-topk8', '-nocrypt', '-in', at(`${name}.key`), '-out', at(`${name}.p8`));
    const selfSigned = (name: string) => {
      key(name);
      ssl('req', '-x509', '-new', '-key', at(`${name}.key`), '-subj', `/CN=${name} test CA`, '-days', '2', '-out', at(`${name}.pem`));
    };
    const signed = (name: string, caName: string, ext: string) => {
      key(name);
      pkcs8(name);
      ssl('req', '-new', '-key', at(`${name}.key`), '-subj', `/CN=${name}`, '-out', at(`${name}.csr`));
      writeFileSync(at(`${name}.ext`), ext);
      ssl('x509', '-req', '-in', at(`${name}.csr`), '-CA', at(`${caName}.pem`), '-CAkey', at(`${caName}.key`), '-CAcreateserial', '-days', '2', '-extfile', at(`${name}.ext`), '-out', at(`${name}.pem`));
    };
    selfSigned('ca');
    selfSigned('other');
    const san = serverNames.map((n) => (/^[\d.]+$/.test(n) ? `IP:${n}` : `DNS:${n}`)).join(',');
    signed('server', 'ca', `subjectAltName=${san}\nextendedKeyUsage=serverAuth\n`);
    signed('client', 'ca', 'extendedKeyUsage=clientAuth\n');
    signed('stranger', 'other', 'extendedKeyUsage=clientAuth\n');
    const read = (f: string) => readFileSync(at(f), 'utf8');
    return {
      ca: read('ca.pem'),
      serverCert: read('server.pem'),
      serverKey: read('server.p8'),
      clientCert: read('client.pem'),
      clientKey: read('client.p8'),
      strangerCert: read('stranger.pem'),
      strangerKey: read('stranger.p8'),
      otherCa: read('other.pem'),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
