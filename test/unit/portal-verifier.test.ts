import type { Account, AccountKey } from '../../shared/domain/access/account';
import { MemoryPortalStore } from '../../shared/adapters/memory/portal-store';
import { KEY_CACHE_MS, KeyVerifier } from '../../shared/app/access/key-verifier';
import { PortalVerifier } from '../../shared/app/access/portal-verifier';
import { isLive, linkAccess, PortalLinkRecord, PortalSessionRecord } from '../../shared/domain/access/portal-access';

/**
 * The portal verifier's rules (docs/console.md "Ending portal access") with a fake clock: a
 * session stands while its records, account, the account's mark and the minting key do; what
 * another instance changes is seen within KEY_CACHE_MS, what this one revokes at once; and a
 * busy console costs one read per record per KEY_CACHE_MS, not one per request.
 */

const T0 = Date.parse('2026-11-26T00:00:00.000Z');
let now = T0;
const clock = { now: () => new Date(now) };
const iso = (ms: number) => new Date(ms).toISOString();

let accounts: Map<string, Pick<Account, 'id' | 'createdAt'>>;
let keyRecords: Map<string, AccountKey>;
let keyReads: number;
let portals: MemoryPortalStore;
let keys: KeyVerifier;
let verifier: PortalVerifier;

const KEY: AccountKey = { id: '0123456789abcdef', account: 'acme', name: 'backend', scopes: ['read', 'write'], hash: '0'.repeat(64), createdAt: iso(T0 - 60_000), createdBy: 'admin' };

function link(id: string, mintedBy: string, extra: Partial<PortalLinkRecord> = {}): PortalLinkRecord {
  return { id, account: 'acme', mintedBy, readOnly: false, createdAt: iso(now), expiresAt: iso(now + 3_600_000), ...extra };
}

function session(id: string, linkId: string): PortalSessionRecord {
  return { id, linkId, account: 'acme', createdAt: iso(now), expiresAt: iso(now + 3_600_000) };
}

const claims = (linkId: string, sid: string) => ({ id: linkId, account: 'acme', sid });
const BY_KEY = claims('link-by-key-000000000', 'sess-by-key-000000000');
const BY_ADMIN = claims('link-by-admin-0000000', 'sess-by-admin-0000000');

beforeEach(async () => {
  now = T0;
  accounts = new Map([['acme', { id: 'acme', createdAt: iso(T0 - 3_600_000) }]]);
  keyRecords = new Map([[KEY.id, { ...KEY }]]);
  keyReads = 0;
  portals = new MemoryPortalStore();
  keys = new KeyVerifier(
    {
      getKey: async (id) => {
        keyReads++;
        const k = keyRecords.get(id);
        return k && { ...k };
      },
    },
    clock,
  );
  verifier = new PortalVerifier({ portals, accounts: { get: async (id) => accounts.get(id) as Account | undefined }, keys, clock });
  await portals.createLink(link(BY_KEY.id, KEY.id));
  await portals.createSession(session(BY_KEY.sid, BY_KEY.id));
  await portals.createLink(link(BY_ADMIN.id, 'admin'));
  await portals.createSession(session(BY_ADMIN.sid, BY_ADMIN.id));
  now += 1000;
});

describe('what a session needs', () => {
  test('its records, its account and, minted by a key, that key: then it stands', async () => {
    expect(await verifier.session(BY_KEY)).toEqual({ ok: true });
    expect(await verifier.session(BY_ADMIN)).toEqual({ ok: true });
    expect(await verifier.link(BY_KEY)).toEqual({ ok: true });
  });

  test('a token naming records that are not there, or not its own, is refused', async () => {
    expect(await verifier.session(claims(BY_KEY.id, 'no-such-session-00000'))).toMatchObject({ ok: false, reason: 'revoked', why: 'it is no longer on record' });
    expect(await verifier.session(claims('no-such-link-00000000', BY_KEY.sid))).toMatchObject({ ok: false, reason: 'revoked' });
    // A session of one link presented with another link's claims.
    expect(await verifier.session(claims(BY_ADMIN.id, BY_KEY.sid))).toMatchObject({ ok: false, reason: 'revoked' });
    expect(await verifier.session({ ...BY_ADMIN, account: 'globex' })).toMatchObject({ ok: false, reason: 'revoked' });
  });

  test('expired with its link: refused as expired', async () => {
    now = T0 + 3_600_000;
    expect(await verifier.session(BY_ADMIN)).toEqual({ ok: false, reason: 'expired', why: 'its link has expired' });
  });

  test('an account deleted, or deleted and made again under the same id, ends it', async () => {
    accounts.delete('acme');
    verifier.forgetAccount('acme');
    expect(await verifier.session(BY_ADMIN)).toEqual({ ok: false, reason: 'revoked', why: 'its account no longer exists' });
    accounts.set('acme', { id: 'acme', createdAt: iso(now) });
    verifier.forgetAccount('acme');
    expect(await verifier.session(BY_ADMIN)).toEqual({ ok: false, reason: 'revoked', why: 'its account no longer exists' });
  });

  test('the account default stands whether or not it was ever stored', async () => {
    await portals.createLink({ ...link('link-default-00000000', 'admin'), account: 'default' });
    await portals.createSession({ ...session('sess-default-00000000', 'link-default-00000000'), account: 'default' });
    expect(await verifier.session({ id: 'link-default-00000000', account: 'default', sid: 'sess-default-00000000' })).toEqual({ ok: true });
  });
});

describe('the minting key', () => {
  test('revoked elsewhere: refused once this instance reads it again (KEY_CACHE_MS), never before; an operator session stands', async () => {
    expect(await verifier.session(BY_KEY)).toEqual({ ok: true });
    keyRecords.get(KEY.id)!.revokedAt = iso(now);
    now += KEY_CACHE_MS - 1;
    expect(await verifier.session(BY_KEY)).toEqual({ ok: true });
    now += 1;
    expect(await verifier.session(BY_KEY)).toEqual({ ok: false, reason: 'revoked', why: 'the account key that made its link was revoked' });
    expect(await verifier.link(BY_KEY)).toMatchObject({ ok: false, reason: 'revoked' });
    expect(await verifier.session(BY_ADMIN)).toEqual({ ok: true });
  });

  test('revoked here: the key verifier forgets it, and the session is refused at once', async () => {
    expect(await verifier.session(BY_KEY)).toEqual({ ok: true });
    keyRecords.get(KEY.id)!.revokedAt = iso(now);
    keys.forget(KEY.id);
    expect(await verifier.session(BY_KEY)).toMatchObject({ ok: false, reason: 'revoked' });
  });

  test('expired, gone, or another account’s: refused', async () => {
    keyRecords.get(KEY.id)!.expiresAt = iso(now + 10_000);
    expect(await verifier.session(BY_KEY)).toEqual({ ok: true });
    now += 10_000;
    expect(await verifier.session(BY_KEY)).toEqual({ ok: false, reason: 'revoked', why: 'the account key that made its link has expired' });
    keyRecords.set(KEY.id, { ...KEY, account: 'globex' });
    keys.forget(KEY.id);
    expect(await verifier.session(BY_KEY)).toMatchObject({ ok: false, reason: 'revoked' });
    keyRecords.delete(KEY.id);
    keys.forget(KEY.id);
    expect(await verifier.session(BY_KEY)).toMatchObject({ ok: false, reason: 'revoked' });
  });
});

describe('revocation', () => {
  test('a session revoked elsewhere is refused within KEY_CACHE_MS; revoked here, at once', async () => {
    expect(await verifier.session(BY_ADMIN)).toEqual({ ok: true });
    await portals.revokeSession('acme', BY_ADMIN.sid, iso(now));
    now += KEY_CACHE_MS - 1;
    expect(await verifier.session(BY_ADMIN)).toEqual({ ok: true });
    now += 1;
    expect(await verifier.session(BY_ADMIN)).toEqual({ ok: false, reason: 'revoked', why: 'it was revoked' });

    expect(await verifier.session(BY_KEY)).toEqual({ ok: true });
    await portals.revokeSession('acme', BY_KEY.sid, iso(now));
    verifier.forgetSession(BY_KEY.sid);
    expect(await verifier.session(BY_KEY)).toMatchObject({ ok: false, reason: 'revoked' });
  });

  test('a link revoked ends every session opened from it, and opens no more', async () => {
    await portals.createSession(session('sess-by-admin-1111111', BY_ADMIN.id));
    expect(await verifier.session(claims(BY_ADMIN.id, 'sess-by-admin-1111111'))).toEqual({ ok: true });
    const revoked = await portals.revokeLink('acme', BY_ADMIN.id, iso(now));
    expect(revoked?.revokedAt).toBe(iso(now));
    // Its sessions' records are untouched (and still cached here): the link's mark alone ends them.
    expect(portals.sessionRecords.get('sess-by-admin-1111111')?.revokedAt).toBeUndefined();
    verifier.forgetLink(BY_ADMIN.id);
    for (const sid of [BY_ADMIN.sid, 'sess-by-admin-1111111']) expect(await verifier.session(claims(BY_ADMIN.id, sid))).toEqual({ ok: false, reason: 'revoked', why: 'its link was revoked' });
    expect(await verifier.link(BY_ADMIN)).toMatchObject({ ok: false, reason: 'revoked' });
    expect(await verifier.session(BY_KEY)).toEqual({ ok: true });
    // Another account's link is not found from this one.
    expect(await portals.revokeLink('globex', BY_KEY.id, iso(now))).toBeUndefined();
  });

  test('"end every session": everything made until then ends; a link minted afterwards works', async () => {
    const ended = await portals.endAll('acme', iso(now));
    expect(ended).toEqual({ links: 2, sessions: 2 });
    verifier.forgetAccount('acme');
    expect(await verifier.session(BY_ADMIN)).toMatchObject({ ok: false, reason: 'revoked' });
    expect(await verifier.session(BY_KEY)).toMatchObject({ ok: false, reason: 'revoked' });
    now += 1;
    await portals.createLink(link('link-after-000000000', 'admin'));
    await portals.createSession(session('sess-after-000000000', 'link-after-000000000'));
    expect(await verifier.session(claims('link-after-000000000', 'sess-after-000000000'))).toEqual({ ok: true });
  });

  test('the mark alone ends a session, even one whose record was never marked (a revocation cut short)', () => {
    const record = link('x'.repeat(22), 'admin', { createdAt: iso(T0) });
    expect(linkAccess({ id: record.id, account: 'acme' }, { link: record, account: { createdAt: iso(T0 - 1) }, endedAt: iso(T0) }, new Date(T0 + 1))).toMatchObject({ ok: false, reason: 'revoked' });
    expect(isLive(record, new Date(T0 + 1), iso(T0))).toBe(false);
    expect(isLive(record, new Date(T0 + 1), iso(T0 - 1))).toBe(true);
  });

  test('an account deleted: its records go and this instance forgets it at once', async () => {
    expect(await verifier.session(BY_ADMIN)).toEqual({ ok: true });
    await verifier.endAccount('acme');
    expect(portals.linkRecords.size + portals.sessionRecords.size).toBe(0);
    // The cached records are still in memory here; the account is read again and its mark too: no records, refused.
    now += KEY_CACHE_MS;
    expect(await verifier.session(BY_ADMIN)).toMatchObject({ ok: false, reason: 'revoked' });
  });
});

describe('reads', () => {
  test('one read per record per KEY_CACHE_MS however many requests, shared by concurrent ones', async () => {
    await Promise.all(Array.from({ length: 20 }, () => verifier.session(BY_KEY)));
    for (let i = 0; i < 10; i++) {
      now += 300;
      expect(await verifier.session(BY_KEY)).toEqual({ ok: true });
    }
    expect({ ...portals.reads, keys: keyReads }).toEqual({ link: 1, session: 1, mark: 1, keys: 1 });
    now = T0 + 1000 + KEY_CACHE_MS;
    await verifier.session(BY_KEY);
    expect({ ...portals.reads, keys: keyReads }).toEqual({ link: 2, session: 2, mark: 2, keys: 2 });
  });

  test('a failed read is not kept: the next request reads again', async () => {
    const getSession = portals.getSession.bind(portals);
    let fail = true;
    portals.getSession = async (id) => {
      if (fail) throw new Error('unavailable');
      return getSession(id);
    };
    await expect(verifier.session(BY_ADMIN)).rejects.toThrow('unavailable');
    fail = false;
    expect(await verifier.session(BY_ADMIN)).toEqual({ ok: true });
  });
});
