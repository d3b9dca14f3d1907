import { z } from 'zod';
import { ConfigError } from '../../shared/config';
import { normalizeHost } from '../../shared/domain/access/address-policy';
import { LocalService } from '../../shared/domain/access/local-services';
import { EmulatorHosts } from './emulators';

/** `host:port` as PUBSUB_EMULATOR_HOST / FIRESTORE_EMULATOR_HOST give it: 127.0.0.1:8085, localhost:8681, [::1]:8085. */
const emulatorHostSchema = z.string().transform((value, ctx) => {
  let url: URL | undefined;
  try {
    url = new URL(`http://${value}`);
  } catch {
    url = undefined;
  }
  if (!url || url.pathname !== '/' || url.search || url.hash || url.username || url.password) {
    ctx.addIssue({ code: 'custom', message: 'must be host:port, e.g. 127.0.0.1:8085' });
    return z.NEVER;
  }
  // The client libraries' default port, as http://host/ is: 80.
  return { host: normalizeHost(url.hostname), port: Number(url.port) || 80 };
});

function endpointOf(value: string, envVar: string): { host: string; port: number } {
  const parsed = emulatorHostSchema.safeParse(value);
  if (!parsed.success) throw new ConfigError(`${envVar}=${JSON.stringify(value)}: ${parsed.error.issues.map((i) => i.message).join('; ')}`);
  return parsed.data;
}

/**
 * What local mode keeps every destination away from: the emulators it talks to (started or
 * reused, wherever PUBSUB_EMULATOR_HOST / FIRESTORE_EMULATOR_HOST point) and its own port.
 * Their ports are refused on every loopback address, and each at its own host as well.
 */
export function localServicesOf(emulators: EmulatorHosts, heraldPort: number): LocalService[] {
  return [
    { what: 'the Pub/Sub emulator', ...endpointOf(emulators.pubsubHost, 'PUBSUB_EMULATOR_HOST') },
    { what: 'the Firestore emulator', ...endpointOf(emulators.firestoreHost, 'FIRESTORE_EMULATOR_HOST') },
    { what: 'Herald itself', host: '127.0.0.1', port: heraldPort },
  ];
}
