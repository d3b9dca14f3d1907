import { createHash } from 'node:crypto';
import { ConfigError } from '../../shared/config';
import { healthAnswer } from '../../apps/local/health';
import { localServicesOf } from '../../apps/local/local-services';

describe('localServicesOf: what local mode keeps destinations away from', () => {
  test('the emulators wherever they are given, and Herald’s own port', () => {
    expect(localServicesOf({ pubsubHost: 'LOCALHOST:8085', firestoreHost: '[::1]:8681' }, 8080)).toEqual([
      { what: 'the Pub/Sub emulator', host: 'localhost', port: 8085 },
      { what: 'the Firestore emulator', host: '::1', port: 8681 },
      { what: 'Herald itself', host: '127.0.0.1', port: 8080 },
    ]);
  });

  test('a host without a port is at 80, as the client libraries reach it', () => {
    expect(localServicesOf({ pubsubHost: 'emulators.internal', firestoreHost: '127.0.0.1:8681' }, 8080)[0]).toEqual({ what: 'the Pub/Sub emulator', host: 'emulators.internal', port: 80 });
  });

  test.each(['http://127.0.0.1:8085', '127.0.0.1:8085/x', 'user@127.0.0.1:8085', '127.0.0.1:99999', ''])('%j is refused, naming the variable', (value) => {
    expect(() => localServicesOf({ pubsubHost: value, firestoreHost: '127.0.0.1:8681' }, 8080)).toThrow(ConfigError);
    expect(() => localServicesOf({ pubsubHost: value, firestoreHost: '127.0.0.1:8681' }, 8080)).toThrow(/^PUBSUB_EMULATOR_HOST=.*: must be host:port, e\.g\. 127\.0\.0\.1:8085$/);
  });
});

describe('healthAnswer: GET /healthz in local mode', () => {
  const digest = createHash('sha256').update('herald_admin_token_for_tests').digest();
  const details = { projectId: 'herald-local', emulators: { pubsub: '127.0.0.1:8085' } };

  test('unauthenticated, or with any other token: only "ok"', () => {
    for (const authorization of [undefined, 'Bearer nope', 'Basic aGVyYWxkOg==', 'Bearer herald_admin_token_for_testsX']) {
      expect(healthAnswer(true, details, authorization, digest)).toEqual({ status: 200, body: { status: 'ok' } });
    }
  });

  test('with the admin token: the details too', () => {
    expect(healthAnswer(true, details, 'Bearer herald_admin_token_for_tests', digest)).toEqual({ status: 200, body: { status: 'ok', ...details } });
  });

  test('while starting: 503 "starting", token or not', () => {
    expect(healthAnswer(false, details, 'Bearer herald_admin_token_for_tests', digest)).toEqual({ status: 503, body: { status: 'starting' } });
    expect(healthAnswer(false, {}, undefined, undefined)).toEqual({ status: 503, body: { status: 'starting' } });
  });
});
