import { IntakeBatch } from '../../shared/domain/intake/intake';
import { IntakeStore } from '../../shared/ports/intake';
import { contractSuite } from './contract-suite';

const batch = (id: string, acceptedAt: string, data = Buffer.from([0, 255, 10])): IntakeBatch => ({
  id,
  acceptedAt,
  events: [{ attributes: { specversion: '1.0', id: `e-${id}`, source: '/s', type: 't' }, data }],
});

/** IntakeStore's contract (shared/ports/intake.ts), every implementation: Firestore's on the emulator, memory's in unit tests. */
export function intakeStoreConformance(name: string, make: () => Promise<IntakeStore> | IntakeStore): void {
  contractSuite(`${name} intake store`, make, (store) => {
    test('due: batches accepted at or before a time (and after another, when given), oldest first, at most `limit`, events whole', async () => {
      await store.add(batch('i-3', '2026-11-25T10:00:03.000Z'));
      await store.add(batch('i-1', '2026-11-25T10:00:01.000Z', Buffer.from('{"a":1}')));
      await store.add(batch('i-2', '2026-11-25T10:00:02.000Z'));
      const due = await store.due(new Date('2026-11-25T10:00:02.000Z'), 10);
      expect(due.map((b) => b.id)).toEqual(['i-1', 'i-2']);
      expect(due[0]).toEqual({ ...batch('i-1', '2026-11-25T10:00:01.000Z'), events: [{ attributes: batch('i-1', '').events[0]!.attributes, data: Buffer.from('{"a":1}') }] });
      expect(Buffer.isBuffer(due[1]!.events[0]!.data) && due[1]!.events[0]!.data.equals(Buffer.from([0, 255, 10]))).toBe(true);
      expect((await store.due(new Date('2026-11-25T10:00:05.000Z'), 2)).map((b) => b.id)).toEqual(['i-1', 'i-2']);
      expect((await store.due(new Date('2026-11-25T10:00:05.000Z'), 10, '2026-11-25T10:00:01.000Z')).map((b) => b.id)).toEqual(['i-2', 'i-3']);
      expect(await store.due(new Date('2026-11-25T10:00:00.000Z'), 10)).toEqual([]);
    });

    test('remove deletes the batches named, and ignores ids it does not hold', async () => {
      for (const [id, at] of [
        ['i-1', '2026-11-25T10:00:01.000Z'],
        ['i-2', '2026-11-25T10:00:02.000Z'],
        ['i-3', '2026-11-25T10:00:03.000Z'],
      ] as const)
        await store.add(batch(id, at));
      await store.remove([batch('i-1', '2026-11-25T10:00:01.000Z'), batch('i-3', '2026-11-25T10:00:03.000Z'), batch('i-unknown', '2026-11-25T10:00:04.000Z')]);
      expect((await store.due(new Date('2026-11-25T10:00:05.000Z'), 10)).map((b) => b.id)).toEqual(['i-2']);
      await store.remove([]);
      await store.remove([batch('i-2', '2026-11-25T10:00:02.000Z')]);
      expect(await store.due(new Date('2026-11-25T10:00:05.000Z'), 10)).toEqual([]);
    });

    test('progress is kept on the batch and comes back with it; on a batch removed meanwhile it writes nothing', async () => {
      await store.add(batch('i-1', '2026-11-25T10:00:01.000Z'));
      expect((await store.due(new Date('2026-11-25T10:00:05.000Z'), 10))[0]!.progress).toBeUndefined();
      await store.progress('i-1', 84);
      await store.progress('i-1', 168);
      const [kept] = await store.due(new Date('2026-11-25T10:00:05.000Z'), 10);
      expect(kept).toEqual({ ...batch('i-1', '2026-11-25T10:00:01.000Z'), progress: 168 });
      await store.remove([batch('i-1', '2026-11-25T10:00:01.000Z')]);
      await store.progress('i-1', 252);
      expect(await store.due(new Date('2026-11-25T10:00:05.000Z'), 10)).toEqual([]);
    });

    test('journaled: the ids in the journal or removed from it, never one only a record named; adopted records marked with their removal', async () => {
      // Ids as ingest makes them (domain/intake/intake.ts intakeBatchId): the acceptance time first.
      const id = (ms: number, r: string) => `i-${String(Date.parse('2026-11-25T10:00:00.000Z') + ms).padStart(13, '0')}-${r}`;
      const [kept, gone, never, later] = [id(1, 'a'), id(2, 'b'), id(3, 'c'), id(700_000, 'd')];
      await store.add(batch(kept, '2026-11-25T10:00:00.001Z'));
      await store.add(batch(gone, '2026-11-25T10:00:00.002Z'));
      await store.add(batch(later, '2026-11-25T10:11:40.000Z'));
      await store.remove([{ ...batch(gone, '2026-11-25T10:00:00.002Z'), adopted: ['dest-a.x1', 'dest-b.x1'] }, batch(later, '2026-11-25T10:11:40.000Z')]);
      expect(await store.journaled([kept, gone, never, later, 'not-an-intake-id'])).toEqual(new Set([kept, gone, later, 'not-an-intake-id']));
      expect(await store.adoptedBy(['dest-a.x1', 'dest-b.x1', 'dest-c.x1'])).toEqual(new Map([['dest-a.x1', gone], ['dest-b.x1', gone]]));
      // A batch that would adopt a record another adopted first stays, uncounted, for the next round; one beside it goes.
      const [second, third] = [id(4, 'e'), id(5, 'f')];
      await store.add(batch(second, '2026-11-25T10:00:00.004Z'));
      await store.add(batch(third, '2026-11-25T10:00:00.005Z'));
      await store.remove([{ ...batch(second, '2026-11-25T10:00:00.004Z'), adopted: ['dest-b.x1'] }, batch(third, '2026-11-25T10:00:00.005Z')]);
      expect((await store.due(new Date('2026-11-25T11:00:00.000Z'), 10)).map((b) => b.id)).toEqual([kept, second]);
      expect(await store.adoptedBy(['dest-b.x1'])).toEqual(new Map([['dest-b.x1', gone]]));
    });

    test("a batch is kept as it was added: events the caller adds to its list afterwards are not in it", async () => {
      const b = batch('i-1', '2026-11-25T10:00:01.000Z');
      await store.add(b);
      b.events.push(batch('i-x', '').events[0]!);
      const [stored] = await store.due(new Date('2026-11-25T10:00:05.000Z'), 10);
      expect(stored!.events.map((e) => e.attributes.id)).toEqual(['e-i-1']);
    });
  });
}
