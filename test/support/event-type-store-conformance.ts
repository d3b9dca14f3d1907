import { CatalogueEntry, EventTypeStore } from '../../shared/ports/destinations';
import { contractSuite } from './contract-suite';

const entry = (type: string, lastSeenAt: string, shard: number, sample: Record<string, unknown> = { type }): CatalogueEntry => ({ type, lastSeenAt, sample: JSON.stringify(sample), shard });
const byType = (a: CatalogueEntry, b: CatalogueEntry) => a.type.localeCompare(b.type) || a.shard - b.shard;

/** EventTypeStore's contract (shared/ports/destinations.ts), every implementation: Firestore's on the emulator, memory's in unit tests. */
export function eventTypeStoreConformance(name: string, make: () => Promise<EventTypeStore> | EventTypeStore): void {
  contractSuite(`${name} event-type store`, make, (store) => {
    test('known answers what was recorded, with its shard; a later record merges: types recorded before stay, a type again is refreshed', async () => {
      expect(await store.known('acme')).toEqual([]);
      await store.record('acme', [entry('com.a', '2026-11-25T10:00:00.000Z', 0), entry('com.b', '2026-11-25T10:00:00.000Z', 1)]);
      await store.record('acme', [entry('com.c', '2026-11-25T11:00:00.000Z', 0), entry('com.a', '2026-11-25T12:00:00.000Z', 0, { v: 2 })]);
      expect((await store.known('acme')).sort(byType)).toEqual([
        entry('com.a', '2026-11-25T12:00:00.000Z', 0, { v: 2 }),
        entry('com.b', '2026-11-25T10:00:00.000Z', 1),
        entry('com.c', '2026-11-25T11:00:00.000Z', 0),
      ]);
      // Nothing to record writes nothing and breaks nothing.
      await store.record('acme', []);
      expect(await store.known('acme')).toHaveLength(3);
    });

    test('list: by type, each once (the newest lastSeenAt when two documents hold it), its sample parsed', async () => {
      await store.record('acme', [entry('com.b', '2026-11-25T10:00:00.000Z', 2, { old: true }), entry('com.a', '2026-11-25T10:00:00.000Z', 0, { n: [1, 2] })]);
      await store.record('acme', [entry('com.b', '2026-11-25T11:00:00.000Z', 5, { old: false })]);
      expect(await store.list('acme')).toEqual([
        { account: 'acme', type: 'com.a', lastSeenAt: '2026-11-25T10:00:00.000Z', sample: { n: [1, 2] } },
        { account: 'acme', type: 'com.b', lastSeenAt: '2026-11-25T11:00:00.000Z', sample: { old: false } },
      ]);
    });

    test("an account sees its own types only, never those of an account whose id starts the same", async () => {
      await store.record('acme', [entry('com.mine', '2026-11-25T10:00:00.000Z', 0)]);
      await store.record('acme-2', [entry('com.theirs', '2026-11-25T10:00:00.000Z', 0)]);
      await store.record('acm', [entry('com.short', '2026-11-25T10:00:00.000Z', 0)]);
      expect((await store.list('acme')).map((s) => s.type)).toEqual(['com.mine']);
      expect((await store.known('acme')).map((s) => s.type)).toEqual(['com.mine']);
      expect((await store.list('acme-2')).map((s) => s.type)).toEqual(['com.theirs']);
      expect(await store.list('nobody')).toEqual([]);
    });
  });
}
