import type { Account, AccountKey } from '../../shared/domain/access/account';
import { MemoryPortalStore } from '../../shared/adapters/memory/portal-store';
import { authenticate, AuthenticateDeps } from '../../shared/app/access/authenticate';
import { KeyVerifier } from '../../shared/app/access/key-verifier';
import { PortalVerifier } from '../../shared/app/access/portal-verifier';
import { digestOf } from '../../shared/app/access/push-auth';
import { mintKey } from '../../shared/domain/access/account';
import { PortalClaims, signSession } from '../../shared/domain/access/portal';

/**
 * The one bearer check of the two public doors (functions/ingest.ts and functions/admin/auth.ts):
 * each door's own token, account keys at both, portal sessions at the admin door only, and a
 * 401 that names what to send.
 */

const T0 = Date.parse('2026-11-26T00:00:00.000Z');
let now = T0;
const clock = { now: () => new Date(now) };
const iso = (ms: number) => new Date(ms).toISOString();

const ADMIN_TOKEN = 'admin-token-0123456789';
const INGEST_TOKEN = 'ingest-token-0123456789';
const PORTAL_KEY = Buffer.alloc(32, 7);

const INGEST = { token: digestOf(INGEST_TOKEN), expects: 'ingest token or an account key with the publish scope' };
const ADMIN = { token: digestOf(ADMIN_TOKEN), expects: 'admin token or account key', portalKey: PORTAL_KEY };

const LINK_ID = 'link-000000000000000';
const SESSION_ID = 'sess-000000000000000';

let keyRecords: Map<string, AccountKey>;
let portals: MemoryPortalStore;
let deps: AuthenticateDeps;
let key: string;
let keyRecord: AccountKey;

const bearer = (token: string) => `Bearer ${token}`;
const session = (claims: Partial<PortalClaims> = {}) => signSession(PORTAL_KEY, { id: LINK_ID, account: 'acme', readOnly: true, destinations: ['orders'], exp: Math.floor(now / 1000) + 3600, ...claims }, SESSION_ID);

beforeEach(async () => {
  now = T0;
  ({ key, record: keyRecord } = mintKey('acme', { name: 'backend', scopes: ['read', 'publish'] }, 'admin', new Date(T0 - 60_000)));
  keyRecords = new Map([[keyRecord.id, keyRecord]]);
  const keys = new KeyVerifier({ getKey: async (id) => keyRecords.get(id) }, clock);
  portals = new MemoryPortalStore();
  await portals.createLink({ id: LINK_ID, account: 'acme', mintedBy: 'admin', readOnly: true, destinations: ['orders'], createdAt: iso(now), expiresAt: iso(now + 3_600_000) });
  await portals.createSession({ id: SESSION_ID, linkId: LINK_ID, account: 'acme', createdAt: iso(now), expiresAt: iso(now + 3_600_000) });
  const accounts = new Map([['acme', { id: 'acme', createdAt: iso(T0 - 3_600_000) } as Account]]);
  deps = { keys, portalAccess: new PortalVerifier({ portals, accounts: { get: async (id) => accounts.get(id) }, keys, clock }), clock };
});

describe('each door takes its own token, and only its own', () => {
  test('the ingest token at ingest, the admin token at admin', async () => {
    expect(await authenticate(deps, INGEST, bearer(INGEST_TOKEN))).toEqual({ ok: true, bearer: { kind: 'token' } });
    expect(await authenticate(deps, ADMIN, bearer(ADMIN_TOKEN))).toEqual({ ok: true, bearer: { kind: 'token' } });
    // The scheme's case and trailing blanks do not matter.
    expect(await authenticate(deps, INGEST, `bearer ${INGEST_TOKEN}  `)).toEqual({ ok: true, bearer: { kind: 'token' } });
  });

  test("the other door's token is refused, with what this door takes", async () => {
    expect(await authenticate(deps, INGEST, bearer(ADMIN_TOKEN))).toEqual({ ok: false, body: { error: 'missing or invalid bearer token: send Authorization: Bearer <ingest token or an account key with the publish scope>' } });
    expect(await authenticate(deps, ADMIN, bearer(INGEST_TOKEN))).toEqual({ ok: false, body: { error: 'missing or invalid bearer token: send Authorization: Bearer <admin token or account key>' } });
  });

  test('no header, another scheme, or an empty token: refused', async () => {
    for (const header of [undefined, '', `Basic ${INGEST_TOKEN}`, 'Bearer', 'Bearer  ', `Bearer ${INGEST_TOKEN} extra`]) {
      expect(await authenticate(deps, INGEST, header)).toMatchObject({ ok: false, body: { error: expect.stringContaining('send Authorization: Bearer <ingest token') } });
    }
  });
});

describe('account keys, at both doors', () => {
  test('a valid key is the key, whatever its scopes (each door judges them)', async () => {
    for (const door of [INGEST, ADMIN]) {
      expect(await authenticate(deps, door, bearer(key))).toEqual({ ok: true, bearer: { kind: 'key', key: keyRecord } });
    }
  });

  test('a revoked or expired key says so; an unknown one is told what to send', async () => {
    keyRecords.set(keyRecord.id, { ...keyRecord, revokedAt: iso(now) });
    expect(await authenticate(deps, INGEST, bearer(key))).toEqual({ ok: false, body: { error: 'missing or invalid bearer token: the account key is revoked; ask for a new one' } });
    now += 5_000; // past the key cache
    keyRecords.set(keyRecord.id, { ...keyRecord, expiresAt: iso(now - 1) });
    expect(await authenticate(deps, ADMIN, bearer(key))).toEqual({ ok: false, body: { error: 'missing or invalid bearer token: the account key is expired; ask for a new one' } });
    expect(await authenticate(deps, ADMIN, bearer(`${key.slice(0, -4)}AAAA`))).toEqual({ ok: false, body: { error: 'missing or invalid bearer token: send Authorization: Bearer <admin token or account key>' } });
  });
});

describe('portal sessions, at the admin door only', () => {
  test('a live session is a read-only portal caller of its account and destinations', async () => {
    expect(await authenticate(deps, ADMIN, bearer(session()))).toEqual({
      ok: true,
      bearer: { kind: 'portal', caller: { kind: 'portal', account: 'acme', sessionId: SESSION_ID, scopes: ['read'], destinations: ['orders'] } },
    });
  });

  test('ingest never takes one', async () => {
    expect(await authenticate(deps, INGEST, bearer(session()))).toEqual({ ok: false, body: { error: 'missing or invalid bearer token: send Authorization: Bearer <ingest token or an account key with the publish scope>' } });
  });

  test('an expired, revoked or forged session: 401 with the reason', async () => {
    expect(await authenticate(deps, ADMIN, bearer(session({ exp: Math.floor(now / 1000) - 1 })))).toEqual({ ok: false, body: { error: 'the portal session has expired: open a new portal link', reason: 'expired' } });
    expect(await authenticate(deps, ADMIN, bearer(`${session()}x`))).toEqual({ ok: false, body: { error: 'the portal session is not valid: open the portal link again', reason: 'invalid' } });
    await portals.revokeSession('acme', SESSION_ID, iso(now));
    now += 5_000; // past the session record's cache
    expect(await authenticate(deps, ADMIN, bearer(session()))).toMatchObject({ ok: false, body: { error: expect.stringMatching(/^the portal session has ended \(.+\): open the portal again/), reason: 'revoked' } });
  });
});
