import { DEFAULT_MAX_SESSIONS } from '../../shared/domain/access/portal';
import { PortalLinkRecord, PortalSessionRecord } from '../../shared/domain/access/portal-access';
import { PortalStore } from '../../shared/ports/accounts';

const T0 = Date.parse('2026-11-26T00:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();
const id = (tag: string, n: number) => `${tag}${String(n).padStart(4, '0')}-${Math.random().toString(36).slice(2, 14).padEnd(12, 'x')}`;

/**
 * PortalStore's contract (shared/ports/accounts.ts), every implementation (Firestore's on the emulator,
 * memory's in unit tests): lists newest first from `since`, revocations confined to their
 * account, "end every session" marking each live record, and an account's deletion taking
 * everything of it.
 */
export function portalStoreConformance(name: string, make: () => Promise<PortalStore> | PortalStore): void {
  describe(`${name} portal store`, () => {
    let store: PortalStore;
    let account: string;
    const link = (n: number, extra: Partial<PortalLinkRecord> = {}): PortalLinkRecord => ({ id: id('link', n), account, mintedBy: 'admin', readOnly: false, createdAt: iso(T0 + n * 1000), expiresAt: iso(T0 + 3_600_000), ...extra });
    const session = (n: number, linkId: string): PortalSessionRecord => ({ id: id('sess', n), linkId, account, createdAt: iso(T0 + n * 1000), expiresAt: iso(T0 + 3_600_000) });

    beforeEach(async () => {
      store = await make();
      account = `acct-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`;
    });

    test('records read back as written (without their TTL field); lists newest first, from `since`, at most `limit`', async () => {
      const links = [link(1, { destinations: ['orders'], readOnly: true }), link(2), link(3, { mintedBy: '0123456789abcdef' })];
      for (const l of links) await store.createLink(l);
      const sessions = [session(4, links[0]!.id), session(5, links[2]!.id)];
      for (const s of sessions) await store.createSession(s);
      await store.createLink({ ...link(6), account: `${account}-other` });
      expect(await store.getLink(links[0]!.id)).toEqual(links[0]);
      expect(await store.getSession(sessions[1]!.id)).toEqual(sessions[1]);
      expect(await store.getLink('nope-nope-nope-nope')).toBeUndefined();
      expect((await store.links(account, new Date(T0), 10)).map((l) => l.id)).toEqual([links[2]!.id, links[1]!.id, links[0]!.id]);
      expect((await store.links(account, new Date(T0 + 2000), 10)).map((l) => l.id)).toEqual([links[2]!.id, links[1]!.id]);
      expect((await store.links(account, new Date(T0), 1)).map((l) => l.id)).toEqual([links[2]!.id]);
      expect(await store.sessions(account, new Date(T0), 10)).toEqual([sessions[1], sessions[0]]);
    });

    test('revoking a link marks the link alone, once; not from another account; its sessions are left to read the link', async () => {
      const l = link(1);
      await store.createLink(l);
      const [a, b] = [session(2, l.id), session(3, l.id)];
      await store.createSession(a);
      await store.createSession(b);
      expect(await store.revokeSession(account, a.id, iso(T0 + 5000))).toEqual({ ...a, revokedAt: iso(T0 + 5000) });
      expect(await store.revokeLink(`${account}-other`, l.id, iso(T0 + 6000))).toBeUndefined();
      expect((await store.getLink(l.id))?.revokedAt).toBeUndefined();
      expect(await store.revokeLink(account, l.id, iso(T0 + 7000))).toEqual({ ...l, revokedAt: iso(T0 + 7000) });
      // However many sessions it opened, none is read or written: each checks its link (sessionAccess).
      expect((await store.getSession(a.id))?.revokedAt).toBe(iso(T0 + 5000));
      expect((await store.getSession(b.id))?.revokedAt).toBeUndefined();
      // The first revocation's time stays.
      expect((await store.revokeLink(account, l.id, iso(T0 + 9000)))?.revokedAt).toBe(iso(T0 + 7000));
      expect(await store.revokeSession(`${account}-other`, b.id, iso(T0 + 9000))).toBeUndefined();
      expect(await store.revokeSession(account, 'nope-nope-nope-nope', iso(T0 + 9000))).toBeUndefined();
    });

    test('opening sessions counts them on the link, up to its maxSessions (the default without one); never another account\'s link', async () => {
      const limited = link(1, { maxSessions: 2 });
      const older = link(2);
      await store.createLink(limited);
      await store.createLink(older);
      expect(await store.openSession(session(3, limited.id))).toBe('opened');
      expect(await store.openSession(session(4, limited.id))).toBe('opened');
      const third = session(5, limited.id);
      expect(await store.openSession(third)).toBe('used-up');
      expect(await store.getSession(third.id)).toBeUndefined();
      expect(await store.getLink(limited.id)).toEqual({ ...limited, sessionsOpened: 2 });
      expect((await store.sessions(account, new Date(T0), 10)).map((s) => s.linkId)).toEqual([limited.id, limited.id]);
      // A record from before the limit: DEFAULT_MAX_SESSIONS.
      for (let n = 0; n < DEFAULT_MAX_SESSIONS; n++) expect(await store.openSession(session(10 + n, older.id))).toBe('opened');
      expect(await store.openSession(session(30, older.id))).toBe('used-up');
      expect(await store.openSession({ ...session(31, limited.id), account: `${account}-other` })).toBe('no-link');
      expect(await store.openSession(session(32, 'nope-nope-nope-nope'))).toBe('no-link');
    });

    test('"end every session": the mark moves forward only, each live record is marked, others (a revoked link\'s sessions too) are left', async () => {
      const live = link(1);
      const revoked = link(2, { revokedAt: iso(T0 + 2500) });
      const expired = link(3, { expiresAt: iso(T0 + 4000) });
      for (const l of [live, revoked, expired]) await store.createLink(l);
      const s = session(4, live.id);
      await store.createSession(s);
      // A session of a link already revoked was ended with it: not counted again.
      const ofRevoked = session(5, revoked.id);
      await store.createSession(ofRevoked);
      expect(await store.endedAt(account)).toBeUndefined();
      expect(await store.endAll(account, iso(T0 + 5000))).toEqual({ links: 1, sessions: 1 });
      expect((await store.getSession(ofRevoked.id))?.revokedAt).toBeUndefined();
      expect(await store.endedAt(account)).toBe(iso(T0 + 5000));
      expect((await store.getLink(live.id))?.revokedAt).toBe(iso(T0 + 5000));
      expect((await store.getLink(revoked.id))?.revokedAt).toBe(iso(T0 + 2500));
      expect((await store.getLink(expired.id))?.revokedAt).toBeUndefined();
      expect((await store.getSession(s.id))?.revokedAt).toBe(iso(T0 + 5000));
      // An earlier time (another instance's clock) never moves it back; nothing is live to mark.
      expect(await store.endAll(account, iso(T0 + 4500))).toEqual({ links: 0, sessions: 0 });
      expect(await store.endedAt(account)).toBe(iso(T0 + 5000));
      expect(await store.endedAt(`${account}-other`)).toBeUndefined();
    });

    test("deleting an account deletes its links, sessions and mark, and no one else's", async () => {
      const mine = link(1);
      const theirs = { ...link(2), account: `${account}-other` };
      await store.createLink(mine);
      await store.createLink(theirs);
      await store.createSession(session(3, mine.id));
      await store.endAll(account, iso(T0 + 4000));
      // Its link, its session and its mark.
      expect(await store.deleteAccount(account)).toBe(3);
      expect(await store.links(account, new Date(0), 10)).toEqual([]);
      expect(await store.sessions(account, new Date(0), 10)).toEqual([]);
      expect(await store.endedAt(account)).toBeUndefined();
      expect(await store.getLink(theirs.id)).toEqual(theirs);
    });

    test('deleting an account counts the documents that were there: none for an account without any', async () => {
      await store.createLink(link(1));
      expect(await store.deleteAccount(account)).toBe(1);
      expect(await store.deleteAccount(account)).toBe(0);
    });
  });
}
