import { applySpec, Destination } from '../../shared/domain/destinations/destination';
import { DestinationStore } from '../../shared/ports/destinations';
import { contractSuite } from './contract-suite';

const T0 = new Date('2026-11-25T12:00:00.000Z');

function destination(id: string, extra: Partial<Destination> = {}): Destination {
  return { ...applySpec(id, { url: `https://hooks.example.com/${id}`, eventTypes: ['com.example.*'] }, undefined, T0), ...extra };
}

const byId = (a: Destination, b: Destination) => a.id.localeCompare(b.id);

/**
 * DestinationStore's contract (shared/ports/destinations.ts), every implementation: Firestore's on the
 * emulator, memory's in unit tests. `changes`: the store keeps a change log (`changesSince`).
 */
export function destinationStoreConformance(name: string, make: () => Promise<DestinationStore> | DestinationStore, options: { changes: boolean }): void {
  contractSuite(`${name} destination store`, make, (store) => {
    test('put creates, then replaces the destination whole: fields the new one lacks are gone', async () => {
      const first = destination('orders', { technicalEmail: 'ops@example.com', rate: { max: 5 } });
      expect(await store.put(first)).toEqual({ created: true });
      expect(await store.get('orders')).toEqual(first);
      const second = destination('orders', { eventTypes: ['com.example.other'] });
      expect(await store.put(second)).toEqual({ created: false });
      expect(await store.get('orders')).toEqual(second);
      expect(await store.get('nobody')).toBeUndefined();
    });

    test('list holds every destination once; delete says whether there was one', async () => {
      for (const id of ['c-3', 'a-1', 'b-2']) await store.put(destination(id));
      expect((await store.list()).sort(byId).map((d) => d.id)).toEqual(['a-1', 'b-2', 'c-3']);
      expect(await store.delete('b-2')).toBe(true);
      expect(await store.delete('b-2')).toBe(false);
      expect(await store.delete('never')).toBe(false);
      expect(await store.get('b-2')).toBeUndefined();
      expect((await store.list()).sort(byId).map((d) => d.id)).toEqual(['a-1', 'c-3']);
    });

    test("listAccount and countAccount: the account's destinations and none of another's, whose ids share its prefix or sort beside it", async () => {
      // `acme-eu` and `acme0` sort next to `acme_…`; `acme` and `acme-x` are the default account's.
      const ids = ['acme_orders', 'acme_billing', 'acme-eu_orders', 'acme0_x', 'acmf_a', 'acme', 'acme-x', 'orders', 'beta_orders'];
      for (const id of ids) await store.put(destination(id));
      const of = async (account: string) => (await store.listAccount(account)).map((d) => d.id).sort();
      expect(await of('acme')).toEqual(['acme_billing', 'acme_orders']);
      expect(await of('acme-eu')).toEqual(['acme-eu_orders']);
      expect(await of('default')).toEqual(['acme', 'acme-x', 'orders']);
      expect(await of('nobody')).toEqual([]);
      expect(await store.countAccount('acme')).toBe(2);
      expect(await store.countAccount('default')).toBe(3);
      expect(await store.countAccount('nobody')).toBe(0);
      const [read] = await store.listAccount('acme');
      read!.eventTypes.push('com.example.mutated');
      expect((await store.get(read!.id))?.eventTypes).toEqual(['com.example.*']);
    });

    test('update: decide sees the current destination (undefined when absent); what it returns is written and answered; undefined writes nothing', async () => {
      const seen: (Destination | undefined)[] = [];
      const fresh = destination('fresh');
      const made = await store.update('fresh', (current) => {
        seen.push(current);
        return current ?? fresh;
      });
      expect(seen).toEqual([undefined]);
      expect(made).toEqual(fresh);
      expect(await store.get('fresh')).toEqual(fresh);
      const changed = await store.update('fresh', (current) => current && { ...current, technicalEmail: 'ops@example.com', updatedAt: '2026-11-25T13:00:00.000Z' });
      expect(changed?.technicalEmail).toBe('ops@example.com');
      expect((await store.get('fresh'))?.technicalEmail).toBe('ops@example.com');
      expect(await store.update('fresh', () => undefined)).toBeUndefined();
      expect((await store.get('fresh'))?.technicalEmail).toBe('ops@example.com');
      expect(await store.update('never', () => undefined)).toBeUndefined();
      expect(await store.get('never')).toBeUndefined();
    });

    test('what a read answers is a copy: changing it changes nothing stored', async () => {
      await store.put(destination('orders'));
      const read = (await store.get('orders'))!;
      read.eventTypes.push('com.example.mutated');
      (await store.list())[0]!.eventTypes.push('com.example.mutated');
      expect((await store.get('orders'))?.eventTypes).toEqual(['com.example.*']);
    });

    if (options.changes) {
      test('changesSince: nothing at first (where the log stands), then each put, update and delete since the read time it answered, the newest state of each', async () => {
        await store.put(destination('kept'));
        await store.put(destination('gone'));
        const first = await store.changesSince!(undefined);
        expect(first).toMatchObject({ upserted: [], removed: [] });
        await store.put(destination('added'));
        await store.update('kept', (current) => current && { ...current, technicalEmail: 'ops@example.com' });
        await store.delete('gone');
        const next = await store.changesSince!(first.readTime);
        expect(next.upserted.sort(byId).map((d) => [d.id, d.technicalEmail])).toEqual([
          ['added', undefined],
          ['kept', 'ops@example.com'],
        ]);
        expect(next.removed).toEqual(['gone']);
        expect(next.readTime.getTime()).toBeGreaterThanOrEqual(first.readTime.getTime());
      });
    }
  });
}
