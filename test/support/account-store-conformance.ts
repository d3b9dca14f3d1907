import { Account, AccountKey } from '../../shared/domain/access/account';
import { AccountStore } from '../../shared/ports/accounts';
import { contractSuite } from './contract-suite';

const T0 = new Date('2026-11-25T12:00:00.000Z');
const later = (seconds: number) => new Date(T0.getTime() + seconds * 1000);

function account(id: string): Account {
  return { id, name: `Account ${id}`, settings: {}, createdAt: T0.toISOString(), updatedAt: T0.toISOString() };
}

function key(id: string, owner: string): AccountKey {
  return { id, account: owner, name: `key ${id}`, scopes: ['read'], hash: '0'.repeat(64), createdAt: T0.toISOString(), createdBy: 'admin' };
}

/** One behaviour, every implementation: Firestore's runs on the emulator, memory's in unit tests. */
export function accountStoreConformance(name: string, make: () => Promise<AccountStore> | AccountStore): void {
  contractSuite(`${name} account store`, make, (store) => {
    test('creates an account once: a second create of its id is taken', async () => {
      expect(await store.create(account('acme'))).toBe('created');
      expect(await store.create({ ...account('acme'), name: 'again' })).toBe('taken');
      expect((await store.get('acme'))?.name).toBe('Account acme');
      expect(await store.get('nobody')).toBeUndefined();
    });

    test('deleting leaves a tombstone: the id is never created again, and get and list never show it', async () => {
      for (const id of ['a-1', 'b-2', 'c-3']) expect(await store.create(account(id))).toBe('created');
      expect(await store.delete('b-2', later(1))).toEqual({ keyIds: [] });
      expect(await store.get('b-2')).toBeUndefined();
      expect((await store.list({ limit: 10 })).accounts.map((a) => a.id)).toEqual(['a-1', 'c-3']);
      // Pages stay whole: the tombstone takes no place in one.
      expect(await store.list({ limit: 1, cursor: 'a-1' })).toEqual({ accounts: [expect.objectContaining({ id: 'c-3' })] });
      expect(await store.create(account('b-2'))).toBe('deleted');
      expect(await store.get('b-2')).toBeUndefined();
      // Deleting it again, or an account that never was, finds nothing.
      expect(await store.delete('b-2', later(2))).toBeUndefined();
      expect(await store.delete('never', later(2))).toBeUndefined();
      expect(await store.create(account('never'))).toBe('created');
    });

    test("deleting takes the account's keys with it, and no other account's", async () => {
      await store.create(account('acme'));
      await store.create(account('acme-2'));
      for (const k of [key('k1', 'acme'), key('k2', 'acme'), key('k3', 'acme-2')]) await store.putKey(k);
      const deleted = await store.delete('acme', later(1));
      expect(deleted?.keyIds.sort()).toEqual(['k1', 'k2']);
      expect(await store.getKey('k1')).toBeUndefined();
      expect(await store.listKeys('acme')).toEqual([]);
      expect((await store.listKeys('acme-2')).map((k) => k.id)).toEqual(['k3']);
    });

    test('a purge is pending from the deletion, oldest first, until marked done', async () => {
      for (const id of ['old', 'new', 'kept']) await store.create(account(id));
      await store.delete('new', later(20));
      await store.delete('old', later(10));
      expect(await store.pendingPurges(10)).toEqual([
        { id: 'old', deletedAt: later(10).toISOString(), purge: 'pending' },
        { id: 'new', deletedAt: later(20).toISOString(), purge: 'pending' },
      ]);
      expect((await store.pendingPurges(1)).map((t) => t.id)).toEqual(['old']);
      await store.purged('old', later(30));
      expect((await store.pendingPurges(10)).map((t) => t.id)).toEqual(['new']);
      // Done, it is still a tombstone: the id stays used.
      expect(await store.create(account('old'))).toBe('deleted');
      await store.purged('never-deleted', later(30));
      expect(await store.get('never-deleted')).toBeUndefined();
    });
  });
}
