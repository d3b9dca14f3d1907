import { PushAuthenticator, PushAuthSettings } from '../../shared/app/access/push-auth';
import { ConfigError, loadConfig, pushAuthModeOf } from '../../shared/config';
import { systemClock } from '../../shared/ports/clock';
import { TestIssuer } from '../support/oidc';

const BASE = 'https://europe-west1-acme.cloudfunctions.net';
const PUSH_SA = 'herald-pusher@acme.iam.gserviceaccount.com';
const SCHEDULER_SA = 'herald-scheduler@acme.iam.gserviceaccount.com';

const issuer = new TestIssuer();
const other = new TestIssuer();

function authenticator(settings: Partial<PushAuthSettings> = {}): PushAuthenticator {
  return new PushAuthenticator({ mode: 'oidc', pushServiceAccount: PUSH_SA, schedulerServiceAccount: SCHEDULER_SA, baseUrl: BASE, ...settings }, issuer.verifier(), systemClock);
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const pushClaims = (fn: string, extra: Record<string, unknown> = {}) => ({ aud: `${BASE}/${fn}`, email: PUSH_SA, ...extra });

describe('OIDC mode: a Google-signed token of the right identity for this function', () => {
  test.each(['route', 'deliver', 'replay'] as const)('%s accepts the push service account with its own URL as audience', async (fn) => {
    expect(await authenticator().check(fn, bearer(issuer.token(pushClaims(fn))))).toEqual({ ok: true, caller: PUSH_SA });
  });

  test.each(['pump', 'suspension-check'] as const)('%s accepts the scheduler service account', async (fn) => {
    const token = issuer.token({ aud: `${BASE}/${fn}`, email: SCHEDULER_SA });
    expect(await authenticator().check(fn, bearer(token))).toEqual({ ok: true, caller: SCHEDULER_SA });
  });

  test('the suspension check refuses the push account (each identity calls only its own functions); the pump takes it: a batcher wake-up is pushed', async () => {
    expect(await authenticator().check('suspension-check', bearer(issuer.token({ aud: `${BASE}/suspension-check`, email: PUSH_SA })))).toMatchObject({ ok: false, kind: 'unauthenticated' });
    expect(await authenticator().check('pump', bearer(issuer.token({ aud: `${BASE}/pump`, email: PUSH_SA })))).toEqual({ ok: true, caller: PUSH_SA });
    expect(await authenticator().check('route', bearer(issuer.token({ aud: `${BASE}/route`, email: SCHEDULER_SA })))).toMatchObject({ ok: false, kind: 'unauthenticated' });
  });

  test('without a scheduler account configured, the push account calls the scheduled functions too', async () => {
    const auth = authenticator({ schedulerServiceAccount: undefined });
    expect(await auth.check('pump', bearer(issuer.token({ aud: `${BASE}/pump`, email: PUSH_SA })))).toEqual({ ok: true, caller: PUSH_SA });
  });

  test.each<[string, () => string, RegExp]>([
    ['no token', () => '', /send a Google OIDC token in Authorization: Bearer/],
    ['a token for another function (audience)', () => issuer.token(pushClaims('route')), /audience is not this function/],
    ['a token for another service', () => issuer.token({ ...pushClaims('deliver'), aud: 'https://evil.example.com' }), /audience is not this function/],
    ['another service account', () => issuer.token(pushClaims('deliver', { email: 'intruder@acme.iam.gserviceaccount.com' })), /the token is not for herald-pusher@/],
    ['an unverified email', () => issuer.token(pushClaims('deliver', { email_verified: false })), /email is not verified/],
    ['no email claim', () => issuer.token(pushClaims('deliver', { email: undefined })), /the token is not for/],
    ['an expired token', () => issuer.token(pushClaims('deliver', { iat: 1_000_000, exp: 1_000_600 })), /has expired/],
    ['a token from the future', () => issuer.token(pushClaims('deliver', { iat: Math.floor(Date.now() / 1000) + 3600, exp: Math.floor(Date.now() / 1000) + 7200 })), /not valid yet/],
    ['another issuer', () => issuer.token(pushClaims('deliver', { iss: 'https://evil.example.com' })), /not issued by Google/],
    ['a key Google does not publish', () => issuer.token(pushClaims('deliver'), { kid: 'unknown-key' }), /signed with a key Google does not publish/],
    ['a forged signature (right kid, other key)', () => issuer.token(pushClaims('deliver'), { key: other }), /signature does not verify/],
    ['tampered claims', () => tamper(issuer.token(pushClaims('deliver', { email: 'intruder@acme.iam.gserviceaccount.com' }))), /signature does not verify/],
    ['not a JWT', () => 'opaque-shared-secret', /not a JWT/],
    ['an unsigned token (alg none)', () => `${issuer.token(pushClaims('deliver')).split('.').slice(0, 2).join('.')}.`, /signature does not verify|could not be verified/],
  ])('refused with 401: %s', async (_, token, message) => {
    const verdict = await authenticator().check('deliver', token() ? bearer(token()) : {});
    expect(verdict).toMatchObject({ ok: false, kind: 'unauthenticated' });
    expect(verdict.ok ? '' : verdict.message).toMatch(message);
  });

  test('the refusal never quotes the token (the library does; Herald does not pass it on)', async () => {
    const token = issuer.token(pushClaims('deliver'), { key: other });
    const verdict = await authenticator().check('deliver', bearer(token));
    expect(JSON.stringify(verdict)).not.toContain(token.split('.')[1]!);
  });

  test('the shared push token is not an OIDC token', async () => {
    const auth = authenticator({ pushToken: 'herald_push_0123456789abcdef' });
    expect(await auth.check('deliver', { queryToken: 'herald_push_0123456789abcdef' })).toMatchObject({ ok: false, kind: 'unauthenticated' });
  });
});

/** The token with its payload swapped for another's (the signature is the original's). */
function tamper(token: string): string {
  const [h, , s] = token.split('.');
  return [h, Buffer.from(JSON.stringify({ ...pushClaims('deliver'), iss: 'https://accounts.google.com', iat: 1, exp: 9e9 })).toString('base64url'), s].join('.');
}

describe('a token whose signature Cloud Run removed (the function behind IAM)', () => {
  test('oidc-behind-iam: accepted on its claims, which must still name the right caller, audience and time', async () => {
    const auth = authenticator({ mode: 'oidc-behind-iam' });
    expect(await auth.check('deliver', bearer(issuer.stripped(pushClaims('deliver'))))).toEqual({ ok: true, caller: PUSH_SA });
    for (const claims of [pushClaims('route'), pushClaims('deliver', { email: 'x@acme.iam.gserviceaccount.com' }), pushClaims('deliver', { exp: 1_000_000, iat: 999_000 }), pushClaims('deliver', { iss: 'me' }), pushClaims('deliver', { email_verified: false })]) {
      expect(await auth.check('deliver', bearer(issuer.stripped(claims)))).toMatchObject({ ok: false, kind: 'unauthenticated' });
    }
    // A token that still has its signature is verified in full, in this mode too.
    expect(await auth.check('deliver', bearer(issuer.token(pushClaims('deliver'), { key: other })))).toMatchObject({ ok: false });
  });

  test('oidc: refused, naming the mode that accepts it', async () => {
    const verdict = await authenticator().check('deliver', bearer(issuer.stripped(pushClaims('deliver'))));
    expect(verdict).toMatchObject({ ok: false, kind: 'unauthenticated', message: expect.stringContaining('HERALD_PUSH_AUTH=oidc-behind-iam') as string });
  });
});

describe('token mode (local: the emulator sends no OIDC header)', () => {
  const auth = new PushAuthenticator({ mode: 'token', pushToken: 'herald_push_0123456789abcdef' }, issuer.verifier(), systemClock);

  test('the push token in ?token= passes; anything else is a 401', async () => {
    expect(await auth.check('deliver', { queryToken: 'herald_push_0123456789abcdef' })).toEqual({ ok: true, caller: 'push-token' });
    for (const queryToken of [undefined, '', 'herald_push_0123456789abcdeF', 'herald_push_0123456789abcdef0']) {
      expect(await auth.check('deliver', queryToken === undefined ? {} : { queryToken })).toMatchObject({ ok: false, kind: 'unauthenticated', message: expect.stringContaining('?token=') as string });
    }
    // A valid OIDC token is not what this mode takes.
    expect(await auth.check('deliver', bearer(issuer.token(pushClaims('deliver'))))).toMatchObject({ ok: false, kind: 'unauthenticated' });
  });

  test('nothing configured: every request refused (503), never let through', async () => {
    const none = new PushAuthenticator({ mode: undefined }, issuer.verifier(), systemClock);
    expect(await none.check('deliver', { queryToken: 'anything' })).toMatchObject({ ok: false, kind: 'unavailable', message: expect.stringContaining('not configured') as string });
  });
});

describe('the mode switch', () => {
  const env = { HERALD_PUSH_BASE_URL: BASE };
  test.each<[Record<string, string>, string | undefined]>([
    [{ HERALD_PUSH_SERVICE_ACCOUNT: PUSH_SA }, 'oidc'],
    [{ HERALD_PUSH_SERVICE_ACCOUNT: PUSH_SA, HERALD_PUSH_TOKEN: 'herald_push_0123456789abcdef' }, 'oidc'],
    [{ HERALD_PUSH_TOKEN: 'herald_push_0123456789abcdef' }, 'token'],
    [{ HERALD_PUSH_SERVICE_ACCOUNT: PUSH_SA, HERALD_PUSH_AUTH: 'oidc-behind-iam' }, 'oidc-behind-iam'],
    [{}, undefined],
  ])('%j → %s', (vars, mode) => {
    expect(pushAuthModeOf(loadConfig({ ...env, ...vars }))).toBe(mode);
  });

  test.each<[Record<string, string>, RegExp]>([
    [{ HERALD_PUSH_AUTH: 'token' }, /HERALD_PUSH_AUTH=token needs HERALD_PUSH_TOKEN/],
    [{ HERALD_PUSH_AUTH: 'oidc' }, /needs HERALD_PUSH_SERVICE_ACCOUNT and HERALD_PUSH_BASE_URL/],
    [{ HERALD_PUSH_AUTH: 'sometimes' }, /HERALD_PUSH_AUTH="sometimes": must be one of token, oidc, oidc-behind-iam/],
    [{ HERALD_ADMIN_TOKEN: 'a'.repeat(20), HERALD_ADMIN_TOKEN_SHA256: 'a'.repeat(64) }, /HERALD_ADMIN_TOKEN or HERALD_ADMIN_TOKEN_SHA256, not both/],
    [{ HERALD_INGEST_TOKEN_SHA256: 'not-hex' }, /HERALD_INGEST_TOKEN_SHA256=\[redacted\]: must be the SHA-256/],
  ])('%j is refused at start-up', (vars, message) => {
    expect(() => loadConfig(vars)).toThrow(ConfigError);
    expect(() => loadConfig(vars)).toThrow(message);
  });

  test('a token that is too short is named, never printed', () => {
    expect(() => loadConfig({ HERALD_ADMIN_TOKEN: 'hunter2' })).toThrow(/HERALD_ADMIN_TOKEN=\[redacted\]: must be at least 16 characters/);
    expect(() => loadConfig({ HERALD_ADMIN_TOKEN: 'hunter2' })).not.toThrow(/hunter2/);
  });
});

describe('a deployed Herald (shared/config.ts checkDeployedConfig)', () => {
  test('refuses to start with no push authentication, or with loopback allowed', async () => {
    const { checkDeployedConfig } = await import('../../shared/config');
    expect(() => checkDeployedConfig(loadConfig({ HERALD_PUSH_BASE_URL: BASE }))).toThrow(/no push authentication/);
    const loopback = loadConfig({ HERALD_PUSH_BASE_URL: BASE, HERALD_PUSH_SERVICE_ACCOUNT: PUSH_SA, HERALD_ALLOW_LOOPBACK: 'true' });
    expect(() => checkDeployedConfig(loopback, {})).toThrow(/never delivers to loopback/);
    expect(() => checkDeployedConfig(loopback, { PUBSUB_EMULATOR_HOST: '127.0.0.1:1' })).toThrow(/never delivers to loopback/);
    // The built functions on the emulators (npm run rehearse) deliver to loopback receivers.
    expect(() => checkDeployedConfig(loopback, { PUBSUB_EMULATOR_HOST: '127.0.0.1:1', FIRESTORE_EMULATOR_HOST: '127.0.0.1:2' })).not.toThrow();
    expect(() => checkDeployedConfig(loadConfig({ HERALD_PUSH_BASE_URL: BASE, HERALD_PUSH_SERVICE_ACCOUNT: PUSH_SA, HERALD_PUSH_AUTH: 'oidc-behind-iam' }))).not.toThrow();
  });
});
