import { QuotaStore } from '../../shared/ports/accounts';

/**
 * QuotaStore's contract (shared/ports/accounts.ts), every implementation (Firestore's on the emulator,
 * memory's in unit tests): concurrent takes from several instances never hand out more than the
 * bucket holds, and it refills at the quota.
 */
export function quotaStoreConformance(name: string, make: () => Promise<QuotaStore> | QuotaStore): void {
  describe(`${name} quota store`, () => {
    let store: QuotaStore;
    let account: string;
    const t = 1_800_000_000_000;
    beforeEach(async () => {
      store = await make();
      account = `acct-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`;
    });

    test('concurrent takes share one full bucket exactly; it refills at the quota', async () => {
      // Three instances asking 20 at once against a quota of 50: 60 asked, 50 given.
      const granted = await Promise.all(Array.from({ length: 3 }, () => store.take(account, 20, 50, t)));
      expect(granted.reduce((a, b) => a + b, 0)).toBe(50);
      expect(await store.take(account, 4, 50, t)).toBe(0);
      // 200 ms later, 10 more.
      expect(await store.take(account, 20, 50, t + 200)).toBe(10);
      // Another account has its own bucket.
      expect(await store.take(`${account}-other`, 60, 50, t)).toBe(50);
    });

    test('a take that finds less than a token gets none; the bucket refills continuously, to a second of the quota at most', async () => {
      expect(await store.take(account, 50, 50, t)).toBe(50);
      // 10 ms: half a token, none given; 30 ms: a token and a half, one given.
      expect(await store.take(account, 5, 50, t + 10)).toBe(0);
      expect(await store.take(account, 5, 50, t + 30)).toBe(1);
      // Long idle: never more than the quota.
      expect(await store.take(account, 500, 50, t + 60_000)).toBe(50);
    });
  });
}
