import { Firestore } from '@google-cloud/firestore';
import { FirestoreQuotaStore } from '../../shared/adapters/firestore-quotas';
import { MemoryQuotaStore } from '../../shared/adapters/memory/quota-store';
import { QuotaStore } from '../../shared/ports';

/**
 * The publish bucket on the Firestore emulator and in memory, one contract: concurrent takes
 * from several instances never hand out more than the bucket holds, and it refills at the quota.
 */
const projectId = 'quota-store-test';
const db = new Firestore({ projectId, ignoreUndefinedProperties: true });
afterAll(() => db.terminate());

describe.each<[string, () => QuotaStore]>([
  ['Firestore', () => new FirestoreQuotaStore(db)],
  ['memory', () => new MemoryQuotaStore()],
])('%s quota store', (_name, make) => {
  test('concurrent takes share one full bucket exactly; it refills at the quota', async () => {
    const store = make();
    const account = `acct-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`;
    const t = 1_800_000_000_000;
    // Three instances asking 20 at once against a quota of 50: 60 asked, 50 given.
    const granted = await Promise.all(Array.from({ length: 3 }, () => store.take(account, 20, 50, t)));
    expect(granted.reduce((a, b) => a + b, 0)).toBe(50);
    expect(await store.take(account, 4, 50, t)).toBe(0);
    // 200 ms later, 10 more.
    expect(await store.take(account, 20, 50, t + 200)).toBe(10);
    // Another account has its own bucket.
    expect(await store.take(`${account}-other`, 60, 50, t)).toBe(50);
  });
});
